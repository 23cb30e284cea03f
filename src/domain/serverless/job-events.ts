import type { JobStatus } from './job.js'

/** The statuses a job ends in, as the job metrics count them. */
export type JobEnd = Extract<JobStatus, 'COMPLETED' | 'FAILED' | 'TIMED_OUT' | 'CANCELLED'>

/**
 * What happens to jobs, for the platform's metrics (docs/production.md, "Monitoring"). Told
 * after the store recorded it; a listener must be quick and must not throw.
 */
export interface JobEvents {
  submitted(endpointId: string): void
  /** A worker took the job `delayMs` after it was submitted. */
  started(endpointId: string, delayMs: number): void
  /** The job ended; `executionMs` when it ran. */
  ended(endpointId: string, status: JobEnd, executionMs?: number): void
}
