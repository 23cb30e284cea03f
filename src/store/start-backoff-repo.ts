import type { Kysely, Selectable } from 'kysely'
import type { StartBackoff, StartBackoffRepo } from '../domain/serverless/start-backoff.js'
import type { Database, WorkerStartBackoffsTable } from './database-schema.js'

function toBackoff(row: Selectable<WorkerStartBackoffsTable>): StartBackoff {
  return {
    endpointId: row.endpoint_id,
    failures: Number(row.failures),
    lastFailure: {
      workerId: row.last_worker_id,
      reason: row.last_reason,
      at: new Date(row.last_failed_at).toISOString(),
    },
    nextStartAt: new Date(row.next_start_at).toISOString(),
  }
}

/** The endpoints' crash-loop backoffs (migration 0016), one row per endpoint while failing. */
export class KyselyStartBackoffRepo implements StartBackoffRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async list(): Promise<StartBackoff[]> {
    const rows = await this.db.selectFrom('worker_start_backoffs').selectAll().execute()
    return rows.map(toBackoff)
  }

  async put(backoff: StartBackoff): Promise<void> {
    const fields = {
      failures: backoff.failures,
      last_worker_id: backoff.lastFailure.workerId,
      last_reason: backoff.lastFailure.reason,
      last_failed_at: backoff.lastFailure.at,
      next_start_at: backoff.nextStartAt,
    }
    await this.db
      .insertInto('worker_start_backoffs')
      .values({ endpoint_id: backoff.endpointId, ...fields })
      .onConflict((oc) => oc.column('endpoint_id').doUpdateSet(fields))
      .execute()
  }

  async delete(endpointId: string): Promise<void> {
    await this.db
      .deleteFrom('worker_start_backoffs')
      .where('endpoint_id', '=', endpointId)
      .execute()
  }
}
