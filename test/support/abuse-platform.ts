import { execFileSync, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { setPriority, tmpdir } from 'node:os'
import path from 'node:path'
import { stringify } from 'yaml'
import { startServe } from './cli.js'
import { json } from './http.js'
import { callPlatform, TEST_ADMIN_KEY, type CallInit } from './platform.js'
import { removeDataDir } from './processes.js'

/**
 * The abuse suite's platform (docs/security.md, "The abuse suite"): `podyard serve` as a real
 * child process, so that its memory (VmRSS) is the server's alone, with a watcher that asks
 * `/readyz` and reads that memory while a tenant attacks.
 */

/** The server's resident memory may not pass this while it is attacked (docs/security.md). */
export const SERVER_RSS_BOUND_MIB = 400
/** Every `/readyz` answer during an attack comes within this. */
export const READYZ_BOUND_MS = 100
/**
 * The nice value of the server and of the suite's own process (its watcher): both ahead of
 * whatever else a shared CI machine runs, as an operator gives the platform priority over the
 * machine's other work (systemd's `Nice=`). The server's workloads inherit it: they compete
 * with the platform on equal terms, held only by their own limits.
 */
export const PLATFORM_NICE = -20
/** What the watcher waits between two samples. */
const SAMPLE_EVERY_MS = 100
/** The watcher's bound in samples: about 5 minutes, longer than any one attack may take. */
const MAX_SAMPLES = 3000

export interface AbusePlatform {
  url: string
  pid: number
  /** The server's data directory. */
  dataDir: string
  child: ChildProcess
  /** As the admin unless `init.key` says otherwise. */
  call(pathAndQuery: string, init?: CallInit): Promise<Response>
  /** A new ordinary account (role user), made by the admin over HTTP; its API key. */
  memberKey(email: string): Promise<string>
  /** SIGTERMs the server, then removes its workloads' processes, mounts and directory. */
  close(): Promise<void>
}

/**
 * Starts `podyard serve` (dist/, as the bin runs) on a free port with `config` (podyard.yaml's
 * keys) and, when given, a fleet file of `fleet`'s text.
 */
export async function startAbusePlatform(
  config: Record<string, unknown>,
  fleet?: string,
): Promise<AbusePlatform> {
  const dir = mkdtempSync(path.join(tmpdir(), 'podyard-abuse-'))
  const dataDir = path.join(dir, 'data')
  mkdirSync(dataDir)
  const configFile = path.join(dir, 'podyard.yaml')
  writeFileSync(configFile, stringify(config))
  const flags = ['--port', '0', '--data-dir', dataDir, '--log-level', 'warn']
  if (fleet !== undefined) {
    writeFileSync(path.join(dir, 'fleet.yaml'), fleet)
    flags.push('--fleet', path.join(dir, 'fleet.yaml'))
  }
  const server = await startServe(flags, {
    PODYARD_ADMIN_KEY: TEST_ADMIN_KEY,
    PODYARD_CONFIG: configFile,
  })
  prioritise(server.child.pid!)
  prioritise(process.pid)
  const call = (p: string, init?: CallInit) => callPlatform(server.url, p, init)
  return {
    url: server.url,
    pid: server.child.pid!,
    dataDir,
    child: server.child,
    call,
    memberKey: async (email) => {
      const created = await json<{ apiKey: { key: string } }>(
        await call('/v2/admin/accounts', { method: 'POST', json: { email } }),
        201,
      )
      return created.apiKey.key
    },
    close: async () => {
      if (server.child.exitCode === null && server.child.signalCode === null) {
        server.child.kill('SIGTERM')
        await server.exited
      }
      removeDataDir(dir)
    },
  }
}

/** Gives every thread of process `pid` the nice value PLATFORM_NICE (threads made later inherit it). */
function prioritise(pid: number): void {
  for (const thread of readdirSync(`/proc/${pid}/task`)) setPriority(Number(thread), PLATFORM_NICE)
}

/** The resident memory of process `pid` in MiB (VmRSS of /proc/<pid>/status). */
export function rssMib(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  if (!match) throw new Error(`no VmRSS for process ${pid}`)
  return Number(match[1]) / 1024
}

export interface Watched {
  samples: number
  /** The slowest `/readyz` answer, in ms. */
  readyzMaxMs: number
  /** Answers other than 200, and failed requests, as `status` or the error's message. */
  readyzFailures: string[]
  /** The server's highest VmRSS seen, in MiB. */
  rssMaxMib: number
  /**
   * The server's own longest event-loop delay while watched, in ms (prom-client's
   * `nodejs_eventloop_lag_max_seconds` on /metrics, which restarts at each read): what of the
   * slowest answer the server's own work explains.
   */
  eventLoopMaxMs: number
}

/** nodejs_eventloop_lag_max_seconds of the server's /metrics (read with the admin's key), in ms. */
async function eventLoopMaxMs(url: string): Promise<number> {
  const text = await (await callPlatform(url, '/metrics')).text()
  const match = /^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text)
  if (!match) throw new Error('no nodejs_eventloop_lag_max_seconds on /metrics')
  return Number(match[1]) * 1000
}

/**
 * Asks `/readyz` and reads the server's VmRSS every 100 ms (at most 3000 times) until `stop`;
 * `stop` resolves with the worst of what it saw, and the server's own event-loop delay.
 */
export async function watchPlatform(platform: Pick<AbusePlatform, 'url' | 'pid'>): Promise<{
  stop(): Promise<Watched>
}> {
  // Read once to start the event loop's record afresh.
  await eventLoopMaxMs(platform.url)
  const seen: Watched = {
    samples: 0,
    readyzMaxMs: 0,
    readyzFailures: [],
    rssMaxMib: 0,
    eventLoopMaxMs: 0,
  }
  let watching = true
  const loop = (async () => {
    while (watching && seen.samples < MAX_SAMPLES) {
      const asked = performance.now()
      try {
        const answer = await fetch(`${platform.url}/readyz`, {
          signal: AbortSignal.timeout(5_000),
        })
        await answer.arrayBuffer()
        if (answer.status !== 200) seen.readyzFailures.push(String(answer.status))
      } catch (error) {
        seen.readyzFailures.push((error as Error).message)
      }
      seen.readyzMaxMs = Math.max(seen.readyzMaxMs, performance.now() - asked)
      seen.rssMaxMib = Math.max(seen.rssMaxMib, rssMib(platform.pid))
      seen.samples += 1
      await new Promise((resolve) => setTimeout(resolve, SAMPLE_EVERY_MS))
    }
  })()
  return {
    stop: async () => {
      watching = false
      await loop
      seen.eventLoopMaxMs = await eventLoopMaxMs(platform.url)
      return seen
    },
  }
}

/**
 * Bytes the files under `dir` take on the host's disk, leaving out mounted file systems and the
 * workloads' disk images (`*.ext4`: each bounded by its rented size, checked on its own).
 */
export function dataDirBytes(dir: string): number {
  return Number(
    execFileSync('du', ['-sxB1', '--exclude=*.ext4', dir], { encoding: 'utf8' }).split('\t')[0],
  )
}
