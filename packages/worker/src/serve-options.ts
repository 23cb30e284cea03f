import type { WorkerConnectionOptions } from './worker-config.js'
import type { WorkerJob } from './worker-protocol.js'

/** What a handler gets besides its job. */
export interface JobContext {
  /** The job id. */
  readonly id: string
  readonly workerId: string
  /**
   * Aborted when the platform stops the job (cancelled, timed out, deleted by its ttl, or its
   * lease lost) or when a stopping worker's grace period is over. After that, nothing the
   * handler returns is reported.
   */
  readonly signal: AbortSignal
  /**
   * Posts a progress update (`/status` shows it as the output of the IN_PROGRESS job). Resolves
   * once the platform has answered for it, or a newer update has replaced it while it waited;
   * never rejects. Updates and the result are delivered in order, retried like the result.
   */
  progress(value: unknown): Promise<void>
}

/**
 * A job handler: returns (or resolves to) the job's output, or is an async (or sync) generator
 * whose yields are stream chunks. Throwing fails the job.
 */
export type Handler<Input = Record<string, unknown>> = (
  job: WorkerJob<Input>,
  context: JobContext,
) => unknown

export interface WorkerLogger {
  info(message: string, fields?: Record<string, unknown>): void
  warn(message: string, fields?: Record<string, unknown>): void
  error(message: string, fields?: Record<string, unknown>): void
}

export interface ServeOptions extends WorkerConnectionOptions {
  /**
   * Jobs in flight at once; above 1 free slots are filled with job-take-batch. A number, or
   * runpod-python's `concurrency_modifier`: a function given the current concurrency before each
   * take, returning the next (it starts at 1). Default: `PODYARD_WORKER_CONCURRENCY` from the
   * environment (what `podyard dev --concurrency` sets), else 1.
   */
  concurrency?: number | ((current: number) => number)
  /** Generator handlers: the final output is the array of all chunks (else `[]`). */
  returnAggregateOutput?: boolean
  /**
   * Recycle the worker after its first job: the result carries `stopPod: true` and the worker
   * stops (runpod-python's `refresh_worker`).
   */
  refreshWorker?: boolean
  /** How long `stop()` lets jobs in flight finish before aborting them. Default 30 000 ms. */
  gracePeriodMs?: number
  /** Where the worker logs; default warnings and errors on stderr; `null` for silence. */
  logger?: WorkerLogger | null
  /**
   * The program's arguments, read for `--test_input '{"input": ...}'` (run one job locally, with
   * no server, as runpod-python does). Default `process.argv.slice(2)`.
   */
  argv?: readonly string[]
}

export interface StopOptions {
  gracePeriodMs?: number
}

export interface WorkerHandle {
  readonly workerId: string
  /** Jobs being handled now. */
  readonly activeJobs: number
  /** Resolves once the worker has stopped (by `stop()`, or after its job with `refreshWorker`). */
  readonly done: Promise<void>
  /**
   * Graceful shutdown: stops taking jobs, lets the jobs in flight finish and deliver their
   * results within the grace period (undelivered ones are still retried meanwhile), aborts the
   * rest (what they have not delivered is dropped: the platform re-queues them when their lease
   * runs out), then resolves. Idempotent.
   */
  stop(options?: StopOptions): Promise<void>
}

export const DEFAULT_GRACE_PERIOD_MS = 30_000
/** After the grace period, how long aborted handlers get to settle before `stop()` resolves. */
export const ABORT_SETTLE_MS = 1_000

const stderrLogger: WorkerLogger = {
  info: () => {},
  warn: (message, fields) => writeLog('warn', message, fields),
  error: (message, fields) => writeLog('error', message, fields),
}
const silentLogger: WorkerLogger = { info: () => {}, warn: () => {}, error: () => {} }

function writeLog(level: string, message: string, fields?: Record<string, unknown>): void {
  process.stderr.write(
    `${JSON.stringify({ time: new Date().toISOString(), level, msg: message, ...fields })}\n`,
  )
}

export const isPositiveInteger = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= 1

/** `PODYARD_WORKER_CONCURRENCY`, when set; a value that is no positive integer is refused. */
function concurrencyFromEnv(env: Record<string, string | undefined>): number {
  const raw = env.PODYARD_WORKER_CONCURRENCY
  if (raw === undefined || raw.trim() === '') return 1
  const value = Number(raw)
  if (!isPositiveInteger(value)) {
    throw new RangeError(`PODYARD_WORKER_CONCURRENCY must be a positive integer, not ${raw}`)
  }
  return value
}

/** The logger `options` name: the default writes warnings and errors to stderr. */
export function loggerOf(options: Pick<ServeOptions, 'logger'>): WorkerLogger {
  return options.logger === null ? silentLogger : (options.logger ?? stderrLogger)
}

/**
 * The concurrency a worker starts with, and the function that changes it before each take
 * (runpod-python's `concurrency_modifier`: it then starts at 1).
 */
export function initialConcurrency(options: Pick<ServeOptions, 'concurrency' | 'env'>): {
  concurrency: number
  modifier?: (current: number) => number
} {
  const concurrency = options.concurrency ?? concurrencyFromEnv(options.env ?? process.env)
  if (typeof concurrency === 'function') return { concurrency: 1, modifier: concurrency }
  if (!isPositiveInteger(concurrency)) {
    throw new RangeError(`concurrency must be a positive integer, not ${concurrency}`)
  }
  return { concurrency }
}
