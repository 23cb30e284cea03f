/**
 * The throughput part's anchors, measured beside podyard in the same run (bench/README.md,
 * "bench/jobs"): graphile-worker on a fresh database of the same PostgreSQL server (unbatched,
 * and batched beside it), and BullMQ on a redis-server this bench starts on a loopback port in a
 * temporary directory. Each round of an anchor is a child process of its own
 * (anchor-graphile-worker.ts, anchor-bullmq.ts) holding the submitters and the worker, so that
 * its CPU is its own.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Redis } from 'ioredis'
import { freshDatabase, root, sleep } from './bench-server.js'
import type { AnchorResult, AnchorSettings } from './anchor-load.js'

export type { AnchorResult }

/** The installed version of a package of node_modules. */
export function packageVersion(name: string): string {
  const file = path.join(root, 'node_modules', name, 'package.json')
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version
}

async function runAnchor(script: string, settings: AnchorSettings): Promise<AnchorResult> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(root, 'bench', 'jobs', script)],
    {
      cwd: root,
      env: { ...process.env, BENCH_ANCHOR: JSON.stringify(settings) },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  )
  let output = ''
  child.stdout!.on('data', (data: Buffer) => {
    output += data.toString()
  })
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  const match = /^result (.*)$/m.exec(output)
  if (code !== 0 || !match) throw new Error(`${script} exited with ${code}: ${output.slice(-500)}`)
  return JSON.parse(match[1]!) as AnchorResult
}

/** One round of graphile-worker on a fresh database next to the one `adminUrl` names. */
export async function graphileWorkerRound(
  adminUrl: string,
  settings: Omit<AnchorSettings, 'url'>,
): Promise<AnchorResult> {
  const database = await freshDatabase(adminUrl)
  try {
    return await runAnchor('anchor-graphile-worker.ts', { ...settings, url: database.url })
  } finally {
    await database.drop()
  }
}

/** One round of BullMQ against `redis`, whose keys are wiped afterwards. */
export async function bullmqRound(
  redis: RedisServer,
  settings: Omit<AnchorSettings, 'url'>,
): Promise<AnchorResult> {
  const result = await runAnchor('anchor-bullmq.ts', {
    ...settings,
    url: redis.url,
    storePid: redis.child.pid,
  })
  await redis.flush()
  return result
}

async function freePort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as net.AddressInfo).port
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** The version `redis-server --version` reports, or undefined when it is not on PATH. */
export function redisServerVersion(): string | undefined {
  const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' })
  if (probe.error || probe.status !== 0) return undefined
  return /v=(\S+)/.exec(probe.stdout)?.[1] ?? probe.stdout.trim()
}

/**
 * A redis-server of this bench: Redis's built-in defaults (no config file: RDB snapshots into
 * its temporary directory, no append-only file) on a free loopback port.
 */
export class RedisServer {
  private constructor(
    readonly child: ChildProcess,
    readonly url: string,
    private readonly dir: string,
  ) {}

  static async start(): Promise<RedisServer> {
    const dir = mkdtempSync(path.join(tmpdir(), 'podyard-bench-redis-'))
    const port = await freePort()
    const logFile = path.join(dir, 'redis.log')
    const child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--logfile', logFile],
      { stdio: 'ignore' },
    )
    const log = () => {
      try {
        return readFileSync(logFile, 'utf8')
      } catch {
        return ''
      }
    }
    const deadline = Date.now() + 10_000
    while (!log().includes('Ready to accept connections')) {
      if (child.exitCode !== null || Date.now() > deadline) {
        child.kill('SIGKILL')
        rmSync(dir, { recursive: true, force: true })
        throw new Error(`redis-server did not start: ${log().slice(-500)}`)
      }
      await sleep(20)
    }
    return new RedisServer(child, `redis://127.0.0.1:${port}`, dir)
  }

  /** Empties the server between rounds, so that each round starts from the same state. */
  async flush(): Promise<void> {
    const client = new Redis(this.url)
    try {
      await client.flushall()
    } finally {
      client.disconnect()
    }
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null) {
      const exited = new Promise((resolve) => this.child.once('exit', resolve))
      this.child.kill('SIGTERM')
      await exited
    }
    rmSync(this.dir, { recursive: true, force: true })
  }
}

export interface AnchorOptions {
  /** The PostgreSQL server podyard's `postgres` store runs on (its role may create databases). */
  postgresAdminUrl: string | undefined
  /**
   * Which anchors to measure (`graphile-worker`, `graphile-worker-batched`, `bullmq`); the others
   * are quoted, or (graphile-worker batched, which has no quoted figure) left out.
   */
  enabled: Set<string>
  settings: Omit<AnchorSettings, 'url'>
}

/**
 * The anchor of one store's throughput: measured round by round when it can run here, else its
 * figure quoted from an earlier run on this machine, saying why it was not measured.
 */
export interface ThroughputAnchor {
  name: string
  quoted: { name: string; rate: number }
  /** Why it is not measured (then `round` is not called). */
  notMeasured: string | undefined
  round(): Promise<AnchorResult>
  close(): Promise<void>
  /**
   * Another configuration of the same system, measured after each round of the anchor and
   * printed beside it with no target (graphile-worker batched beside unbatched); `notMeasured`
   * says why it is not.
   */
  beside?: {
    /** Short, for the figure's row (`name` says its settings). */
    label: string
    name: string
    notMeasured: string | undefined
    round(): Promise<AnchorResult>
  }
}

export async function openThroughputAnchor(
  store: string,
  options: AnchorOptions,
): Promise<ThroughputAnchor> {
  const { settings } = options
  const closed = async () => {}
  if (store === 'postgres') {
    const version = packageVersion('graphile-worker')
    return {
      name: `graphile-worker ${version} unbatched, same PostgreSQL`,
      // Measured here (bench/README.md, round 2's latest run, a quiet machine, pool 10); the
      // 3 800 this quoted before came from an issue's text, never from a run on this machine.
      quoted: { name: 'graphile-worker 0.17 unbatched, PostgreSQL', rate: 1_033 },
      notMeasured: options.enabled.has('graphile-worker') ? undefined : 'not in --anchors',
      round: () => graphileWorkerRound(options.postgresAdminUrl!, settings),
      close: closed,
      beside: {
        label: 'graphile-worker batched',
        name:
          `graphile-worker ${version} batched (localQueue 500, completions batched, addJobs; ` +
          "its docs' throughput settings), same PostgreSQL",
        notMeasured: options.enabled.has('graphile-worker-batched')
          ? undefined
          : 'not in --anchors',
        round: () => graphileWorkerRound(options.postgresAdminUrl!, { ...settings, batched: true }),
      },
    }
  }
  const quoted = { name: 'BullMQ + Redis', rate: 19_500 }
  const redisVersion = redisServerVersion()
  const name = `BullMQ ${packageVersion('bullmq')} + Redis ${redisVersion ?? '(none)'}`
  const unavailable = (notMeasured: string): ThroughputAnchor => ({
    name,
    quoted,
    notMeasured,
    round: () => Promise.reject(new Error(notMeasured)),
    close: closed,
  })
  if (!options.enabled.has('bullmq')) return unavailable('not in --anchors')
  if (redisVersion === undefined) {
    return unavailable('redis-server not found (apt-get install redis-server)')
  }
  const redis = await RedisServer.start()
  return {
    name,
    quoted,
    notMeasured: undefined,
    round: () => bullmqRound(redis, settings),
    close: () => redis.stop(),
  }
}
