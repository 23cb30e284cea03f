import { TRACE_ATTRIBUTES as A, type Tracing } from '../../shared/tracing.js'
import { lostAttemptReason, type Job, type JobView } from './job.js'
import type { ExpiredJob, LostAttempt } from './ports.js'

/**
 * A job's spans (docs/production.md, "Tracing"), children of the request that queued it (its
 * stored traceparent), so they join that request's trace whichever replica takes or finishes
 * the job. They are written when each step is over, from the job's own times: `job.queued`
 * when a worker takes it (created to taken), `job.taken` and `job.done` (or `job.failed`) when
 * the worker reports its result (taken to finished), `job.cancelled` when it is cancelled,
 * `job.expired` when the sweep deletes it unfinished, `job.requeued` when its worker was lost on
 * an attempt that was not its last.
 */
export function traceTaken(tracing: Tracing, job: Job, takenAt: number): void {
  if (job.trace === undefined) return
  const span = tracing.startSpan('job.queued', {
    parent: job.trace.traceparent,
    startTime: Date.parse(job.createdAt),
    attributes: {
      [A.jobId]: job.id,
      [A.endpointId]: job.endpointId,
      [A.requestId]: job.trace.requestId,
      [A.workerId]: job.workerId,
      [A.jobAttempt]: job.attempts,
    },
  })
  span.end(job.startedAt === undefined ? takenAt : Date.parse(job.startedAt))
}

const RESULT_SPANS: Partial<Record<JobView['status'], string>> = {
  COMPLETED: 'job.done',
  FAILED: 'job.failed',
  CANCELLED: 'job.cancelled',
  TIMED_OUT: 'job.timed_out',
}

/**
 * The spans of a job that ended: `job.taken` with its result under it (`job.done`,
 * `job.failed`, `job.cancelled`); for a job cancelled in the queue (`taken` false), its
 * `job.queued` span with the result under it instead.
 */
export function traceFinished(
  tracing: Tracing,
  job: JobView,
  finishedAt: number,
  taken = true,
): void {
  if (job.trace === undefined) return
  const attributes = {
    [A.jobId]: job.id,
    [A.endpointId]: job.endpointId,
    [A.requestId]: job.trace.requestId,
    [A.workerId]: job.workerId,
    [A.jobAttempt]: job.attempts,
    [A.jobStatus]: job.status,
    [A.reason]: job.status === 'COMPLETED' ? undefined : (job.error ?? job.status),
  }
  const ended = job.completedAt === undefined ? finishedAt : Date.parse(job.completedAt)
  const step = tracing.startSpan(taken ? 'job.taken' : 'job.queued', {
    parent: job.trace.traceparent,
    startTime:
      taken && job.startedAt !== undefined ? Date.parse(job.startedAt) : Date.parse(job.createdAt),
    attributes,
  })
  const failed = job.status !== 'COMPLETED'
  const result = tracing.startSpan(RESULT_SPANS[job.status] ?? 'job.failed', {
    parent: step.traceparent,
    startTime: ended,
    attributes,
  })
  if (failed) {
    const reason = job.error ?? job.status
    result.fail(reason)
    step.fail(reason)
  }
  result.end(ended)
  step.end(ended)
}

/** `podyard.reason` of a job deleted unfinished because its ttl passed. */
export const EXPIRED_REASON = 'EXPIRED'

/**
 * The spans of a job the sweep deleted unfinished because its ttl passed: `job.queued` (it
 * waited) or `job.taken` (it ran), with `job.expired` under it at the sweep, both failed with
 * the reason `EXPIRED`. Its trace ends there: nothing more happens to a deleted job.
 */
export function traceExpired(tracing: Tracing, job: ExpiredJob, expiredAt: number): void {
  if (job.trace === undefined) return
  const attributes = {
    [A.jobId]: job.id,
    [A.endpointId]: job.endpointId,
    [A.requestId]: job.trace.requestId,
    [A.workerId]: job.workerId,
    [A.jobAttempt]: job.attempts,
    [A.jobStatus]: job.status,
    [A.reason]: EXPIRED_REASON,
  }
  const ran = job.status === 'IN_PROGRESS' && job.startedAt !== undefined
  const step = tracing.startSpan(ran ? 'job.taken' : 'job.queued', {
    parent: job.trace.traceparent,
    startTime: Date.parse(ran ? job.startedAt! : job.createdAt),
    attributes,
  })
  const result = tracing.startSpan('job.expired', {
    parent: step.traceparent,
    startTime: expiredAt,
    attributes,
  })
  const why = `${EXPIRED_REASON}: its ttl passed before it finished`
  result.fail(why)
  step.fail(why)
  result.end(expiredAt)
  step.end(expiredAt)
}

/**
 * The spans of an attempt whose worker was lost (its lease ended, or its host went DOWN) while
 * the job went back to the queue for another: `job.taken` from the take until then, with
 * `job.requeued` under it, both failed with the reason and `podyard.job.status` `IN_QUEUE`.
 * The job's trace goes on with its next attempt.
 */
export function traceLostAttempt(tracing: Tracing, job: LostAttempt, lostAt: number): void {
  if (job.trace === undefined) return
  const reason = lostAttemptReason(job.attempts)
  const attributes = {
    [A.jobId]: job.id,
    [A.endpointId]: job.endpointId,
    [A.requestId]: job.trace.requestId,
    [A.workerId]: job.workerId,
    [A.jobAttempt]: job.attempts,
    [A.jobStatus]: 'IN_QUEUE',
    [A.reason]: reason,
  }
  const step = tracing.startSpan('job.taken', {
    parent: job.trace.traceparent,
    startTime: Date.parse(job.startedAt ?? job.createdAt),
    attributes,
  })
  const result = tracing.startSpan('job.requeued', {
    parent: step.traceparent,
    startTime: lostAt,
    attributes,
  })
  result.fail(reason)
  step.fail(reason)
  result.end(lostAt)
  step.end(lostAt)
}
