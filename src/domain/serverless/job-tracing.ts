import { TRACE_ATTRIBUTES as A, type Tracing } from '../../shared/tracing.js'
import type { Job, JobView } from './job.js'

/**
 * A job's spans (docs/production.md, "Tracing"), children of the request that queued it (its
 * stored traceparent), so they join that request's trace whichever replica takes or finishes
 * the job. They are written when each step is over, from the job's own times: `job.queued`
 * when a worker takes it (created to taken), `job.taken` and `job.done` (or `job.failed`) when
 * the worker reports its result (taken to finished).
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

export function traceFinished(tracing: Tracing, job: JobView, finishedAt: number): void {
  if (job.trace === undefined) return
  const attributes = {
    [A.jobId]: job.id,
    [A.endpointId]: job.endpointId,
    [A.requestId]: job.trace.requestId,
    [A.workerId]: job.workerId,
    [A.jobAttempt]: job.attempts,
    [A.jobStatus]: job.status,
  }
  const ended = job.completedAt === undefined ? finishedAt : Date.parse(job.completedAt)
  const taken = tracing.startSpan('job.taken', {
    parent: job.trace.traceparent,
    startTime: job.startedAt === undefined ? ended : Date.parse(job.startedAt),
    attributes,
  })
  const failed = job.status !== 'COMPLETED'
  const result = tracing.startSpan(failed ? 'job.failed' : 'job.done', {
    parent: taken.traceparent,
    startTime: ended,
    attributes,
  })
  if (failed) {
    const reason = job.error ?? job.status
    result.fail(reason)
    taken.fail(reason)
  }
  result.end(ended)
  taken.end(ended)
}
