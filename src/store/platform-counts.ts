import { sql, type Kysely } from 'kysely'
import type { Database } from './database-schema.js'

/**
 * What the platform's gauges read from the store (wiring/platform-metrics.ts): counts over the
 * jobs, workers and pods tables, so that the metrics name no table or SQL of their own.
 */
export class PlatformCounts {
  constructor(private readonly db: Kysely<Database>) {}

  /** Jobs waiting for a worker (IN_QUEUE), per endpoint that has any. */
  async queuedJobsByEndpoint(): Promise<Array<{ endpointId: string; count: number }>> {
    const rows = await this.db
      .selectFrom('jobs')
      .select(['endpoint_id', sql<number>`count(*)`.as('count')])
      .where('status', '=', 'IN_QUEUE')
      .groupBy('endpoint_id')
      .execute()
    return rows.map((row) => ({ endpointId: row.endpoint_id, count: Number(row.count) }))
  }

  /** When the oldest job waiting for a worker was queued (ISO time), per endpoint. */
  async oldestQueuedJobByEndpoint(): Promise<Array<{ endpointId: string; oldest: string | null }>> {
    const rows = await this.db
      .selectFrom('jobs')
      .select(['endpoint_id', sql<string | null>`min(created_at)`.as('oldest')])
      .where('status', '=', 'IN_QUEUE')
      .groupBy('endpoint_id')
      .execute()
    return rows.map((row) => ({ endpointId: row.endpoint_id, oldest: row.oldest }))
  }

  /** Every worker the platform manages, with its phase. */
  async workerPhases(): Promise<Array<{ id: string; phase: string }>> {
    return this.db.selectFrom('workers').select(['id', 'phase']).execute()
  }

  /** The number of pods in each status that has any. */
  async podsByStatus(): Promise<Array<{ status: string; count: number }>> {
    const rows = await this.db
      .selectFrom('pods')
      .select(['status', sql<number>`count(*)`.as('count')])
      .groupBy('status')
      .execute()
    return rows.map((row) => ({ status: row.status, count: Number(row.count) }))
  }
}
