/**
 * Serverless limits per endpoint and operation (spec "Limits > Serverless"; docs/job-api.md
 * "Limits"): requests per 10-second window and requests in flight. The effective limit is the
 * higher of the base and running workers x a per-worker allowance.
 */

/** The spec's rate-limit window. */
export const OPERATION_WINDOW_MS = 10_000

export const LIMITED_OPERATIONS = [
  'runsync',
  'run',
  'status',
  'stream',
  'cancel',
  'purge-queue',
  'openai',
  'requests',
  'health',
] as const
export type LimitedOperation = (typeof LIMITED_OPERATIONS)[number]

export interface OperationLimit {
  /** Requests per OPERATION_WINDOW_MS. */
  rate: number
  /** Requests in flight at once; undefined: no concurrency limit. */
  concurrency?: number
}

/**
 * The spec's table. `/status-sync` counts as `status`; `/openai/*` is one operation. `/retry`
 * and `/health` have no limit given: `/retry` has none; `/health`'s is ours, so
 * that callers of one endpoint's health cannot crowd out its other operations. 100 per 10 s is
 * a dashboard per second, and then some; a health check needs no more than a few at once.
 */
export const BASE_OPERATION_LIMITS: Readonly<Record<LimitedOperation, OperationLimit>> = {
  runsync: { rate: 2000, concurrency: 400 },
  run: { rate: 1000, concurrency: 200 },
  status: { rate: 2000, concurrency: 400 },
  stream: { rate: 2000, concurrency: 400 },
  cancel: { rate: 100, concurrency: 20 },
  'purge-queue': { rate: 2 },
  openai: { rate: 2000, concurrency: 400 },
  requests: { rate: 10, concurrency: 2 },
  health: { rate: 100, concurrency: 10 },
}

/** Requests per window each running worker adds to an operation's rate (`jobLimits.perWorkerRate`). */
export const DEFAULT_PER_WORKER_RATE = 10
/** Requests in flight each running worker adds (`jobLimits.perWorkerConcurrency`). */
export const DEFAULT_PER_WORKER_CONCURRENCY = 2

/** How the per-worker allowance scales the limits. */
export interface PerWorkerAllowance {
  rate: number
  concurrency: number
}

/**
 * max(base, runningWorkers x per-worker allowance), for the rate and for the concurrency (an
 * operation without a concurrency limit keeps none).
 */
export function effectiveLimit(
  base: OperationLimit,
  runningWorkers: number,
  perWorker: PerWorkerAllowance,
): OperationLimit {
  const workers = Math.max(0, Math.floor(runningWorkers))
  return {
    rate: Math.max(base.rate, workers * perWorker.rate),
    ...(base.concurrency === undefined
      ? {}
      : { concurrency: Math.max(base.concurrency, workers * perWorker.concurrency) }),
  }
}

/** The path an operation is called by, for messages: `/purge-queue`, `/openai/*`. */
export function operationPath(operation: LimitedOperation): string {
  return operation === 'openai' ? '/openai/*' : `/${operation}`
}

/**
 * One replica's use of an operation of an endpoint (docs/production.md, "Several replicas"):
 * its requests in the window starting at `windowStart` (epoch ms, a multiple of
 * OPERATION_WINDOW_MS) and its requests in flight now.
 */
export interface OperationUsage {
  endpointId: string
  operation: LimitedOperation
  windowStart: number
  count: number
  inFlight: number
}
