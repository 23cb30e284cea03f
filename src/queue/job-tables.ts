import type {
  JobsTable,
  JobStopsTable,
  JobStreamTable,
  WebhookAttemptsTable,
  WebhookDeliveriesTable,
  WorkersTable,
} from '../store/database-schema.js'

export type {
  JobsTable,
  JobStopsTable,
  JobStreamTable,
  WebhookAttemptsTable,
  WebhookDeliveriesTable,
} from '../store/database-schema.js'

/** The columns of a worker the queue reads and writes: its phase and why. */
export type WorkerPhasesTable = Pick<WorkersTable, 'id' | 'phase' | 'reason' | 'phase_changed_at'>

/**
 * The queue's tables: the store's declarations (store/database-schema.ts, the one the
 * migrations follow), narrowed to what the queue touches.
 */
export interface JobQueueDatabase {
  jobs: JobsTable
  workers: WorkerPhasesTable
  job_stream: JobStreamTable
  job_stops: JobStopsTable
  webhook_deliveries: WebhookDeliveriesTable
  webhook_attempts: WebhookAttemptsTable
}
