import type { JobEvents } from '../domain/serverless/job-events.js'
import { traceFinished, traceLostAttempt } from '../domain/serverless/job-tracing.js'
import type { EndedJob, LostAttempt } from '../domain/serverless/ports.js'
import type { Tracing } from '../shared/tracing.js'

/** Who is told of the jobs that no worker's report ended: the metrics and the tracing. */
export interface SweptJobObservers {
  /** Counts the jobs ended (`podyard_jobs_ended_total`). */
  events?: Pick<JobEvents, 'ended'>
  /** Ends their spans (absent: no tracing). */
  tracing?: Tracing
}

/**
 * The jobs the platform ended or requeued itself at `atMs` (the sweep's ended leases and
 * deadlines, a lost worker's or host's jobs, an out-of-memory worker's jobs): each ended job is
 * counted and its spans end; each attempt cut short by a requeue gets its own spans.
 */
export function observeSweptJobs(
  observers: SweptJobObservers,
  swept: { ended: readonly EndedJob[]; lost?: readonly LostAttempt[] },
  atMs: number,
): void {
  const { events, tracing } = observers
  for (const job of swept.ended) {
    events?.ended(job.endpointId, job.status)
    if (tracing && job.job) traceFinished(tracing, job.job, atMs, job.job.startedAt !== undefined)
  }
  if (tracing) for (const attempt of swept.lost ?? []) traceLostAttempt(tracing, attempt, atMs)
}
