import type { Logger } from 'pino'
import type { JobQueue } from '../domain/serverless/ports.js'
import type { JobEvents } from '../domain/serverless/job-events.js'
import type { Clock, TimerClock } from '../shared/clock.js'
import { ReconcileLoop } from '../shared/reconcile-loop.js'
import type { Tracing } from '../shared/tracing.js'
import { traceExpired } from '../domain/serverless/job-tracing.js'
import { observeSweptJobs } from './swept-jobs.js'

export const JOB_SWEEP_INTERVAL_MS = 1_000

/**
 * The job queue's control loop (docs/serverless-queue.md, "Timeouts, ttl and retention"): every
 * interval, jobs whose worker stopped heart-beating go back to the queue, jobs past their
 * execution timeout become TIMED_OUT, and jobs past their ttl or retention are deleted. Runs on
 * the leading replica (docs/production.md); should two sweep at once, on PostgreSQL the queue
 * makes their sweeps skip each other.
 */
export class JobSweeper {
  private readonly loop: ReconcileLoop

  /** Set by stop(): a start still renewing leases then starts no loop. */
  private stopped = false

  constructor(
    private readonly deps: {
      queue: Pick<JobQueue, 'requeueExpiredLeases' | 'expire' | 'renewRunningLeases'>
      clock: Clock
      /** The clock its loop's timers wait on (default: the system clock). */
      timers?: TimerClock
      logger: Pick<Logger, 'info' | 'error'>
      intervalMs?: number
      /** The job lease (`workers.jobLeaseMs`). */
      leaseMs: number
      /** Told of the jobs a sweep timed out, for the metrics. */
      events?: Pick<JobEvents, 'ended'>
      /** Ends the spans of the jobs a sweep ended (absent: no tracing). */
      tracing?: Tracing
    },
  ) {
    this.loop = new ReconcileLoop({
      clock: deps.timers,
      pass: () => this.sweep(),
      intervalMs: deps.intervalMs ?? JOB_SWEEP_INTERVAL_MS,
      onError: (error) => deps.logger.error({ err: error }, 'job sweep failed'),
    })
  }

  /**
   * Starts sweeping, on the replica that leads. The platform may have been away (stopped,
   * crashed, or no replica leading) for longer than a lease, while its workers kept running
   * their jobs: their heartbeats found nobody to renew them. So it first renews every
   * running job's lease to a full lease from now before it looks for expired ones: workers get a
   * whole lease to report back, instead of losing finished work to a sweep in the first second
   * (docs/serverless-queue.md, "Guarantees"). It resolves once they are renewed, and the leader
   * starts the autoscaler only then: a worker the autoscaler finds lost has its jobs released
   * (their leases ended), and a renewal after that gave them a whole lease again, so that they
   * waited a minute for nobody.
   */
  async start(): Promise<void> {
    if (this.loop.running) return
    this.stopped = false
    try {
      const renewed = await this.deps.queue.renewRunningLeases(
        new Date(this.deps.clock.now().getTime() + this.deps.leaseMs),
      )
      if (renewed > 0) {
        this.deps.logger.info(
          { renewed, leaseMs: this.deps.leaseMs },
          'renewed the running jobs’ leases: their workers have a full lease to report back',
        )
      }
    } catch (error) {
      this.deps.logger.error({ err: error }, 'renewing the running jobs’ leases failed')
    }
    if (!this.stopped) this.loop.start()
  }

  stop(): Promise<void> {
    this.stopped = true
    return this.loop.stop()
  }

  /** One sweep; exposed for tests. */
  async sweep(): Promise<void> {
    const now = this.deps.clock.now()
    const leases = await this.deps.queue.requeueExpiredLeases(now)
    const expired = await this.deps.queue.expire(now)
    const ended = [...leases.ended, ...expired.ended]
    // Every job's spans end, also those a worker never reported back on.
    observeSweptJobs(this.deps, { ended, lost: leases.lost }, now.getTime())
    if (this.deps.tracing) {
      for (const job of expired.expired) traceExpired(this.deps.tracing, job, now.getTime())
    }
    const moved = leases.requeued.length + ended.length
    if (moved > 0) {
      this.deps.logger.info(
        {
          requeued: leases.requeued,
          timedOut: ended.filter((job) => job.status === 'TIMED_OUT').map((job) => job.id),
          failed: ended.filter((job) => job.status === 'FAILED').map((job) => job.id),
          deleted: expired.deleted.length,
        },
        'job sweep',
      )
    }
  }
}
