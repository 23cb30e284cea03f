/** A timer set on a Clock. */
export interface ClockTimer {
  cancel(): void
}

/** Time as the rest of the code sees it; tests substitute a ManualClock to cross boundaries. */
export interface Clock {
  now(): Date
}

/**
 * A clock with timers that wait on it: what a loop sleeps on. A ManualClock fires them as the
 * test moves its time, without waiting.
 */
export interface TimerClock extends Clock {
  /**
   * Calls `fire` once `delayMs` has passed on this clock. `background`: the timer does not keep
   * the process alive (a loop's next pass); without it, it does, as a long poll's deadline.
   */
  setTimer(delayMs: number, fire: () => void, options?: { background?: boolean }): ClockTimer
}

export const systemClock: TimerClock = {
  now: () => new Date(),
  setTimer: (delayMs, fire, options) => {
    const timer = setTimeout(fire, Math.max(0, delayMs))
    if (options?.background) timer.unref()
    return { cancel: () => clearTimeout(timer) }
  },
}

interface ManualTimer {
  at: number
  order: number
  fire: () => void
}

export class ManualClock implements TimerClock {
  private current: number
  private readonly timers = new Set<ManualTimer>()
  private timersSet = 0

  constructor(start: Date | string | number = '2026-01-01T00:00:00.000Z') {
    this.current = new Date(start).getTime()
  }

  now(): Date {
    return new Date(this.current)
  }

  set(to: Date | string | number): void {
    this.current = new Date(to).getTime()
  }

  /** Moves the time on, firing the timers due by then in the order they are due. */
  advance(ms: number): void {
    const until = this.current + ms
    for (let timer = this.nextDue(until); timer; timer = this.nextDue(until)) this.fire(timer)
    this.current = Math.max(this.current, until)
  }

  /**
   * `advance`, letting what each timer started run before the next is due (its promise jobs
   * and whatever I/O is ready by then): for asynchronous work, such as a loop's passes, that
   * sets the next timer once it is done.
   */
  async advanceAsync(ms: number): Promise<void> {
    const until = this.current + ms
    await settle()
    for (let timer = this.nextDue(until); timer; timer = this.nextDue(until)) {
      this.fire(timer)
      await settle()
    }
    this.current = Math.max(this.current, until)
  }

  setTimer(delayMs: number, fire: () => void): ClockTimer {
    const timer = { at: this.current + Math.max(0, delayMs), order: this.timersSet++, fire }
    this.timers.add(timer)
    return { cancel: () => this.timers.delete(timer) }
  }

  /** How many timers wait to fire. */
  get pendingTimers(): number {
    return this.timers.size
  }

  private nextDue(until: number): ManualTimer | undefined {
    let next: ManualTimer | undefined
    for (const timer of this.timers) {
      if (timer.at > until) continue
      if (!next || timer.at < next.at || (timer.at === next.at && timer.order < next.order)) {
        next = timer
      }
    }
    return next
  }

  private fire(timer: ManualTimer): void {
    this.timers.delete(timer)
    this.current = Math.max(this.current, timer.at)
    timer.fire()
  }
}

/** Resolves once the promise jobs queued now, and those they queue, have run. */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}
