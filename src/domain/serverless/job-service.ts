import { AppError } from '../../shared/app-error.js'
import type { EgressGuard } from '../egress/egress-guard.js'
import { systemClock, type Clock, type TimerClock } from '../../shared/clock.js'
import { timeOrderedUuid } from '../../shared/ids.js'
import type { TraceOrigin, Tracing } from '../../shared/tracing.js'
import { decideAccess, type Principal } from '../accounts/access.js'
import type { EndpointView } from './endpoint.js'
import type { EndpointService } from './endpoint-service.js'
import type { JobEvents } from './job-events.js'
import { traceFinished, traceTaken } from './job-tracing.js'
import {
  isTerminal,
  jobTimings,
  newJob,
  SYNC_JOB_ID_PREFIX,
  type Job,
  type JobView,
  type StreamChunk,
} from './job.js'
import { badRequest, parseSubmission, type DoneReport } from './job-requests.js'
import type {
  CompleteResult,
  JobCounts,
  JobPage,
  JobQueue,
  StreamRead,
  WorkerWriteResult,
} from './ports.js'
import type { StartBackoffView } from './start-backoff.js'
import type { WorkerCounts, WorkerPresence } from './worker-presence.js'
import type { WorkerRoster } from './worker.js'
import { WorkerLongPolls } from './worker-long-polls.js'

/** How long a worker's take holds a job before it must heart-beat (ping) or lose it. */
export const DEFAULT_LEASE_MS = 60_000
/**
 * A take with job_in_progress=1 renews the worker's leases at most this often (and at least four
 * times per lease). A worker with many jobs in flight takes once per finished job, and renewing
 * all of them every time cost more than the jobs themselves (bench/README.md); this is well
 * inside the lease, so a worker that only takes (runpod-python without RUNPOD_POD_ID does not
 * ping) still keeps its jobs.
 */
export const TAKE_RENEWAL_INTERVAL_MS = 5_000
/**
 * The most one take hands a worker (docs/job-api.md, "Take budget"): characters of the jobs'
 * input, s3Config and webhook as stored (bytes, for ASCII). A take stops before the job that
 * would pass it, but always hands out one job, however large. With jobs of at most 20 MB (the
 * /runsync body limit) an answer stays under 40 MB; 55 jobs of 10 MB in one answer were more
 * than Node can make a string of, and the take failed with 500 after leasing them all.
 */
export const TAKE_PAYLOAD_BUDGET = 16 * 1024 * 1024

export interface JobServiceDeps {
  endpoints: EndpointService
  queue: JobQueue
  presence: WorkerPresence
  /** The managed workers; without it every worker takes jobs and counts by presence. */
  roster?: WorkerRoster
  clock: Clock
  /**
   * What the long polls' deadlines are timed by (default: the system clock); the queue's
   * wake-ups must wait on the same. A test gives both a ManualClock instead of waiting.
   */
  pollClock?: TimerClock
  leaseMs?: number
  /**
   * Told of every job a worker completes (COMPLETED or FAILED), after the queue recorded it:
   * public model jobs are settled here (docs/public-endpoints.md). A failure is the listener's.
   */
  onJobFinished?: (job: JobView) => Promise<void>
  /** The zero-balance policy (docs/billing.md): 402 for new jobs of an account out of credits. */
  billing?: { assertCanRun(accountId: string, what: string): Promise<void> }
  /** The egress policy for webhook URLs (docs/security.md): a refused one is a 400. */
  webhookEgress: Pick<EgressGuard, 'vet'>
  /**
   * Told when a job that may cause a scale-up (not lowPriority) was queued on an endpoint that
   * may have workers (`workers.max` > 0): the autoscaler reacts at once (a cold start).
   */
  onQueued?: (endpointId: string) => void
  /** Told of submissions, starts and ends, for the metrics. */
  events?: JobEvents
  /** Writes the jobs' spans (docs/production.md, "Tracing"); none when tracing is off. */
  tracing?: Tracing
}

/**
 * The job API and the worker protocol over the queue (docs/job-api.md): who may use which
 * endpoint, submissions, waits, and what workers report.
 */
export class JobService {
  readonly leaseMs: number
  private readonly pollClock: TimerClock

  constructor(private readonly deps: JobServiceDeps) {
    this.leaseMs = deps.leaseMs ?? DEFAULT_LEASE_MS
    this.pollClock = deps.pollClock ?? systemClock
  }

  /** Now on the long polls' clock (ms since the epoch). */
  private pollNow(): number {
    return this.pollClock.now().getTime()
  }
  /** The worker long polls in flight, ended early when the worker stops or the server closes. */
  private readonly polls = new WorkerLongPolls()

  /**
   * Ends the worker's long polls now (they answer 204): the platform stops the worker, and a
   * worker loop that is shutting down (runpod-python on SIGTERM) waits for its polls to end.
   * Resolves once they have answered, so that a job one of them was taking is in the store by
   * then (the autoscaler checks that a worker it stops holds nothing, docs/serverless-workers.md).
   */
  endPolls(endpointId: string, workerId: string): Promise<void> {
    return this.polls.end(endpointId, workerId)
  }

  /** The server is closing: every long poll answers now instead of holding the close up. */
  close(): void {
    this.polls.close()
  }

  /**
   * The endpoint, when the principal may use it: another account's endpoint is 404 like an
   * unknown one; a key restricted to other endpoints, or a read-only key writing, is 403.
   */
  async endpointFor(
    principal: Principal,
    endpointId: string,
    write: boolean,
  ): Promise<EndpointView> {
    const endpoint = await this.deps.endpoints.get(principal.accountId, endpointId)
    const access = decideAccess(principal, { write, endpointId })
    if (!access.allowed) throw new AppError('FORBIDDEN', access.detail)
    return endpoint
  }

  /**
   * `options.id` names the job (public model jobs record it before it is queued);
   * `options.trace` is the request that queues it, kept with the job for its spans.
   */
  async submit(
    endpoint: EndpointView,
    body: unknown,
    sync: boolean,
    options: { id?: string; trace?: TraceOrigin } = {},
  ): Promise<JobView> {
    const fields = parseSubmission(body, endpoint.timeout)
    if (fields.webhook !== undefined) {
      // Names are resolved here with a short timeout and a cache; each delivery checks again.
      const vetted = await this.deps.webhookEgress.vet(fields.webhook)
      if (!vetted.ok) throw badRequest([`body.webhook: ${vetted.problem}`])
    }
    await this.deps.billing?.assertCanRun(
      endpoint.accountId,
      `take new jobs on endpoint ${endpoint.id}`,
    )
    const job = newJob({
      id: options.id ?? (sync ? `${SYNC_JOB_ID_PREFIX}${timeOrderedUuid()}` : timeOrderedUuid()),
      endpointId: endpoint.id,
      accountId: endpoint.accountId,
      sync,
      createdAt: this.deps.clock.now(),
      ...fields,
      ...(options.trace ? { trace: options.trace } : {}),
    })
    await this.deps.queue.submit(job)
    this.deps.events?.submitted(endpoint.id)
    if (!job.policy.lowPriority && endpoint.workers.max > 0) this.deps.onQueued?.(endpoint.id)
    const { s3Config: _hidden, ...view } = job
    return view
  }

  async get(endpointId: string, jobId: string): Promise<JobView> {
    const job = await this.deps.queue.get(endpointId, jobId)
    if (job === undefined) throw jobNotFound(jobId)
    return job
  }

  /**
   * The job once it is terminal, or as it is when `waitMs` has passed. `known` is the job as the
   * caller has just read or written it (a /runsync submission), which saves the first read.
   */
  async waitForEnd(
    endpointId: string,
    jobId: string,
    waitMs: number,
    known?: JobView,
  ): Promise<JobView> {
    const deadline = this.pollNow() + waitMs
    let next = known
    for (;;) {
      const job = next ?? (await this.get(endpointId, jobId))
      next = undefined
      const remaining = deadline - this.pollNow()
      if (isTerminal(job.status) || remaining <= 0 || this.polls.closing.aborted) return job
      const ended = await this.deps.queue.waitForEnd(
        endpointId,
        jobId,
        remaining,
        job.version,
        this.polls.closing,
      )
      if (typeof ended === 'object') next = ended
    }
  }

  /**
   * Chunks not yet delivered; when there are none and the job is still running, waits up to
   * `waitMs` for one (or for the job to end).
   */
  async readStream(
    endpointId: string,
    jobId: string,
    waitMs: number,
  ): Promise<{ status: JobView['status']; chunks: StreamChunk[] }> {
    const job = await this.get(endpointId, jobId)
    let read = await this.deps.queue.readStream(endpointId, jobId)
    if (read === undefined) throw jobNotFound(jobId)
    if (read.chunks.length === 0 && !isTerminal(read.status) && waitMs > 0) {
      await this.deps.queue.waitForChange(
        endpointId,
        jobId,
        waitMs,
        job.version,
        this.polls.closing,
      )
      read = await this.deps.queue.readStream(endpointId, jobId)
      if (read === undefined) throw jobNotFound(jobId)
    }
    return { status: read.status, chunks: read.chunks }
  }

  /**
   * The chunks after `afterSeq`, for a reader that keeps its own position (the OpenAI route):
   * the delivered cursor of `/stream` is left alone. When there are none and the job is still
   * running, waits up to `waitMs` for one (or for the job to end).
   */
  async readStreamAfter(
    endpointId: string,
    jobId: string,
    afterSeq: number,
    waitMs: number,
  ): Promise<StreamRead> {
    const job = await this.get(endpointId, jobId)
    let read = await this.deps.queue.readStream(endpointId, jobId, afterSeq)
    if (read === undefined) throw jobNotFound(jobId)
    if (read.chunks.length === 0 && !isTerminal(read.status) && waitMs > 0) {
      // The version read before the chunks: a chunk appended in between ends the wait at once.
      await this.deps.queue.waitForChange(
        endpointId,
        jobId,
        waitMs,
        job.version,
        this.polls.closing,
      )
      read = await this.deps.queue.readStream(endpointId, jobId, afterSeq)
      if (read === undefined) throw jobNotFound(jobId)
    }
    return read
  }

  async cancel(endpointId: string, jobId: string): Promise<JobView> {
    const before =
      this.deps.events || this.deps.tracing
        ? await this.deps.queue.get(endpointId, jobId)
        : undefined
    const job = await this.deps.queue.cancel(endpointId, jobId)
    if (job === undefined) throw jobNotFound(jobId)
    if (before !== undefined && !isTerminal(before.status) && job.status === 'CANCELLED') {
      this.deps.events?.ended(endpointId, 'CANCELLED')
      if (this.deps.tracing) {
        const now = this.deps.clock.now().getTime()
        traceFinished(this.deps.tracing, job, now, before.status === 'IN_PROGRESS')
      }
    }
    return job
  }

  async retry(endpointId: string, jobId: string): Promise<JobView> {
    const result = await this.deps.queue.retry(endpointId, jobId)
    if (result.retried) return result.job
    if (result.reason === 'not-found') throw jobNotFound(jobId)
    throw new AppError(
      'RULE_CONFLICT',
      `job ${jobId} is ${result.status ?? 'not retryable'}: only FAILED or TIMED_OUT jobs can be retried`,
    )
  }

  purgeQueue(endpointId: string): Promise<number> {
    return this.deps.queue.purgeQueued(endpointId)
  }

  /**
   * `/health`: `jobs` and `workers` as RunPod's clients read them, and ours beside them, only
   * while the endpoint's workers fail in a row: `startBackoff`, why and when the next starts.
   */
  async health(endpointId: string): Promise<{
    jobs: JobCounts
    workers: WorkerCounts
    startBackoff?: StartBackoffView
  }> {
    const backoff = (await this.deps.roster?.startBackoff(endpointId)) ?? null
    return {
      jobs: await this.deps.queue.counts(endpointId),
      workers: this.workerCounts(endpointId),
      ...(backoff ? { startBackoff: backoff } : {}),
    }
  }

  /** `/health` worker counts: managed workers by their state, others by what they report. */
  workerCounts(endpointId: string): WorkerCounts {
    return this.deps.roster?.counts(endpointId) ?? this.deps.presence.counts(endpointId)
  }

  requests(endpointId: string, page: number, pageSize?: number): Promise<JobPage> {
    return this.deps.queue.list(endpointId, {
      page,
      ...(pageSize === undefined ? {} : { pageSize }),
    })
  }

  // ---- worker protocol ----

  /**
   * Up to `max` jobs for the worker, long-polling up to `waitMs` when the queue is empty.
   * `jobInProgress` false means the worker holds nothing (so what we remember is cleared); true
   * renews the leases of the jobs we know it holds. Once `signal` is aborted (the worker hung
   * up on its long poll) nothing more is taken: a job handed to a closed connection would sit
   * leased to nobody until its lease ran out.
   */
  async take(
    endpointId: string,
    workerId: string,
    options: { max: number; waitMs: number; jobInProgress: boolean; signal?: AbortSignal },
  ): Promise<Job[]> {
    const record = this.deps.presence.seen(
      endpointId,
      workerId,
      options.jobInProgress ? {} : { jobIds: [] },
    )
    const now = this.deps.clock.now().getTime()
    if (
      options.jobInProgress &&
      record.jobIds.size > 0 &&
      now - (record.leasesRenewedAt ?? 0) >= Math.min(TAKE_RENEWAL_INTERVAL_MS, this.leaseMs / 4)
    ) {
      record.leasesRenewedAt = now
      await this.deps.queue.heartbeat(endpointId, workerId, [...record.jobIds], this.leaseMs)
    }
    const deadline = this.pollNow() + options.waitMs
    return this.polls.run(endpointId, workerId, options.signal, async (signal) => {
      if (this.deps.roster && !this.deps.roster.takesJobs(endpointId, workerId)) {
        // A draining worker (stale version, recycling) gets nothing; it waits as on an empty
        // queue so that it does not spin.
        await sleep(this.pollClock, options.waitMs, signal)
        return []
      }
      return this.takeUntil(
        endpointId,
        { workerId, leaseMs: this.leaseMs, max: options.max, holdsNothing: !options.jobInProgress },
        deadline,
        signal,
      )
    })
  }

  /** Now, on the clock that sets the leases (ms since the epoch): when a take arrived. */
  nowMs(): number {
    return this.deps.clock.now().getTime()
  }

  /**
   * How long after `arrivedAtMs` (`nowMs()` when the take arrived) the earliest lease of `taken`
   * ends. A take's answer says so: a worker that counts it from when it sent the take knows a
   * time before which its lease cannot have ended, however long the take waited for work
   * (docs/worker-sdk.md, "Fencing").
   */
  leaseEndsAfterMs(taken: Job[], arrivedAtMs: number): number | undefined {
    const ends = taken.flatMap((job) =>
      job.leaseExpiresAt === undefined ? [] : [Date.parse(job.leaseExpiresAt)],
    )
    return ends.length === 0 ? undefined : Math.max(0, Math.min(...ends) - arrivedAtMs)
  }

  /**
   * Waits for work before taking: a take that finds nothing is a write transaction, several
   * times the cost of the check, and a worker that polls again right after its job (a worker of
   * concurrency 1, a `/runsync` chain) usually finds nothing (bench/README.md, step 16). A job
   * submitted while a worker of one job at a time waits is handed to it without a take at all
   * (step 20).
   */
  private async takeUntil(
    endpointId: string,
    taker: { workerId: string; leaseMs: number; max: number; holdsNothing: boolean },
    deadline: number,
    signal: AbortSignal,
  ): Promise<Job[]> {
    const { workerId, max } = taker
    for (;;) {
      const work =
        !signal.aborted &&
        (await this.deps.queue.waitToTake(endpointId, taker, deadline - this.pollNow(), signal))
      const jobs =
        typeof work === 'object'
          ? [work]
          : work && !signal.aborted
            ? await this.deps.queue.take(endpointId, workerId, {
                max,
                leaseMs: this.leaseMs,
                maxPayloadSize: TAKE_PAYLOAD_BUDGET,
              })
            : []
      if (jobs.length > 0 || !work || signal.aborted || deadline - this.pollNow() <= 0) {
        this.deps.presence.seen(endpointId, workerId, { taken: jobs.map((j) => j.id) })
        const events = this.deps.events
        if (events) {
          const nowMs = this.deps.clock.now().getTime()
          for (const job of jobs) events.started(endpointId, nowMs - Date.parse(job.createdAt))
        }
        const tracing = this.deps.tracing
        if (tracing) {
          const nowMs = this.deps.clock.now().getTime()
          for (const job of jobs) traceTaken(tracing, job, nowMs)
        }
        return jobs
      }
    }
  }

  async reportDone(
    endpointId: string,
    workerId: string,
    jobId: string,
    report: DoneReport,
  ): Promise<WorkerWriteResult | CompleteResult> {
    if (report.kind === 'progress') {
      this.deps.presence.seen(endpointId, workerId, { taken: [jobId] })
      const result = await this.deps.queue.progress(endpointId, jobId, workerId, report.output)
      if (result.applied) await this.renew(endpointId, workerId, jobId)
      return result
    }
    this.deps.presence.seen(endpointId, workerId, {
      finished: jobId,
      ...(report.stopPod ? { recycle: true } : {}),
    })
    const result = await this.deps.queue.complete(endpointId, jobId, workerId, {
      ...(report.output !== undefined ? { output: report.output } : {}),
      ...(report.error !== undefined ? { error: report.error } : {}),
    })
    if (result.applied) {
      const { executionTime } = jobTimings(result.job, this.deps.clock.now())
      const status = result.job.status === 'COMPLETED' ? 'COMPLETED' : 'FAILED'
      this.deps.events?.ended(endpointId, status, executionTime)
      if (this.deps.tracing) {
        traceFinished(this.deps.tracing, result.job, this.deps.clock.now().getTime())
      }
    }
    if (result.applied && this.deps.onJobFinished) {
      await this.deps.onJobFinished(result.job).catch(() => undefined)
    }
    return result
  }

  /** One stream chunk; `chunkIndex` (podyard's worker SDK) makes a repeat append nothing. */
  async appendStream(
    endpointId: string,
    workerId: string,
    jobId: string,
    output: unknown,
    chunkIndex?: number,
  ): Promise<WorkerWriteResult> {
    this.deps.presence.seen(endpointId, workerId, { taken: [jobId] })
    const result = await this.deps.queue.appendStream(
      endpointId,
      jobId,
      workerId,
      [output],
      chunkIndex,
    )
    if (result.applied) await this.renew(endpointId, workerId, jobId)
    return result
  }

  /**
   * The ids of the worker's jobs it must stop, long-polling up to `waitMs` for some; none are
   * handed out (and so lost) once `signal` says the worker hung up.
   */
  async stops(
    endpointId: string,
    workerId: string,
    waitMs: number,
    signal?: AbortSignal,
  ): Promise<string[]> {
    this.deps.presence.seen(endpointId, workerId)
    const deadline = this.pollNow() + waitMs
    // The poll is registered before the first read, so that `endPolls` meanwhile ends it too.
    const notices = await this.polls.run(endpointId, workerId, signal, async (ended) => {
      for (;;) {
        const found = await this.deps.queue.takeStops(endpointId, workerId)
        // Nothing, or only notices of attempts that are over (retired by takeStops): wait on.
        if (found.length > 0 || ended.aborted || deadline - this.pollNow() <= 0) return found
        const more = await this.deps.queue.waitForStops(
          endpointId,
          workerId,
          deadline - this.pollNow(),
          ended,
        )
        if (!more || signal?.aborted) return []
      }
    })
    return [...new Set(notices.map((n) => n.jobId))]
  }

  /** A heartbeat: renews the leases of the jobs the worker names; returns the ids renewed. */
  async ping(
    endpointId: string,
    workerId: string,
    ping: { jobIds: string[]; unhealthy?: { check: string; reason: string } },
  ): Promise<string[]> {
    this.deps.presence.seen(endpointId, workerId, {
      heartbeatJobIds: ping.jobIds,
      unhealthy: ping.unhealthy ?? null,
    })
    const renewed = await this.deps.queue.heartbeat(endpointId, workerId, ping.jobIds, this.leaseMs)
    if (renewed.length < ping.jobIds.length) {
      // It names jobs it holds no longer: tell it again to stop them (runpod-python drops a
      // notice that came before its task for the job started).
      const kept = new Set(renewed)
      const gone = ping.jobIds.filter((id) => !kept.has(id))
      await this.deps.queue.remindStops(endpointId, workerId, gone)
    }
    return renewed
  }

  private async renew(endpointId: string, workerId: string, jobId: string): Promise<void> {
    await this.deps.queue.heartbeat(endpointId, workerId, [jobId], this.leaseMs)
  }
}

function jobNotFound(jobId: string): AppError {
  return new AppError('NOT_FOUND', `job ${jobId} not found (unknown, expired or deleted)`)
}

/** Resolves after `ms` on `clock`, or at once when the signal aborts. */
function sleep(clock: TimerClock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted || ms <= 0) return resolve()
    const timer = clock.setTimer(ms, done)
    function done() {
      timer.cancel()
      signal?.removeEventListener('abort', done)
      resolve()
    }
    signal?.addEventListener('abort', done, { once: true })
  })
}
