import { systemClock, type ClockTimer, type TimerClock } from './clock.js'

/**
 * The one loop the platform's control loops run on (job sweeper, webhook dispatcher, billing
 * meter, ...): a pass at least every `intervalMs`, sooner when nudged or when a pass asks for
 * it, never two passes at once, failures to `onError` and the loop goes on. Each loop's own file
 * keeps only what a pass decides and does.
 */
/**
 * What a pass may ask for: the next pass within `wakeInMs` (a deadline it knows of), sooner
 * than the interval. An object rather than a bare number, so that a pass returning some count
 * by accident does not type-check as a wake-up.
 */
export type PassOutcome = void | { wakeInMs: number }

export interface ReconcileLoopOptions {
  /** One pass; nothing returned keeps the interval. */
  pass: () => Promise<PassOutcome>
  /** The longest gap between the end of a pass and the start of the next. */
  intervalMs: number
  /** Nudged passes start at least this long after the previous pass started (default 0). */
  minGapMs?: number
  onError: (error: unknown) => void
  /**
   * The clock the loop's timers wait on (default: the system clock): a ManualClock drives the
   * loop in a test without waiting.
   */
  clock?: TimerClock
}

export class ReconcileLoop {
  private readonly clock: TimerClock
  private timer: ClockTimer | undefined
  /** When the armed timer fires (ms since epoch); Infinity when none is armed. */
  private dueAt = Infinity
  private current: Promise<void> | undefined
  /** The earliest next pass asked for while one was running (ms since epoch). */
  private wantedAt = Infinity
  private lastStartedAt = -Infinity
  private started = false

  constructor(private readonly options: ReconcileLoopOptions) {
    this.clock = options.clock ?? systemClock
  }

  /** Starts the loop: the first pass at once with `immediate`, else after `intervalMs`. */
  start({ immediate = false }: { immediate?: boolean } = {}): void {
    if (this.started) return
    this.started = true
    this.wakeIn(immediate ? 0 : this.options.intervalMs)
  }

  /** Stops the loop; resolves once a pass under way has ended. No pass starts afterwards. */
  async stop(): Promise<void> {
    this.started = false
    this.disarm()
    this.wantedAt = Infinity
    await this.current
  }

  get running(): boolean {
    return this.started
  }

  /** Something changed: a pass as soon as `minGapMs` allows (after the current one, if any). */
  nudge(): void {
    this.wakeIn(Math.max(0, this.lastStartedAt + (this.options.minGapMs ?? 0) - this.nowMs()))
  }

  /** A pass no later than `delayMs` from now (sooner ones stay). */
  wakeIn(delayMs: number): void {
    if (!this.started) return
    const at = this.nowMs() + Math.max(0, delayMs)
    if (this.current) {
      this.wantedAt = Math.min(this.wantedAt, at)
      return
    }
    if (this.timer && this.dueAt <= at) return
    this.arm(at)
  }

  /** Runs one pass now, or waits for the one under way; for tests and for shutdown paths. */
  async runOnce(): Promise<void> {
    if (this.current) return this.current
    this.disarm()
    await this.runPass()
  }

  private arm(at: number): void {
    this.disarm()
    this.dueAt = at
    this.timer = this.clock.setTimer(at - this.nowMs(), () => void this.runPass(), {
      background: true,
    })
  }

  private disarm(): void {
    this.timer?.cancel()
    this.timer = undefined
    this.dueAt = Infinity
  }

  private runPass(): Promise<void> {
    this.timer = undefined
    this.dueAt = Infinity
    this.lastStartedAt = this.nowMs()
    this.current = (async () => {
      let asked: PassOutcome = undefined
      try {
        asked = await this.options.pass()
      } catch (error) {
        this.options.onError(error)
      }
      this.current = undefined
      if (!this.started) return
      const now = this.nowMs()
      const byInterval = now + this.options.intervalMs
      const byPass = asked ? now + Math.max(0, asked.wakeInMs) : Infinity
      const byNudge = Math.max(this.wantedAt, this.lastStartedAt + (this.options.minGapMs ?? 0))
      const nudged = this.wantedAt !== Infinity
      this.wantedAt = Infinity
      this.arm(Math.min(byInterval, byPass, nudged ? byNudge : Infinity))
    })()
    return this.current
  }

  private nowMs(): number {
    return this.clock.now().getTime()
  }
}
