import type { Generated } from 'kysely'

/**
 * The queue's own view of its tables. The queue layer may not import the store (docs/architecture.md), so
 * these repeat the declarations in src/store/database-schema.ts; test/job-queue.test.ts checks
 * that the two agree.
 */
/** The serverless job queue (src/queue, docs/serverless-queue.md). */
export interface JobsTable {
  seq: Generated<number>
  id: string
  endpoint_id: string
  account_id: string
  status: string
  /** 1 for a /runsync job (1-minute retention), 0 for /run (30 minutes). */
  sync: number
  low_priority: number
  execution_timeout_ms: number
  ttl_ms: number
  input: string
  webhook: string | null
  s3_config: string | null
  output: string | null
  error: string | null
  worker_id: string | null
  attempts: Generated<number>
  retries: Generated<number>
  version: Generated<number>
  /** The seq of the last stream chunk appended. */
  stream_seq: Generated<number>
  /** The seq of the last stream chunk handed to a cursor-less /stream reader. */
  stream_delivered: Generated<number>
  /** The attempt whose `chunk_index`es `stream_next_index` counts (migration 0017). */
  stream_attempt: Generated<number>
  /** The `chunk_index` after the last chunk appended in `stream_attempt`; below it, a repeat. */
  stream_next_index: Generated<number>
  /** Characters of input, s3_config and webhook as stored (migration 0020): a take's budget. */
  payload_size: Generated<number>
  created_at: string
  started_at: string | null
  completed_at: string | null
  expires_at: string
  lease_expires_at: string | null
  deadline_at: string | null
  retain_until: string | null
  /** The queuing request's span as a W3C traceparent (migration 0025); null: not traced. */
  trace_parent: string | null
  /** The queuing request's id (migration 0025). */
  request_id: string | null
}

export interface JobStreamTable {
  job_id: string
  seq: number
  output: string
}

/** Jobs a worker must stop (cancelled, timed out, expired, lease lost), until it is told. */
export interface JobStopsTable {
  seq: Generated<number>
  endpoint_id: string
  worker_id: string
  job_id: string
  reason: string
  created_at: string
  /** The job's attempt the notice stops (migration 0015); 0 for notices written before it. */
  attempt: Generated<number>
}

/** Webhook deliveries of finished jobs (docs/job-api.md "Webhooks"), with their own payload copy. */
export interface WebhookDeliveriesTable {
  seq: Generated<number>
  job_id: string
  endpoint_id: string
  account_id: string
  url: string
  /** The terminal job status that caused the delivery. */
  job_status: string
  /** The JSON text POSTed: the job's `/status` body when it became terminal. */
  payload: string
  /** pending, delivered or failed. */
  status: string
  attempts: Generated<number>
  next_attempt_at: string | null
  created_at: string
  finished_at: string | null
}

/** One POST of a webhook delivery. */
export interface WebhookAttemptsTable {
  delivery_seq: number
  attempt: number
  started_at: string
  duration_ms: number
  http_status: number | null
  error: string | null
  /** delivered or failed. */
  outcome: string
}

/**
 * The managed workers' phases (migration 0010-workers; the rest of the row is the store's):
 * a take refuses a worker the store knows as gone for good (RETIRED_PHASES), and a lost
 * worker's phase is written in the transaction that requeues its jobs.
 */
export interface WorkerPhasesTable {
  id: string
  phase: string
  reason: string | null
  phase_changed_at: string
}

export interface JobQueueDatabase {
  jobs: JobsTable
  workers: WorkerPhasesTable
  job_stream: JobStreamTable
  job_stops: JobStopsTable
  webhook_deliveries: WebhookDeliveriesTable
  webhook_attempts: WebhookAttemptsTable
}
