/**
 * Crash-loop backoff of an endpoint's workers (docs/serverless-workers.md, "Crash loops"): each
 * worker that fails (crashes, cannot start, misses its heartbeats) puts the endpoint's next
 * worker start off, twice as long each time in a row, up to a cap; a healthy start (a worker
 * that asked for a job) ends it. Pure: the autoscaler keeps the state and stores it.
 */

/** The first delay after a failure, and the longest. Our choice: the spec names none. */
export const DEFAULT_START_BACKOFF = { initialMs: 1000, maxMs: 60_000 }

export interface StartBackoff {
  endpointId: string
  /** Workers that failed in a row since the last healthy start. */
  failures: number
  /** The last of them: which, why (its `reason` in the workers list), when (ISO). */
  lastFailure: { workerId: string; reason: string; at: string }
  /** No worker of the endpoint is started before this (ISO). */
  nextStartAt: string
}

/** How many of the failed worker's last lines of output `/health` and the workers list show. */
export const LAST_FAILURE_LINES = 20
/** A longer line is cut there: the lines are a hint, its logs route has them whole. */
export const LAST_FAILURE_LINE_CHARS = 500

/**
 * How `/health` and the workers list show it (the endpoint is the one asked about), with the
 * failed worker's last lines of output (`lastLines`): what a caller waiting for a job needs to
 * see why workers do not start.
 */
export interface StartBackoffView {
  failures: number
  lastFailure: { workerId: string; reason: string; at: string; lastLines: string[] }
  nextStartAt: string
}

export function startBackoffView(
  { failures, lastFailure, nextStartAt }: StartBackoff,
  lastLines: readonly string[],
): StartBackoffView {
  const cut = (line: string) =>
    line.length > LAST_FAILURE_LINE_CHARS ? `${line.slice(0, LAST_FAILURE_LINE_CHARS)}...` : line
  return {
    failures,
    lastFailure: { ...lastFailure, lastLines: lastLines.slice(-LAST_FAILURE_LINES).map(cut) },
    nextStartAt,
  }
}

/** The delay after the `failures`-th failure in a row: initial, doubling, capped. */
export function backoffDelayMs(
  failures: number,
  limits: { initialMs: number; maxMs: number } = DEFAULT_START_BACKOFF,
): number {
  const doublings = Math.min(Math.max(failures - 1, 0), 30)
  return Math.min(limits.maxMs, limits.initialMs * 2 ** doublings)
}

/** The endpoint's backoff after one more worker failed at `nowMs`. */
export function afterFailure(
  previous: StartBackoff | undefined,
  failure: { endpointId: string; workerId: string; reason: string },
  nowMs: number,
  limits: { initialMs: number; maxMs: number } = DEFAULT_START_BACKOFF,
): StartBackoff {
  const failures = (previous?.failures ?? 0) + 1
  return {
    endpointId: failure.endpointId,
    failures,
    lastFailure: {
      workerId: failure.workerId,
      reason: failure.reason,
      at: new Date(nowMs).toISOString(),
    },
    nextStartAt: new Date(nowMs + backoffDelayMs(failures, limits)).toISOString(),
  }
}

/** Whether the endpoint may start a worker at `nowMs`. */
export function mayStart(backoff: StartBackoff | undefined, nowMs: number): boolean {
  return backoff === undefined || Date.parse(backoff.nextStartAt) <= nowMs
}

/** Where the autoscaler keeps the backoffs, so that a restart or another replica sees them. */
export interface StartBackoffRepo {
  list(): Promise<StartBackoff[]>
  put(backoff: StartBackoff): Promise<void>
  delete(endpointId: string): Promise<void>
}
