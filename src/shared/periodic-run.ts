/**
 * Runs `run` every `intervalMs`, never two passes at once (a pass still running when the next
 * tick comes skips that tick); failures go to `onError` and the next tick tries again.
 */
export class PeriodicRun {
  private timer: NodeJS.Timeout | undefined
  private running: Promise<void> | undefined

  constructor(
    private readonly run: () => Promise<void>,
    private readonly intervalMs: number,
    private readonly onError: (error: unknown) => void,
  ) {}

  start(): void {
    if (this.timer) return
    this.timer = setInterval(() => {
      if (this.running) return
      this.running = this.run()
        .catch(this.onError)
        .finally(() => {
          this.running = undefined
        })
    }, this.intervalMs)
    this.timer.unref()
  }

  /** Stops the ticks; resolves once a pass under way has ended. */
  async stop(): Promise<void> {
    clearInterval(this.timer)
    this.timer = undefined
    await this.running
  }
}
