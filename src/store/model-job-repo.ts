import type { Kysely, Selectable } from 'kysely'
import type { ModelJobRecord, ModelJobRepo } from '../domain/models/ports.js'
import type { Database, ModelJobsTable } from './database-schema.js'

const iso = (value: unknown): string => new Date(value as string).toISOString()
const isoOrNull = (value: unknown): string | null => (value === null ? null : iso(value))

function recordOf(row: Selectable<ModelJobsTable>): ModelJobRecord {
  return {
    jobId: row.job_id,
    modelId: row.model_id,
    endpointId: row.endpoint_id,
    accountId: row.account_id,
    maxPriceNano: Number(row.max_price_nano),
    costNano: row.cost_nano === null ? null : Number(row.cost_nano),
    objectKey: row.object_key,
    createdAt: iso(row.created_at),
    settledAt: isoOrNull(row.settled_at),
    objectExpiresAt: isoOrNull(row.object_expires_at),
  }
}

/** Public model jobs (migration 0012). */
export class KyselyModelJobRepo implements ModelJobRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(record: ModelJobRecord): Promise<void> {
    await this.db
      .insertInto('model_jobs')
      .values({
        job_id: record.jobId,
        model_id: record.modelId,
        endpoint_id: record.endpointId,
        account_id: record.accountId,
        max_price_nano: record.maxPriceNano,
        cost_nano: record.costNano,
        object_key: record.objectKey,
        created_at: record.createdAt,
        settled_at: record.settledAt,
        object_expires_at: record.objectExpiresAt,
      })
      .execute()
  }

  async find(jobId: string): Promise<ModelJobRecord | undefined> {
    const row = await this.db
      .selectFrom('model_jobs')
      .selectAll()
      .where('job_id', '=', jobId)
      .executeTakeFirst()
    return row && recordOf(row)
  }

  async claimSettlement(
    jobId: string,
    settlement: {
      costNano: number
      objectKey: string | null
      objectExpiresAt: string | null
      settledAt: string
    },
  ): Promise<boolean> {
    // One conditional update: of racing settlers (readers, the completion hook, replicas)
    // exactly one sees a row change, and only it charges.
    const result = await this.db
      .updateTable('model_jobs')
      .set({
        cost_nano: settlement.costNano,
        object_key: settlement.objectKey,
        object_expires_at: settlement.objectExpiresAt,
        settled_at: settlement.settledAt,
      })
      .where('job_id', '=', jobId)
      .where('settled_at', 'is', null)
      .executeTakeFirst()
    return Number(result.numUpdatedRows) === 1
  }

  async listExpiredObjects(before: string, limit: number): Promise<ModelJobRecord[]> {
    const rows = await this.db
      .selectFrom('model_jobs')
      .selectAll()
      .where('object_key', 'is not', null)
      .where('object_expires_at', '<', before)
      .orderBy('object_expires_at')
      .limit(limit)
      .execute()
    return rows.map(recordOf)
  }

  async clearObject(jobId: string): Promise<void> {
    await this.db
      .updateTable('model_jobs')
      .set({ object_key: null })
      .where('job_id', '=', jobId)
      .execute()
  }
}
