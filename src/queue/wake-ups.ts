import { systemClock, type ClockTimer, type TimerClock } from '../shared/clock.js'

/**
 * In-process wake-ups for long polls. A write in this process notifies its key at once; a write
 * by another replica is seen by the waiter's own poll of the store every `pollIntervalMs`, or at
 * once with PgWakeUps (pg-wake-ups.ts), which carries notifications between replicas.
 */
export class WakeUps {
  private readonly waiters = new Map<string, Set<() => void>>()

  /** `clock`: what the waits' deadlines and polls are timed by (a test may move a ManualClock). */
  constructor(private readonly clock: TimerClock = systemClock) {}

  notify(key: string): void {
    this.notifyHere(key)
  }

  /** Wakes this process's waiters of `key` only (a key no other replica waits on). */
  notifyHere(key: string): void {
    const waiting = this.waiters.get(key)
    if (waiting === undefined) return
    this.waiters.delete(key)
    for (const wake of waiting) wake()
  }

  /**
   * Resolves true as soon as `check` does, checking first, then on each notification of `key`
   * (of any of them, given several) and at least every `pollIntervalMs`; false once `timeoutMs`
   * has passed or `signal` aborts.
   */
  async waitUntil(
    key: string | readonly string[],
    check: () => Promise<boolean>,
    timeoutMs: number,
    pollIntervalMs: number,
    signal?: AbortSignal,
  ): Promise<boolean> {
    const deadline = this.clock.now().getTime() + Math.max(0, timeoutMs)
    const keys = typeof key === 'string' ? [key] : key
    for (;;) {
      if (signal?.aborted) return false
      // Register before checking so a write between the check and the sleep still wakes us.
      let wake: () => void = () => {}
      const woken = new Promise<void>((resolve) => {
        wake = resolve
      })
      for (const k of keys) this.add(k, wake)
      signal?.addEventListener('abort', wake, { once: true })
      try {
        if (await check()) return true
        const remaining = deadline - this.clock.now().getTime()
        if (remaining <= 0) return false
        let timer: ClockTimer | undefined
        await Promise.race([
          woken,
          new Promise<void>((resolve) => {
            timer = this.clock.setTimer(Math.min(remaining, pollIntervalMs), resolve)
          }),
        ])
        timer?.cancel()
      } finally {
        for (const k of keys) this.remove(k, wake)
        signal?.removeEventListener('abort', wake)
      }
    }
  }

  private add(key: string, wake: () => void): void {
    let waiting = this.waiters.get(key)
    if (waiting === undefined) {
      waiting = new Set()
      this.waiters.set(key, waiting)
    }
    waiting.add(wake)
  }

  private remove(key: string, wake: () => void): void {
    const waiting = this.waiters.get(key)
    if (waiting === undefined) return
    waiting.delete(wake)
    if (waiting.size === 0) this.waiters.delete(key)
  }
}
