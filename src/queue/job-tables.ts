import type { Kysely } from 'kysely'
import type {
  Database,
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

/**
 * The queue's tables of a store database: `JobQueueDatabase` when each of them is a table of
 * `Store` of the same columns (or more), else a compile error.
 */
type QueueTablesOf<Store extends { [Table in keyof JobQueueDatabase]: JobQueueDatabase[Table] }> =
  Store extends unknown ? JobQueueDatabase : never

/**
 * The store's Kysely instance narrowed to the queue's tables. Kysely's types do not narrow
 * (a `Kysely<Database>` is not a `Kysely<JobQueueDatabase>`), hence the one cast, which
 * QueueTablesOf checks is a narrowing.
 */
export function queueTablesOf(db: Kysely<Database>): Kysely<JobQueueDatabase> {
  return db as unknown as Kysely<QueueTablesOf<Database>>
}
