import type { TraceOrigin } from '../../shared/tracing.js'
import type { Job, JobStatus, JobView, StreamChunk } from './job.js'

/** Why a worker's write was not applied. */
export type IgnoredReason =
  /** No such job (never submitted, or deleted by ttl, retention or purge). */
  | 'not-found'
  /** The job is not IN_PROGRESS (cancelled, timed out, finished, or re-queued). */
  | 'not-in-progress'
  /** Another worker holds the job now (this worker's lease expired and it was re-taken). */
  | 'not-owner'
  /** A stream chunk with a `chunk_index` already appended in this attempt (its answer was lost). */
  | 'duplicate'

export type WorkerWriteResult = { applied: true } | { applied: false; reason: IgnoredReason }

export type CompleteResult =
  { applied: true; job: JobView } | { applied: false; reason: IgnoredReason }

export type RetryResult =
  | { retried: true; job: JobView }
  | { retried: false; reason: 'not-found' | 'not-retryable'; status?: JobStatus }

export interface JobCounts {
  completed: number
  /** FAILED and TIMED_OUT jobs still retained. */
  failed: number
  inProgress: number
  inQueue: number
  /** Retained jobs that were retried at least once. */
  retried: number
}

export interface JobPage {
  /** Newest first. */
  jobs: JobView[]
  page: number
  pageSize: number
  total: number
}

export interface StreamRead {
  status: JobStatus
  chunks: StreamChunk[]
  /** The seq of the last chunk returned (or the position read from, when none): pass it back. */
  position: number
}

export interface StopNotice {
  jobId: string
  reason: 'cancelled' | 'timed-out' | 'expired' | 'lease-lost'
}

/** A job a sweep ended: past its execution deadline, or out of attempts (a lost worker's). */
export interface EndedJob {
  id: string
  endpointId: string
  status: 'TIMED_OUT' | 'FAILED'
  /** The job as the sweep left it, for its spans (absent where the row was not read back). */
  job?: JobView
}

/** A job a sweep deleted before it finished, because its ttl passed: for its spans. */
export interface ExpiredJob {
  id: string
  endpointId: string
  /** Its status when it was deleted. */
  status: 'IN_QUEUE' | 'IN_PROGRESS'
  attempts: number
  createdAt: string
  workerId?: string
  startedAt?: string
  trace?: TraceOrigin
}

/**
 * An attempt that ended because its worker was lost (its lease ended, or its host went DOWN)
 * while the job went back to the queue for another: the job as that attempt ran it, for the
 * attempt's spans.
 */
export type LostAttempt = Omit<ExpiredJob, 'status'>

/**
 * What a sweep of running jobs did: the ids it put back in the queue, the jobs it ended (the
 * metrics count them), and the attempts it cut short by requeuing (for their spans).
 */
export interface SweptJobs {
  requeued: string[]
  ended: EndedJob[]
  lost: LostAttempt[]
}

/**
 * The serverless job queue of all endpoints (docs/serverless-queue.md). Every method is scoped
 * by endpoint: a job id of another endpoint is `not-found`. Timestamps come from the
 * implementation's Clock; `now` arguments let a sweeper and tests name the instant.
 */
export interface JobQueue {
  /**
   * Stores a new IN_QUEUE job (see `newJob`) and wakes `waitToTake` on its endpoint; or, when a
   * worker of one job at a time waits there on an empty queue, hands the job to it (stored
   * IN_PROGRESS, as `take` would leave it).
   */
  submit(job: Job): Promise<void>
  /** The job without its s3Config, or undefined when unknown or deleted. */
  get(endpointId: string, id: string): Promise<JobView | undefined>
  /**
   * Atomically moves up to `max` of the endpoint's oldest IN_QUEUE, unexpired jobs to
   * IN_PROGRESS, owned by `workerId` with a lease of `leaseMs`. A job is never given to two
   * workers. Returns the whole jobs (s3Config included: this is the worker's view), oldest first.
   * With `maxPayloadSize`, it stops before the job that would take the characters of the jobs'
   * input, s3Config and webhook, as stored, past it; the first job is taken whatever its size.
   * A worker the store knows as retired (RETIRED_WORKER_PHASES) takes nothing; one the store
   * does not know (it connects by itself) takes as any.
   */
  take(
    endpointId: string,
    workerId: string,
    options: { max: number; leaseMs: number; maxPayloadSize?: number },
  ): Promise<Job[]>
  /** Renews the worker's leases on those of `jobIds` it still holds; returns the ids renewed. */
  heartbeat(
    endpointId: string,
    workerId: string,
    jobIds: string[],
    leaseMs: number,
  ): Promise<string[]>
  /** A progress update: replaces the output of a job the worker holds; it stays IN_PROGRESS. */
  progress(
    endpointId: string,
    jobId: string,
    workerId: string,
    output: unknown,
  ): Promise<WorkerWriteResult>
  /**
   * Appends stream chunks, numbered after the job's last one. With `firstIndex` (the worker's
   * index of the first chunk within its run), chunks whose first index is below the index after
   * the last numbered chunk of the job's current attempt are a repeat: nothing is appended
   * (`duplicate`).
   */
  appendStream(
    endpointId: string,
    jobId: string,
    workerId: string,
    chunks: unknown[],
    firstIndex?: number,
  ): Promise<WorkerWriteResult>
  /**
   * Stream chunks not yet read. With `afterSeq`, the chunks after it (nothing is marked: a
   * reader that keeps its own position). Without, the chunks after the job's delivered cursor,
   * which then moves past them: each cursor-less call (what RunPod's clients make) gets every
   * chunk once, in order. Undefined when the job is unknown.
   */
  readStream(endpointId: string, jobId: string, afterSeq?: number): Promise<StreamRead | undefined>
  /**
   * Finishes a job the worker holds: FAILED when `error` is given, else COMPLETED. Ignored, and
   * reported so, when the worker no longer holds it (lease lost, cancelled, timed out, deleted).
   */
  complete(
    endpointId: string,
    jobId: string,
    workerId: string,
    result: { output?: unknown; error?: string },
  ): Promise<CompleteResult>
  /**
   * Cancels an IN_QUEUE or IN_PROGRESS job (its worker gets a stop notice). Returns the job as
   * it is afterwards (unchanged when it had already finished), or undefined when unknown.
   */
  cancel(endpointId: string, id: string): Promise<JobView | undefined>
  /** Re-queues a FAILED or TIMED_OUT job: same id and input, output cleared, retries + 1. */
  retry(endpointId: string, id: string): Promise<RetryResult>
  /** Deletes the endpoint's IN_QUEUE jobs; returns how many. */
  purgeQueued(endpointId: string): Promise<number>
  /**
   * Deletes every job of the endpoint in any state, with its stream chunks and stop notices (the
   * endpoint is being deleted); wakes whoever waits on them. Returns how many jobs.
   */
  deleteEndpointJobs(endpointId: string): Promise<number>
  counts(endpointId: string): Promise<JobCounts>
  /** The endpoint's jobs, newest first, `pageSize` (default 50) per page from page 1. */
  list(endpointId: string, options: { page: number; pageSize?: number }): Promise<JobPage>
  /**
   * IN_PROGRESS jobs whose lease ended before `now`: back to IN_QUEUE (their worker gets a stop
   * notice), TIMED_OUT when their execution deadline has passed too, FAILED when it was their
   * last attempt (MAX_JOB_ATTEMPTS). Returns the ids requeued with their lost attempts, and the
   * jobs ended with their endpoints and statuses (the metrics count them).
   */
  requeueExpiredLeases(now: Date): Promise<SweptJobs>
  /**
   * Renews the lease of every running job whose lease ends before `until` to `until` (the
   * platform starts leading after an absence: docs/serverless-queue.md). Returns how many.
   */
  renewRunningLeases(until: Date): Promise<number>
  /**
   * Execution deadline passed -> TIMED_OUT; ttl passed -> deleted in any state; retention after
   * finishing passed -> deleted. Workers of running jobs affected get stop notices. Returns the
   * jobs it timed out (with their endpoints, for the metrics), the ids deleted, and of those the
   * jobs deleted unfinished (`expired`: their ttl passed while they waited or ran).
   */
  expire(now: Date): Promise<{ ended: EndedJob[]; deleted: string[]; expired: ExpiredJob[] }>
  /**
   * Takes (and forgets) the stop notices for the worker's jobs. A notice stops one attempt of a
   * job: one whose job this worker has taken again since (a later attempt) is dropped, not
   * returned.
   */
  takeStops(endpointId: string, workerId: string): Promise<StopNotice[]>
  /**
   * The worker says it runs `jobIds` (its heartbeat) but holds some of them no longer (cancelled,
   * timed out, deleted, or its lease lost): each gets a stop notice again unless one is waiting.
   * runpod-python ignores a notice that arrives before its task for the job has started, so it is
   * told again for as long as it names the job. Returns how many notices were added.
   */
  remindStops(endpointId: string, workerId: string, jobIds: string[]): Promise<number>
  /**
   * Resolves true as soon as the job's `version` differs from `sinceVersion` (or, without it,
   * from the version when the wait began) or the job is gone; false after `timeoutMs`.
   */
  waitForChange(
    endpointId: string,
    jobId: string,
    timeoutMs: number,
    sinceVersion?: number,
    signal?: AbortSignal,
  ): Promise<boolean>
  /**
   * `waitForChange` for a waiter that wants the job's end (`/runsync`, `/status-sync`): the
   * queue's own writes that leave the job unfinished do not wake it, and the write that finishes
   * it hands the job over. Resolves with that job, `true` when the job must be read again (a
   * change made elsewhere), `false` on timeout.
   */
  waitForEnd(
    endpointId: string,
    jobId: string,
    timeoutMs: number,
    sinceVersion: number,
    signal?: AbortSignal,
  ): Promise<JobView | boolean>
  /**
   * A worker ready for up to `max` jobs waits for work: resolves true as soon as the endpoint has
   * an IN_QUEUE job to take, or, for a worker that takes one job at a time (`max` 1) or holds
   * none (`holdsNothing`), with the job itself when one submitted meanwhile was handed to it
   * (already its running job under a lease of `leaseMs`: no `take` needed); false after
   * `timeoutMs` (or once `signal` aborts, as for the other waits). A retired worker (`take`)
   * waits as on an empty queue and is handed nothing.
   */
  waitToTake(
    endpointId: string,
    taker: { workerId: string; leaseMs: number; max: number; holdsNothing?: boolean },
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<Job | boolean>
  /** Resolves true as soon as the worker has a stop notice; false after `timeoutMs`. */
  waitForStops(
    endpointId: string,
    workerId: string,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<boolean>
  /**
   * Ends the leases of the worker's running jobs now (the worker is gone): the next sweep puts
   * them back in the queue, or fails them after MAX_JOB_ATTEMPTS. Returns how many.
   */
  releaseWorker(endpointId: string, workerId: string): Promise<number>
  /**
   * The worker is lost and can no longer be stopped (its host is DOWN): its running jobs go back
   * to the queue now, under the rules of an ended lease (TIMED_OUT past their deadline, FAILED
   * after MAX_JOB_ATTEMPTS), in one transaction, and nothing it sends afterwards is applied.
   * With `retire` (a managed worker), its stored phase is written first in that transaction, so
   * that no take sees its jobs back in the queue without seeing it retired (`take`). Returns
   * the ids requeued with their lost attempts, and the jobs that ended.
   */
  requeueWorkerJobs(
    endpointId: string,
    workerId: string,
    retire?: WorkerRetirement,
  ): Promise<SweptJobs>
  /**
   * The worker died of something another attempt would die of too (it ran out of memory): its
   * running jobs end now, FAILED with `error` (TIMED_OUT past their deadline), in one
   * transaction, and nothing it sends afterwards is applied. Returns the jobs that ended.
   */
  failWorkerJobs(endpointId: string, workerId: string, error: string): Promise<SweptJobs>
  /** What the autoscaler looks at (docs/serverless-workers.md). */
  scalingStats(endpointId: string): Promise<ScalingStats>
}

/** A lost worker's stored phase, written with the requeue of its jobs (`requeueWorkerJobs`). */
export interface WorkerRetirement {
  phase: 'UNHEALTHY' | 'STOPPED'
  reason: string | null
  /** Its `phaseChangedAt` (ISO 8601). */
  changedAt: string
}

export interface ScalingStats {
  /** Queued jobs that are not lowPriority (lowPriority jobs never cause a scale-up). */
  queued: number
  /** Submission time of the oldest of those, or null. */
  oldestQueuedAt: string | null
  /** Running jobs, any priority. */
  inProgress: number
  /**
   * The running jobs by the worker that holds their lease (worker id -> count): what the store
   * knows a worker holds, whatever its last heartbeat said.
   */
  heldByWorker: ReadonlyMap<string, number>
}
