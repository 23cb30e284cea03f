import { backoffDelayMs } from './backoff.js'
import { sleep, type Reachability } from './delivery.js'
import { errorMessage } from './errors.js'
import type { JobRuns, RunningJob } from './job-runs.js'
import type { WorkerLogger } from './serve-options.js'
import type { PingAnswer, WorkerProtocol } from './worker-protocol.js'

/**
 * How long a stop notice waits for a take in flight to hand its job back to this worker before
 * the job is stopped: a notice sent when the job's lease ran out is stale once the job is this
 * worker's again (docs/worker-sdk.md, "Cancellation").
 */
export const STOP_CONFIRM_MS = 1_000
/**
 * A run is given up this long before its lease would end unrenewed, so that it has stopped
 * before the platform can hand the job to another worker (docs/worker-sdk.md, "Fencing").
 */
export const FENCE_MARGIN_MS = 1_000
/** How often the fence looks for runs taken since it last looked (each is due a lease later). */
const FENCE_CHECK_MS = 250

export interface JobLeasesDeps {
  runs: JobRuns
  protocol: WorkerProtocol
  reachability: Reachability
  log: WorkerLogger
  /** Aborted once every job is over: ends the stop channel, the heartbeat and the fence. */
  finished: AbortSignal
  /** Whether a take is in flight now (it may hand a job back to this worker). */
  taking: () => boolean
}

/**
 * What the platform says of the jobs a worker holds, and what the worker does about it: the
 * heartbeat renews their leases, the fence gives up a run whose lease could not be renewed,
 * and the stop channel's notices stop a job, unless stale (docs/worker-sdk.md, "Fencing" and
 * "Cancellation").
 */
export class JobLeases {
  /** How long a lease lasts, as the platform's heartbeat answers say (podyard's do). */
  private leaseMs: number | undefined

  constructor(private readonly deps: JobLeasesDeps) {}

  async stopChannelLoop(): Promise<void> {
    const { finished, log } = this.deps
    let failures = 0
    while (!finished.aborted) {
      try {
        const ids = await this.deps.protocol.stops(finished)
        failures = 0
        this.deps.reachability.answered()
        for (const id of ids) {
          const job = this.deps.runs.get(id)
          if (job !== undefined && !job.abandoned) void this.onStopNotice(job)
        }
      } catch (error) {
        if (finished.aborted) break
        failures += 1
        const delay = backoffDelayMs(failures)
        log.warn('job-stop failed', { error: errorMessage(error), retryInMs: delay })
        await sleep(delay, finished)
      }
    }
  }

  async heartbeatLoop(intervalMs: number): Promise<void> {
    const { finished } = this.deps
    let failing = false
    let pingDue = 0
    while (!finished.aborted) {
      if (Date.now() >= pingDue) {
        pingDue = Date.now() + intervalMs
        try {
          await this.heartbeat(2 * intervalMs)
          failing = false
          this.deps.reachability.answered()
        } catch (error) {
          if (!failing) this.deps.log.warn('ping failed', { error: errorMessage(error) })
          failing = true
        }
      }
      await sleep(Math.max(0, pingDue - Date.now()), finished)
    }
  }

  /**
   * Looks at the runs' leases on a timer of its own: a heartbeat that hangs (it may wait twice
   * the ping interval for an answer) must not delay giving up a run whose lease is ending.
   */
  async fenceLoop(): Promise<void> {
    while (!this.deps.finished.aborted) {
      const next = Math.min(this.fence(), Date.now() + FENCE_CHECK_MS)
      await sleep(Math.max(0, next - Date.now()), this.deps.finished)
    }
  }

  /** One heartbeat naming every job this worker holds; notes the leases it renewed. */
  private async heartbeat(timeoutMs: number): Promise<PingAnswer | undefined> {
    const sentAt = Date.now()
    const answer = await this.deps.protocol.ping(this.deps.runs.ids(), timeoutMs)
    if (answer?.leaseMs !== undefined) this.leaseMs = answer.leaseMs
    for (const id of answer?.renewed ?? []) {
      const job = this.deps.runs.get(id)
      if (job !== undefined) job.renewedAt = Math.max(job.renewedAt, sentAt)
    }
    return answer
  }

  /**
   * Gives up the runs whose leases this worker could not renew for a whole lease: the platform
   * may have handed those jobs to another worker, and a job must never run twice at once. A
   * result already waiting for delivery is kept (the platform ignores it if the job moved on).
   * Returns when to look again (ms since the epoch).
   */
  private fence(): number {
    const leaseMs = this.leaseMs
    let next = Number.POSITIVE_INFINITY
    for (const job of this.deps.runs.all()) {
      if (job.abandoned || job.resultReady) continue
      // Both are times before which the lease cannot have ended; neither is known without
      // podyard's take header and heartbeat answers (RunPod), and then nothing is given up.
      const leaseEndsAt = Math.max(
        job.leaseEndsAt ?? Number.NEGATIVE_INFINITY,
        leaseMs === undefined ? Number.NEGATIVE_INFINITY : job.renewedAt + leaseMs,
      )
      if (leaseEndsAt === Number.NEGATIVE_INFINITY) continue
      const giveUpAt = leaseEndsAt - FENCE_MARGIN_MS
      if (Date.now() < giveUpAt) {
        next = Math.min(next, giveUpAt)
        continue
      }
      this.deps.log.warn('giving up a job whose lease could not be renewed: it may run elsewhere', {
        jobId: job.id,
        ...(leaseMs === undefined ? {} : { leaseMs }),
      })
      this.deps.runs.abandon(
        job,
        `job ${job.id}'s lease ran out: the platform could not be reached`,
      )
    }
    return next
  }

  /**
   * A stop notice names a job of this worker. It is stale when the job has come back to this
   * worker since it was sent: its lease ran out (the platform was unreachable for longer than
   * the lease, or restarted), the notice went out, and a take handed the job back. So a job
   * handed back, or handed back in the next STOP_CONFIRM_MS while a take is in flight, is only
   * stopped when the platform confirms that the worker no longer holds it.
   */
  private async onStopNotice(job: RunningJob): Promise<void> {
    const takes = job.takes
    if (this.deps.taking()) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, STOP_CONFIRM_MS)
        job.onTakenAgain = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      job.onTakenAgain = undefined
    }
    if (job.abandoned || this.deps.runs.get(job.id) !== job) return
    if (job.takes !== takes || (job.takes > 1 && (await this.stillHolds(job.id)))) {
      this.deps.log.info('a stop notice came for a job handed back to this worker since: ignored', {
        jobId: job.id,
      })
      return
    }
    this.deps.log.info('the platform stopped a job', { jobId: job.id })
    this.deps.runs.abandon(
      job,
      `the platform stopped job ${job.id} (cancelled, timed out or expired)`,
    )
  }

  /** Whether the platform says this worker holds the job (a heartbeat that names it renews it). */
  private async stillHolds(jobId: string): Promise<boolean> {
    try {
      const answer = await this.heartbeat(this.deps.protocol.pingIntervalMs * 2)
      return answer?.renewed?.includes(jobId) ?? false
    } catch {
      return false
    }
  }
}
