import { backoffDelayMs, retryAfterMs } from './backoff.js'
import { errorMessage } from './errors.js'
import type { HttpResponse } from './worker-http.js'

/**
 * How the platform answered a report it took (HTTP 200): applied (`ok`), or `ignored` because
 * the job is no longer this worker's (cancelled, timed out, deleted, re-taken by another) or the
 * report was a repeat (`duplicate`: a stream chunk already appended).
 */
export type Answer = { status: 'ok' } | { status: 'ignored'; reason: string }

const OK: Answer = { status: 'ok' }

/** The answer in a 200's body: podyard's `{"status": "ok" | "ignored", "reason"?}`, else `ok`. */
export function readAnswer(body: string): Answer {
  if (!body.includes('ignored')) return OK
  try {
    return answerOf(JSON.parse(body))
  } catch {
    return OK
  }
}

/** One item of a job-done-batch answer, or a job-done answer already parsed. */
export function answerOf(value: unknown): Answer {
  if (typeof value !== 'object' || value === null) return OK
  const { status, reason } = value as { status?: unknown; reason?: unknown }
  if (status !== 'ignored') return OK
  return { status: 'ignored', reason: typeof reason === 'string' ? reason : 'unknown' }
}

/**
 * A report the platform answered with an error status. `final` when sending it again cannot
 * help (docs/worker-sdk.md, "What is final"); otherwise it is retried, after `retryAfterMs` when
 * the platform said how long to wait.
 */
export class RefusedError extends Error {
  override name = 'RefusedError'
  constructor(
    message: string,
    readonly status: number,
    readonly final: boolean,
    readonly retryAfterMs: number | undefined,
  ) {
    super(message)
  }
}

/**
 * Retried: 408 (the server timed the request out), 429 (rate limited) and every 5xx (the
 * platform, or a proxy in front of it, is failing or restarting). Every other status is final:
 * the same bytes with the same key get the same answer.
 */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500
}

export function refused(what: string, response: HttpResponse): RefusedError {
  return new RefusedError(
    `${what} answered ${response.status}: ${response.body.slice(0, 500)}`,
    response.status,
    !isRetryableStatus(response.status),
    retryAfterMs(response.headers['retry-after']),
  )
}

/**
 * Lets waiting retries go as soon as the platform answers anything (a heartbeat, a take, another
 * delivery): after an outage, what waited goes out at once instead of after its backoff.
 */
export class Reachability {
  private readonly waiters = new Set<() => void>()

  answered(): void {
    if (this.waiters.size === 0) return
    for (const wake of [...this.waiters]) wake()
  }

  /** Resolves after `ms`, when the platform answers something, or when `signal` aborts. */
  wait(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve()
      const done = () => {
        clearTimeout(timer)
        this.waiters.delete(done)
        signal.removeEventListener('abort', done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.waiters.add(done)
      signal.addEventListener('abort', done, { once: true })
    })
  }
}

/** Resolves after `ms`, or at once when the signal aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve()
    const done = () => {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done, { once: true })
  })
}

export interface DeliveryLogger {
  info(message: string, fields?: Record<string, unknown>): void
  warn(message: string, fields?: Record<string, unknown>): void
  error(message: string, fields?: Record<string, unknown>): void
}

/** What became of a delivery. */
export type Outcome = 'delivered' | 'ignored' | 'refused' | 'abandoned'

export interface Delivery {
  jobId: string
  /** What is delivered, for the log: `job-done`, `job-stream`, `progress update`. */
  what: string
  /** One attempt. */
  send(): Promise<Answer>
  /** Aborted when the job is given up (the platform stopped it, or the grace period is over). */
  signal: AbortSignal
}

/**
 * Sends until the platform has answered for it: 200 (`ok` or `ignored`), or a final refusal.
 * Connection errors, timeouts and retryable statuses are retried with backoff (Retry-After when
 * given) for as long as `signal` lets it. Never rejects. The first attempt goes at once and sets
 * no timer: a delivery that succeeds costs what a plain post costs.
 */
export async function deliver(
  delivery: Delivery,
  reachability: Reachability,
  log: DeliveryLogger,
): Promise<Outcome> {
  const { jobId, what, signal } = delivery
  for (let failures = 0; ;) {
    if (signal.aborted) return 'abandoned'
    let error: unknown
    try {
      const answer = await delivery.send()
      reachability.answered()
      if (failures > 0) log.info(`${what} delivered after ${failures} failed attempts`, { jobId })
      if (answer.status === 'ok') return 'delivered'
      const fields = { jobId, reason: answer.reason }
      if (answer.reason === 'not-owner') {
        log.warn(`${what} ignored: another worker holds the job now`, fields)
      } else {
        log.info(`${what} ignored by the platform`, fields)
      }
      return 'ignored'
    } catch (thrown) {
      error = thrown
    }
    if (signal.aborted) return 'abandoned'
    if (error instanceof RefusedError && error.final) {
      log.error(`${what} refused: not retried`, {
        jobId,
        status: error.status,
        error: error.message,
      })
      return 'refused'
    }
    failures += 1
    const retryAfter = error instanceof RefusedError ? error.retryAfterMs : undefined
    const delay = retryAfter ?? backoffDelayMs(failures)
    if (failures === 1) {
      log.warn(`${what} failed: retrying until the platform answers`, {
        jobId,
        error: errorMessage(error),
        retryInMs: delay,
      })
    }
    // A Retry-After is the platform's own word: kept even when something else gets through.
    await (retryAfter !== undefined ? sleep(delay, signal) : reachability.wait(delay, signal))
  }
}
