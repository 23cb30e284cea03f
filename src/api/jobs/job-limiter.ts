import {
  BASE_OPERATION_LIMITS,
  DEFAULT_PER_WORKER_CONCURRENCY,
  DEFAULT_PER_WORKER_RATE,
  effectiveLimit,
  operationPath,
  OPERATION_WINDOW_MS,
  type LimitedOperation,
  type OperationLimit,
  type OperationUsage,
  type PerWorkerAllowance,
} from '../../domain/serverless/operation-limits.js'
import { AppError } from '../../shared/app-error.js'
import type { Clock } from '../../shared/clock.js'

export interface JobLimiterOptions {
  clock: Clock
  perWorker?: Partial<PerWorkerAllowance>
  /** Replacements of the spec's base limits, per operation (config `jobLimits.operations`). */
  overrides?: Partial<Record<LimitedOperation, Partial<OperationLimit>>>
}

export type AdmitDecision =
  | {
      allowed: true
      /** Ends the request's turn in flight; call it once the request is answered. */
      release: () => void
    }
  | {
      allowed: false
      kind: 'rate' | 'concurrency'
      operation: LimitedOperation
      /** The effective limit that was reached. */
      limit: number
      /** Whole seconds after which a retry can succeed (at least 1). */
      retryAfterSeconds: number
    }

interface Counter {
  windowStart: number
  count: number
  inFlight: number
}

const noop = () => {}

const counterKey = (endpointId: string, operation: string) => `${endpointId}\u0000${operation}`

/**
 * Per endpoint and operation: requests per fixed 10-second window (aligned to the clock, like
 * the REST limiter's windows) and requests in flight. A refused request does not count. Counters
 * live in this process, so admitting a request costs no database round trip; with several
 * replicas (docs/production.md) a sync (src/store/shared-job-limits.ts) publishes them about
 * every second and hands back the other replicas' (`usage`, `setOthers`), and a request is
 * admitted against the other replicas' counts as last synced plus this replica's exact ones.
 */
export class JobLimiter {
  private readonly counters = new Map<string, Counter>()
  /** The other replicas' use, summed, as of the last sync. */
  private others = new Map<string, { windowStart: number; count: number; inFlight: number }>()
  private readonly perWorker: PerWorkerAllowance
  private readonly limits: Record<LimitedOperation, OperationLimit>
  private lastSweep = 0

  constructor(private readonly options: JobLimiterOptions) {
    this.perWorker = {
      rate: options.perWorker?.rate ?? DEFAULT_PER_WORKER_RATE,
      concurrency: options.perWorker?.concurrency ?? DEFAULT_PER_WORKER_CONCURRENCY,
    }
    const limits = { ...BASE_OPERATION_LIMITS }
    for (const [operation, override] of Object.entries(options.overrides ?? {})) {
      const name = operation as LimitedOperation
      limits[name] = { ...limits[name], ...override }
    }
    this.limits = limits
  }

  /** The base limit of an operation, overrides applied. */
  baseLimit(operation: LimitedOperation): OperationLimit {
    return this.limits[operation]
  }

  admit(endpointId: string, operation: LimitedOperation, runningWorkers: number): AdmitDecision {
    const now = this.options.clock.now().getTime()
    this.sweep(now)
    const limit = effectiveLimit(this.limits[operation], runningWorkers, this.perWorker)
    const key = counterKey(endpointId, operation)
    const windowStart = Math.floor(now / OPERATION_WINDOW_MS) * OPERATION_WINDOW_MS
    let counter = this.counters.get(key)
    if (counter === undefined) {
      counter = { windowStart, count: 0, inFlight: 0 }
      this.counters.set(key, counter)
    }
    if (counter.windowStart !== windowStart) {
      counter.windowStart = windowStart
      counter.count = 0
    }
    const other = this.others.get(key)
    const othersCount = other !== undefined && other.windowStart === windowStart ? other.count : 0
    const othersInFlight = other?.inFlight ?? 0
    if (counter.count + othersCount >= limit.rate) {
      return {
        allowed: false,
        kind: 'rate',
        operation,
        limit: limit.rate,
        retryAfterSeconds: Math.max(1, Math.ceil((windowStart + OPERATION_WINDOW_MS - now) / 1000)),
      }
    }
    if (limit.concurrency !== undefined && counter.inFlight + othersInFlight >= limit.concurrency) {
      // Nobody knows when a request in flight ends; one second is a fair first back-off.
      return {
        allowed: false,
        kind: 'concurrency',
        operation,
        limit: limit.concurrency,
        retryAfterSeconds: 1,
      }
    }
    counter.count += 1
    if (limit.concurrency === undefined) return { allowed: true, release: noop }
    counter.inFlight += 1
    const held = counter
    let released = false
    return {
      allowed: true,
      release: () => {
        if (released) return
        released = true
        held.inFlight -= 1
      },
    }
  }

  /** This replica's counters (for the sync); those of past windows count nothing but in flight. */
  usage(): OperationUsage[] {
    const current =
      Math.floor(this.options.clock.now().getTime() / OPERATION_WINDOW_MS) * OPERATION_WINDOW_MS
    const out: OperationUsage[] = []
    for (const [key, counter] of this.counters) {
      const [endpointId, operation] = key.split('\u0000') as [string, LimitedOperation]
      const count = counter.windowStart === current ? counter.count : 0
      out.push({ endpointId, operation, windowStart: current, count, inFlight: counter.inFlight })
    }
    return out
  }

  /** The other replicas' use as last read (replaces what was known; rows of one key are summed). */
  setOthers(usage: OperationUsage[]): void {
    const next = new Map<string, { windowStart: number; count: number; inFlight: number }>()
    for (const row of usage) {
      const key = counterKey(row.endpointId, row.operation)
      const known = next.get(key)
      if (known === undefined) {
        next.set(key, { windowStart: row.windowStart, count: row.count, inFlight: row.inFlight })
        continue
      }
      // Replicas may straddle a window boundary: the later window's counts are the current ones.
      if (row.windowStart > known.windowStart) {
        known.windowStart = row.windowStart
        known.count = row.count
      } else if (row.windowStart === known.windowStart) known.count += row.count
      known.inFlight += row.inFlight
    }
    this.others = next
  }

  /** Forgets idle counters of past windows, so the map does not grow without bound. */
  private sweep(now: number): void {
    if (now - this.lastSweep < OPERATION_WINDOW_MS) return
    this.lastSweep = now
    const current = Math.floor(now / OPERATION_WINDOW_MS) * OPERATION_WINDOW_MS
    for (const [key, counter] of this.counters) {
      if (counter.inFlight === 0 && counter.windowStart < current) this.counters.delete(key)
    }
  }
}

/** The 429 for a refusal: the detail names the operation, the limit and the window. */
export function limitExceeded(
  endpointId: string,
  decision: Extract<AdmitDecision, { allowed: false }>,
): AppError {
  const path = operationPath(decision.operation)
  const detail =
    decision.kind === 'rate'
      ? `rate limit exceeded for ${path} of endpoint ${endpointId}: ${decision.limit} requests per ${OPERATION_WINDOW_MS / 1000} s window; retry in ${decision.retryAfterSeconds} s`
      : `concurrency limit exceeded for ${path} of endpoint ${endpointId}: ${decision.limit} requests in flight at once; retry in ${decision.retryAfterSeconds} s`
  return new AppError('RATE_LIMITED', detail, { retryAfterSeconds: decision.retryAfterSeconds })
}
