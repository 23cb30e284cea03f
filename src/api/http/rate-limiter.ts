import type { Clock } from '../../shared/clock.js'

export interface RateLimitQuotas {
  minute: number
  hour: number
  day: number
}

export const rateLimitWindows = [
  { name: 'minute', seconds: 60 },
  { name: 'hour', seconds: 3600 },
  { name: 'day', seconds: 86400 },
] as const

export type WindowName = (typeof rateLimitWindows)[number]['name']

export interface WindowState {
  name: WindowName
  quota: number
  windowSeconds: number
  remaining: number
  /** Whole seconds until the window resets (at least 1 while it is open). */
  resetSeconds: number
}

export interface RateLimitDecision {
  allowed: boolean
  windows: WindowState[]
  /** When refused: the exhausted window that resets last, which is what the caller must wait for. */
  exhausted?: WindowState
}

interface Counter {
  windowStart: number
  count: number
}

/**
 * Fixed windows aligned to the clock (a minute window resets on the minute), per account.
 * A refused request does not count, so a client that waits as told by Retry-After gets in.
 * Counters live in this process; see docs/rate-limits.md for what that means with replicas.
 */
export class RateLimiter {
  private readonly counters = new Map<string, Counter[]>()
  private lastSweep = 0

  /** RateLimit-Policy, the same on every answer: built once (the quotas do not change). */
  readonly policyHeader: string

  constructor(
    private readonly quotas: RateLimitQuotas,
    private readonly clock: Clock,
  ) {
    this.policyHeader = rateLimitPolicyHeader(
      rateLimitWindows.map((window) => ({
        name: window.name,
        quota: quotas[window.name],
        windowSeconds: window.seconds,
        remaining: 0,
        resetSeconds: 0,
      })),
    )
  }

  // Plain loops: this runs on every authenticated request (bench/README.md, "Profile notes").
  consume(accountId: string): RateLimitDecision {
    const nowMs = this.clock.now().getTime()
    this.sweep(nowMs)
    let counters = this.counters.get(accountId)
    if (counters === undefined) {
      counters = rateLimitWindows.map(() => ({ windowStart: 0, count: 0 }))
      this.counters.set(accountId, counters)
    }

    const windows: WindowState[] = []
    let exhausted: WindowState | undefined
    for (let i = 0; i < rateLimitWindows.length; i++) {
      const window = rateLimitWindows[i]!
      const lengthMs = window.seconds * 1000
      const windowStart = Math.floor(nowMs / lengthMs) * lengthMs
      const counter = counters[i]!
      if (counter.windowStart !== windowStart) {
        counter.windowStart = windowStart
        counter.count = 0
      }
      const quota = this.quotas[window.name]
      const state: WindowState = {
        name: window.name,
        quota,
        windowSeconds: window.seconds,
        remaining: Math.max(0, quota - counter.count),
        resetSeconds: Math.max(1, Math.ceil((windowStart + lengthMs - nowMs) / 1000)),
      }
      // The exhausted window that resets last; the first of equals, as a stable sort gives.
      if (state.remaining === 0 && (!exhausted || state.resetSeconds > exhausted.resetSeconds))
        exhausted = state
      windows.push(state)
    }
    if (exhausted) return { allowed: false, windows, exhausted }
    for (let i = 0; i < windows.length; i++) {
      counters[i]!.count += 1
      windows[i]!.remaining -= 1
    }
    return { allowed: true, windows }
  }

  /** Drops accounts whose day window has passed so the map does not grow without bound. */
  private sweep(nowMs: number): void {
    if (nowMs - this.lastSweep < 60_000) return
    this.lastSweep = nowMs
    const dayStart = Math.floor(nowMs / 86_400_000) * 86_400_000
    for (const [accountId, counters] of this.counters) {
      if (counters[2]!.windowStart < dayStart) this.counters.delete(accountId)
    }
  }
}

/** `"minute";r=0;t=12, "hour";r=2800;t=1812, "day";r=49500;t=45012` (wire-compat §3.1). */
export function rateLimitHeader(windows: WindowState[]): string {
  let header = ''
  for (const w of windows) {
    header += `${header === '' ? '' : ', '}"${w.name}";r=${w.remaining};t=${w.resetSeconds}`
  }
  return header
}

/** `"minute";q=60;w=60, "hour";q=3000;w=3600, "day";q=50000;w=86400` (wire-compat §3.1). */
export function rateLimitPolicyHeader(windows: WindowState[]): string {
  return windows.map((w) => `"${w.name}";q=${w.quota};w=${w.windowSeconds}`).join(', ')
}
