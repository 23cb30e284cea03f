import { jobTimings, type JobView } from '../../domain/serverless/job.js'

/** What `/status` and friends answer (wire-compat §4.1): never `s3Config`, timings in ms. */
export interface JobBody {
  id: string
  status: JobView['status']
  delayTime: number
  executionTime: number
  output?: unknown
  error?: string
  workerId?: string
}

export function jobBody(job: JobView, now: Date): JobBody {
  return {
    id: job.id,
    status: job.status,
    ...jobTimings(job, now),
    ...(job.output !== undefined ? { output: job.output } : {}),
    ...(job.error !== undefined ? { error: job.error } : {}),
    ...(job.workerId !== undefined ? { workerId: job.workerId } : {}),
  }
}

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
