/**
 * How long the worker waits before calling the platform again after a call failed
 * (docs/worker-sdk.md, "Delivery"): 250 ms, doubling per failure, at most 5 s, each delay drawn
 * between half and all of that so that workers cut off together do not come back in step.
 */
export const BACKOFF = { firstDelayMs: 250, factor: 2, maxDelayMs: 5_000 } as const

/** Retry-After values above this are taken as this: a worker never sleeps for hours on one. */
export const MAX_RETRY_AFTER_MS = 5 * 60_000

/** The delay before retry `retry` (1 for the first retry); `random` in [0, 1). */
export function backoffDelayMs(retry: number, random: () => number = Math.random): number {
  const ceiling = Math.min(
    BACKOFF.maxDelayMs,
    BACKOFF.firstDelayMs * BACKOFF.factor ** Math.max(0, retry - 1),
  )
  return Math.round(ceiling * (0.5 + random() / 2))
}

/**
 * A Retry-After header (seconds, or an HTTP date) in ms from `now`, at most MAX_RETRY_AFTER_MS;
 * undefined when absent or not understood (the caller backs off as for any failure).
 */
export function retryAfterMs(
  header: string | string[] | undefined,
  now: number = Date.now(),
): number | undefined {
  const value = (Array.isArray(header) ? header[0] : header)?.trim()
  if (value === undefined || value === '') return undefined
  let ms: number
  if (/^\d+(\.\d+)?$/.test(value)) ms = Number(value) * 1000
  else {
    const at = Date.parse(value)
    if (!Number.isFinite(at) || !/[a-z]/i.test(value)) return undefined
    ms = at - now
  }
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, Math.round(ms)))
}
