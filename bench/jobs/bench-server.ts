/**
 * What the job benches share (bench/README.md): a `podyard serve` child process on a fresh
 * SQLite data dir or PostgreSQL database, a keep-alive HTTP client, endpoints, and the
 * measurements (percentiles, CPU time and RSS of a process from /proc).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import {
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  writeFileSync,
} from 'node:fs'
import http from 'node:http'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import pg from 'pg'

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
export const ADMIN_KEY = 'pyd_bench-admin-key-0123456789abcdef'

export function option(name: string, fallback: string): string {
  const prefix = `--${name}=`
  const found = process.argv.find((arg) => arg.startsWith(prefix))
  return found ? found.slice(prefix.length) : fallback
}
export const flag = (name: string) => process.argv.includes(`--${name}`)

export const now = () => performance.timeOrigin + performance.now()
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * The URL a `podyard serve` child prints once it serves, read from its log file (a pipe this
 * busy process drains late would block the server); rejects with the log when it exits first.
 */
export function servingUrl(child: ChildProcess, logFile: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const check = setInterval(() => {
      const match = /is serving at (\S+)/.exec(readFileSync(logFile, 'utf8'))
      if (match) {
        clearInterval(check)
        resolve(match[1]!)
      }
    }, 50)
    child.once('exit', (code) => {
      clearInterval(check)
      reject(new Error(`the server exited with ${code}: ${readFileSync(logFile, 'utf8')}`))
    })
  })
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[index]!
}
export const fmt = (ms: number) => `${ms.toFixed(2)} ms`

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
export function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return Number.NaN
  }
}

/** Resident memory of a process in MB (VmRSS), or NaN. */
export function rssMb(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match ? Number(match[1]) / 1024 : Number.NaN
  } catch {
    return Number.NaN
  }
}

export const agent = new http.Agent({ keepAlive: true })

export function request(
  method: string,
  url: string,
  body?: unknown,
  apiKey = ADMIN_KEY,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body)
    const req = http.request(url, {
      method,
      agent,
      headers: {
        authorization: `Bearer ${apiKey}`,
        ...(payload === undefined
          ? {}
          : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
      },
    })
    req.on('error', reject)
    req.on('response', (res) => {
      const parts: Buffer[] = []
      res.on('data', (part: Buffer) => parts.push(part))
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString('utf8') }),
      )
      res.on('error', reject)
    })
    req.end(payload)
  })
}

export async function json<T>(
  method: string,
  url: string,
  body?: unknown,
  expected = 200,
  apiKey = ADMIN_KEY,
): Promise<T> {
  const response = await request(method, url, body, apiKey)
  if (response.status !== expected) {
    throw new Error(`${method} ${url} answered ${response.status}: ${response.text.slice(0, 300)}`)
  }
  return JSON.parse(response.text) as T
}

export interface BenchServer {
  child: ChildProcess
  url: string
  dataDir: string
  /** The store: `sqlite` (dataDir/podyard.db) or the PostgreSQL URL. */
  storeUrl: string | undefined
  stop(): Promise<void>
}

export interface ServerOptions {
  dataDir: string
  /** A PostgreSQL URL; SQLite in dataDir without it. */
  storeUrl?: string
  logLevel?: string
  cpuProf?: boolean
  /** Extra config (merged over the bench's job limits). */
  config?: Record<string, unknown>
  env?: Record<string, string>
}

/**
 * A config file in `dir` whose job API limits do not cap the measurements (spec: 1000 /run per
 * 10 s, 100 /health per endpoint), with `extra` over it; its path.
 */
export function writeBenchConfig(dir: string, extra: Record<string, unknown> = {}): string {
  const file = path.join(dir, 'bench.yaml')
  const unlimited = { rate: 100_000_000, concurrency: 100_000 }
  const operations = { run: unlimited, runsync: unlimited, status: unlimited, health: unlimited }
  writeFileSync(file, JSON.stringify({ jobLimits: { operations }, ...extra }))
  return file
}

export async function startServer(options: ServerOptions): Promise<BenchServer> {
  const { dataDir } = options
  const configFile = writeBenchConfig(dataDir, options.config)
  const logFile = path.join(dataDir, 'server.log')
  const logOutput = openSync(logFile, 'w')
  const profileDir = path.join(root, 'bench', 'jobs', 'profiles')
  if (options.cpuProf) mkdirSync(profileDir, { recursive: true })
  const child = spawn(
    process.execPath,
    [
      ...(options.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
      // PODYARD_BENCH_SERVER_ROOT: another build's checkout (an A/B against older code).
      path.join(process.env.PODYARD_BENCH_SERVER_ROOT ?? root, 'bin', 'podyard.js'),
      'serve',
    ],
    {
      cwd: dataDir,
      env: {
        ...process.env,
        PODYARD_DATA_DIR: dataDir,
        PODYARD_PORT: '0',
        PODYARD_ADMIN_KEY: ADMIN_KEY,
        PODYARD_CONFIG: configFile,
        PODYARD_LOG_LEVEL: options.logLevel ?? 'info',
        ...(options.storeUrl ? { PODYARD_STORE_URL: options.storeUrl } : {}),
        ...options.env,
      },
      // Its log goes to a file: a pipe this busy process drains late would block the server.
      stdio: ['ignore', logOutput, 'inherit'],
    },
  )
  closeSync(logOutput)
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const url = await servingUrl(child, logFile)
  return {
    child,
    url,
    dataDir,
    storeUrl: options.storeUrl,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM')
      await exited
    },
  }
}

/** An endpoint; by default one the platform starts no worker for (the bench runs its own). */
export async function createEndpoint(
  server: BenchServer,
  name: string,
  overrides: Record<string, unknown> = {},
): Promise<string> {
  const created = await json<{ id: string }>(
    'POST',
    `${server.url}/v2/serverless`,
    {
      name,
      image: 'bench:1',
      gpu: { pools: ['ADA_24'] },
      workers: { min: 0, max: 0 },
      ...overrides,
    },
    201,
  )
  return created.id
}

export async function workerKeyOf(server: BenchServer, endpointId: string): Promise<string> {
  const { workerKey } = await json<{ workerKey: string }>(
    'GET',
    `${server.url}/v2/serverless/${endpointId}/worker-key`,
  )
  return workerKey
}

/**
 * Times `count` sequential `POST /runsync` calls of `body` on the endpoint (after `warmup` not
 * counted); the sorted durations in ms.
 */
export async function timeRunsync(
  base: string,
  count: number,
  warmup: number,
  body: unknown = { input: {} },
  apiKey = ADMIN_KEY,
): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await json('POST', `${base}/runsync`, body, 200, apiKey)
  const durations: number[] = []
  for (let i = 0; i < count; i++) {
    const t0 = performance.now()
    const result = await json<{ status: string }>('POST', `${base}/runsync`, body, 200, apiKey)
    durations.push(performance.now() - t0)
    if (result.status !== 'COMPLETED') throw new Error(`runsync ended ${JSON.stringify(result)}`)
  }
  return durations.sort((a, b) => a - b)
}

/** A fresh PostgreSQL database next to the one `adminUrl` names, and how to drop it. */
export async function freshDatabase(
  adminUrl: string,
): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `podyard_bench_${Math.random().toString(16).slice(2, 10)}`
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: adminUrl })
    await client.connect()
    try {
      await client.query(statement)
    } finally {
      await client.end()
    }
  }
  await admin(`create database ${name}`)
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return { url: url.toString(), drop: () => admin(`drop database if exists ${name} with (force)`) }
}

/** The machine's load averages (1, 5, 15 minutes) from /proc/loadavg. */
export function loadAverage(): string {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
  } catch {
    return 'unknown'
  }
}

/** Processes of workers the server started in `dataDir` (their cwd is under its workers/). */
function workerProcesses(dataDir: string): number[] {
  const prefix = path.join(dataDir, 'workers') + path.sep
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readlinkSync(`/proc/${entry}/cwd`).startsWith(prefix)) pids.push(Number(entry))
    } catch {
      // gone, or not ours to read
    }
  }
  return pids
}

/**
 * Waits (up to `timeoutMs`) until no worker the server started in `dataDir` runs, then ends
 * those that still do (a server stops without stopping its workers: a restart adopts them).
 */
export async function reapWorkers(dataDir: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (workerProcesses(dataDir).length > 0 && Date.now() < deadline) await sleep(100)
  for (const pid of workerProcesses(dataDir)) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // already gone
    }
  }
}
