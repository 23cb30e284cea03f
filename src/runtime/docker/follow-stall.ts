import { isBefore } from './log-frames.js'

/** After this long without a byte from the engine, the watch asks for the log's newest entry. */
export const STALL_FIRST_CHECK_MS = 2_000
/** While the log is idle (nothing newer than what was heard), checks back off to this. */
export const STALL_MAX_CHECK_MS = 30_000

export type LogTime = [number, number]

/**
 * Docker's json-file reader can stop sending a followed log for good after a rotation, with
 * the connection still open (moby/moby#37646, #39235: seen here under a flood, a follower
 * silent from line 116 845 of 200 000 while the container wrote on). The watch notices it:
 * while the follow waits for the engine and hears nothing, it asks the engine for the log's
 * newest entry (a `tail=1` read). A follow is stalled when the engine held an entry newer than
 * the newest one the follow received at one check, and still nothing came by the next: then
 * `onStall` runs (the follower drops that follow and follows again from its last line). A
 * slow client is not a stall: while the follower hands lines on, the silence is not counted.
 * Entries are compared, not lines: a progress bar's entry without a newline is heard too.
 *
 * An idle log costs a `tail=1` read after 2 s of silence, then 4, 8, ... at most every 30 s.
 */
export class FollowStallWatch {
  private newestHeard: LogTime | undefined
  /** When the follow began waiting for the engine; undefined while it hands lines on. */
  private waitingSince: number | undefined = Date.now()
  /** The engine's newest entry at the last check, when the follow had not heard it. */
  private suspect: LogTime | undefined
  private checkMs: number
  private timer: NodeJS.Timeout | undefined
  private stopped = false

  constructor(
    private readonly newestInEngine: () => Promise<LogTime | undefined>,
    private readonly onStall: () => void,
    private readonly firstCheckMs = STALL_FIRST_CHECK_MS,
  ) {
    this.checkMs = firstCheckMs
    this.schedule()
  }

  /**
   * Bytes came from the engine; `newest` is the time of the newest log entry received so far
   * (LogFrameDecoder.newestFrameTime: a line's end or not). The follow is alive.
   */
  heard(newest: LogTime | undefined): void {
    this.waitingSince = undefined
    this.suspect = undefined
    if (newest) this.newestHeard = newest
    if (this.checkMs !== this.firstCheckMs) {
      this.checkMs = this.firstCheckMs
      this.schedule()
    }
  }

  /** The follow has handed its lines on and waits for the engine again. */
  waiting(): void {
    this.waitingSince = Date.now()
  }

  stop(): void {
    this.stopped = true
    clearTimeout(this.timer)
  }

  private schedule(): void {
    clearTimeout(this.timer)
    if (this.stopped) return
    this.timer = setTimeout(() => void this.check(), this.checkMs)
    this.timer.unref()
  }

  private async check(): Promise<void> {
    const waitingSince = this.waitingSince
    if (waitingSince === undefined || Date.now() - waitingSince < this.firstCheckMs) {
      this.suspect = undefined
      return this.schedule()
    }
    const newest = await this.newestInEngine().catch(() => undefined)
    if (this.stopped) return
    // Something came while the engine answered: not stalled.
    if (this.waitingSince !== waitingSince) return this.schedule()
    const unheard = newest && (!this.newestHeard || isBefore(this.newestHeard, newest))
    if (unheard && this.suspect) {
      this.stop()
      return this.onStall()
    }
    this.suspect = unheard ? newest : undefined
    this.checkMs = unheard ? this.firstCheckMs : Math.min(this.checkMs * 2, STALL_MAX_CHECK_MS)
    this.schedule()
  }
}
