import { jobTimings, type JobView } from '../../domain/serverless/job.js'

// The `/status` body lives in the domain: webhooks (src/queue, src/control) send the same JSON.
export { jobBody, type JobBody } from '../../domain/serverless/job-body.js'

/** One line of `/requests`: the job without its output. */
export function requestLine(job: JobView, now: Date) {
  return {
    id: job.id,
    status: job.status,
    ...jobTimings(job, now),
    ...(job.workerId !== undefined ? { workerId: job.workerId } : {}),
    createdAt: job.createdAt,
    ...(job.completedAt !== undefined ? { completedAt: job.completedAt } : {}),
    attempts: job.attempts,
    retries: job.retries,
  }
}
