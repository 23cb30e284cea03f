import { jobTimings, type JobView } from './job.js'

/**
 * What `/status` and friends answer (wire-compat §4.1), and what a webhook receives: never
 * `s3Config`, timings in ms. In the domain so that both the job API and the queue (which stores
 * a webhook's payload with the terminal transition) build the same body.
 */
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
