import type { Logger } from 'pino'
import type { JobQueue } from '../domain/serverless/ports.js'
import type { Clock } from '../shared/clock.js'

export const JOB_SWEEP_INTERVAL_MS = 1_000

/**
 * The job queue's control loop (docs/serverless-queue.md, "Timeouts, ttl and retention"): every
 * interval, jobs whose worker stopped heart-beating go back to the queue, jobs past their
 * execution timeout become TIMED_OUT, and jobs past their ttl or retention are deleted. Runs on
 * the leading replica (docs/production.md); should two sweep at once, on PostgreSQL the queue
 * makes their sweeps skip each other.
 */
export class JobSweeper {
  private timer: NodeJS.Timeout | undefined
  private running: Promise<void> | undefined
  private stopped = true

  constructor(
    private readonly deps: {
      queue: Pick<JobQueue, 'requeueExpiredLeases' | 'expire'>
      clock: Clock
      logger: Pick<Logger, 'info' | 'error'>
      intervalMs?: number
    },
  ) {}

  start(): void {
    if (!this.stopped) return
    this.stopped = false
    this.schedule()
  }

  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    this.timer = undefined
    await this.running
  }

  /** One sweep; exposed for tests. */
  async sweep(): Promise<void> {
    const now = this.deps.clock.now()
    const leases = await this.deps.queue.requeueExpiredLeases(now)
    const expired = await this.deps.queue.expire(now)
    const moved = leases.requeued.length + leases.timedOut.length + expired.timedOut.length
    if (moved > 0) {
      this.deps.logger.info(
        {
          requeued: leases.requeued,
          timedOut: [...leases.timedOut, ...expired.timedOut],
          deleted: expired.deleted.length,
        },
        'job sweep',
      )
    }
  }

  private schedule(): void {
    if (this.stopped) return
    this.timer = setTimeout(() => {
      this.running = this.sweep()
        .catch((error: unknown) => this.deps.logger.error({ err: error }, 'job sweep failed'))
        .finally(() => {
          this.running = undefined
          this.schedule()
        })
    }, this.deps.intervalMs ?? JOB_SWEEP_INTERVAL_MS)
    this.timer.unref()
  }
}
