import type { Kysely, Selectable } from 'kysely'
import type { Database } from '../store/database-schema.js'
import {
  storeCapabilities,
  type StoreCapabilities,
  type StoreDialect,
} from '../shared/store-capabilities.js'
import { jobBody } from '../domain/serverless/job-body.js'
import type { JobStatus, JobView } from '../domain/serverless/job.js'
import type {
  ClaimedWebhook,
  WebhookAttempt,
  WebhookDelivery,
  WebhookDeliveryRepo,
  WebhookDeliveryStatus,
} from '../domain/serverless/webhook-delivery.js'
import { queueTablesOf, type JobQueueDatabase, type WebhookAttemptsTable } from './job-tables.js'

type Db = Kysely<JobQueueDatabase>

const iso = (ms: number) => new Date(ms).toISOString()

/**
 * Adds the pending delivery of a job that has just become terminal (called by the job queue
 * inside the transaction of that transition, so a terminal job with a webhook always has its
 * delivery, even if the server dies right after). The payload is the job's `/status` body.
 */
export async function insertWebhookDelivery(db: Db, job: JobView, now: number): Promise<void> {
  if (job.webhook === undefined) return
  await db
    .insertInto('webhook_deliveries')
    .values({
      job_id: job.id,
      endpoint_id: job.endpointId,
      account_id: job.accountId,
      url: job.webhook,
      job_status: job.status,
      payload: JSON.stringify(jobBody(job, new Date(now))),
      status: 'pending',
      next_attempt_at: iso(now),
      created_at: iso(now),
      finished_at: null,
    })
    .execute()
}

function toAttempt(row: Selectable<WebhookAttemptsTable>): WebhookAttempt {
  return {
    attempt: Number(row.attempt),
    at: row.started_at,
    durationMs: Number(row.duration_ms),
    ...(row.http_status !== null ? { httpStatus: Number(row.http_status) } : {}),
    ...(row.error !== null ? { error: row.error } : {}),
    outcome: row.outcome as WebhookAttempt['outcome'],
  }
}

/** Webhook deliveries over the store (migration 0007-webhook-deliveries). */
export class KyselyWebhookDeliveries implements WebhookDeliveryRepo {
  private readonly db: Db
  private readonly capabilities: StoreCapabilities

  constructor(options: {
    /** The store's Kysely instance (`store.db`), narrowed to the queue's tables. */
    db: Kysely<Database>
    dialect: StoreDialect
  }) {
    this.db = queueTablesOf(options.db)
    this.capabilities = storeCapabilities(options.dialect)
  }

  async claimDue(now: Date, limit: number, claimMs: number): Promise<ClaimedWebhook[]> {
    const max = Math.max(0, Math.floor(limit))
    if (max === 0) return []
    return this.db.transaction().execute(async (tx) => {
      let query = tx
        .selectFrom('webhook_deliveries')
        .select(['seq', 'job_id', 'url', 'payload', 'attempts', 'next_attempt_at'])
        .where('status', '=', 'pending')
        .where('next_attempt_at', '<=', now.toISOString())
        .orderBy('next_attempt_at')
        .orderBy('seq')
        .limit(max)
      // Other replicas' dispatchers pass locked rows by; on SQLite the single writer serialises.
      if (this.capabilities.skipLocked) query = query.forUpdate().skipLocked()
      const rows = await query.execute()
      const claimed: ClaimedWebhook[] = []
      const until = iso(now.getTime() + claimMs)
      for (const row of rows) {
        const updated = await tx
          .updateTable('webhook_deliveries')
          .set({ next_attempt_at: until })
          .where('seq', '=', row.seq)
          .where('status', '=', 'pending')
          .where('next_attempt_at', '=', row.next_attempt_at)
          .executeTakeFirst()
        if (Number(updated.numUpdatedRows) === 0) continue
        claimed.push({
          id: Number(row.seq),
          jobId: row.job_id,
          url: row.url,
          payload: row.payload,
          attemptsMade: Number(row.attempts),
        })
      }
      return claimed
    })
  }

  async recordAttempt(
    id: number,
    attempt: WebhookAttempt,
    next: {
      status: WebhookDeliveryStatus
      nextAttemptAt: string | null
      finishedAt: string | null
    },
  ): Promise<boolean> {
    return this.db.transaction().execute(async (tx) => {
      const updated = await tx
        .updateTable('webhook_deliveries')
        .set({
          status: next.status,
          attempts: attempt.attempt,
          next_attempt_at: next.nextAttemptAt,
          finished_at: next.finishedAt,
        })
        .where('seq', '=', id)
        .where('status', '=', 'pending')
        .where('attempts', '=', attempt.attempt - 1)
        .executeTakeFirst()
      if (Number(updated.numUpdatedRows) === 0) return false
      await tx
        .insertInto('webhook_attempts')
        .values({
          delivery_seq: id,
          attempt: attempt.attempt,
          started_at: attempt.at,
          duration_ms: Math.max(0, Math.round(attempt.durationMs)),
          http_status: attempt.httpStatus ?? null,
          error: attempt.error ?? null,
          outcome: attempt.outcome,
        })
        .execute()
      return true
    })
  }

  async release(id: number, at: Date): Promise<void> {
    await this.db
      .updateTable('webhook_deliveries')
      .set({ next_attempt_at: at.toISOString() })
      .where('seq', '=', id)
      .where('status', '=', 'pending')
      .execute()
  }

  async forJob(accountId: string, endpointId: string, jobId: string): Promise<WebhookDelivery[]> {
    const rows = await this.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('endpoint_id', '=', endpointId)
      .where('job_id', '=', jobId)
      .where('account_id', '=', accountId)
      .orderBy('seq')
      .execute()
    if (rows.length === 0) return []
    const attempts = await this.db
      .selectFrom('webhook_attempts')
      .selectAll()
      .where(
        'delivery_seq',
        'in',
        rows.map((r) => r.seq),
      )
      .orderBy('delivery_seq')
      .orderBy('attempt')
      .execute()
    return rows.map((row) => {
      const delivery: WebhookDelivery = {
        id: Number(row.seq),
        jobId: row.job_id,
        endpointId: row.endpoint_id,
        accountId: row.account_id,
        url: row.url,
        jobStatus: row.job_status as JobStatus,
        status: row.status as WebhookDeliveryStatus,
        createdAt: row.created_at,
        attempts: attempts.filter((a) => Number(a.delivery_seq) === Number(row.seq)).map(toAttempt),
      }
      if (row.status === 'pending' && row.next_attempt_at !== null) {
        delivery.nextAttemptAt = row.next_attempt_at
      }
      if (row.finished_at !== null) delivery.finishedAt = row.finished_at
      return delivery
    })
  }

  async purgeFinished(before: Date): Promise<number> {
    // Attempts go with their delivery (on delete cascade).
    const result = await this.db
      .deleteFrom('webhook_deliveries')
      .where('status', '<>', 'pending')
      .where('finished_at', '<=', before.toISOString())
      .executeTakeFirst()
    return Number(result.numDeletedRows)
  }
}
