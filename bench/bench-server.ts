/**
 * A podyard server for the fleet and containment benches: bench/fleet/fleet-server.ts as a
 * child process in a fresh data directory (its working directory), on a free port, with the
 * bench's admin key, warnings-only logs into `server.log` there, and REST quotas out of the way
 * (600 requests a minute per account would cap a bench at 10 a second).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { servingUrl } from './jobs/bench-server.js'

export const BENCH_ADMIN_KEY = 'pyd_bench-admin-key-0123456789abcdef'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

export interface BenchServer {
  child: ChildProcess
  pid: number
  url: string
  dataDir: string
  logFile: string
  /** SIGTERM, then the data directory is removed unless `keep`. */
  stop(): Promise<void>
}

export interface BenchServerOptions {
  /** Names the data directory: `podyard-bench-<name>-XXXXXX` in the temp directory. */
  name: string
  /** Environment on top of the defaults, given the data directory (to name files in it). */
  env?: (dataDir: string) => Record<string, string>
  /** Arguments of fleet-server.ts (`--record`). */
  args?: string[]
  /** Node's own arguments (`--cpu-prof`). */
  nodeArgs?: string[]
  /** Keep the data directory after stop(). */
  keep?: boolean
}

export async function startBenchServer(options: BenchServerOptions): Promise<BenchServer> {
  const dataDir = mkdtempSync(path.join(tmpdir(), `podyard-bench-${options.name}-`))
  const logFile = path.join(dataDir, 'server.log')
  const logOutput = openSync(logFile, 'w')
  const child = spawn(
    process.execPath,
    [
      ...(options.nodeArgs ?? []),
      // The server runs in the data dir, where `tsx` alone would not resolve.
      '--import',
      import.meta.resolve('tsx'),
      // PODYARD_BENCH_SERVER_ROOT: another checkout's server (an A/B against older code).
      path.join(process.env.PODYARD_BENCH_SERVER_ROOT ?? root, 'bench', 'fleet', 'fleet-server.ts'),
      ...(options.args ?? []),
    ],
    {
      cwd: dataDir,
      env: {
        ...process.env,
        PODYARD_DATA_DIR: dataDir,
        PODYARD_PORT: '0',
        PODYARD_ADMIN_KEY: BENCH_ADMIN_KEY,
        PODYARD_LOG_LEVEL: 'warn',
        PODYARD_RATELIMIT_MINUTE: '1000000000',
        PODYARD_RATELIMIT_HOUR: '1000000000',
        PODYARD_RATELIMIT_DAY: '1000000000',
        ...options.env?.(dataDir),
      },
      stdio: ['ignore', logOutput, logOutput],
    },
  )
  closeSync(logOutput)
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const url = await servingUrl(child, logFile)
  return {
    child,
    pid: child.pid!,
    url,
    dataDir,
    logFile,
    stop: async () => {
      child.kill('SIGTERM')
      await exited
      if (!options.keep) rmSync(dataDir, { recursive: true, force: true })
    },
  }
}
