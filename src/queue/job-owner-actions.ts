import { sql } from 'kysely'
import { allowedFrom, type Job, type JobStatus } from '../domain/serverless/job.js'
import type { RetryResult } from '../domain/serverless/ports.js'
import type { Clock } from '../shared/clock.js'
import type { StoreCapabilities } from '../shared/store-capabilities.js'
import { retryLockConflicts } from '../shared/lock-conflict-retry.js'
import {
  addWebhookDelivery,
  chunks,
  finishFields,
  readJobRow,
  toJob,
  toView,
  type Db,
} from './job-rows.js'
import type { JobStatements } from './job-statements.js'
import { lockedRows } from './lock-order.js'
import { addStop } from './stop-notices.js'

/**
 * What a job's owner does to jobs through the job API (cancel, retry, purge-queue) and what
 * deleting an endpoint does to its jobs. Each returns what it changed, so that the queue wakes
 * the long polls concerned once it has committed.
 */

/** What a cancel changed; `stopKeys` are the wake-up keys of the stop notice it wrote. */
export interface CancelEffects {
  job: Job | undefined
  stopKeys: string[]
  webhook: boolean
}

/** Cancels the job in `tx` when its status allows; a job that may not be cancelled is as it was. */
export async function cancelJobIn(
  tx: Db,
  statements: JobStatements,
  clock: Clock,
  endpointId: string,
  id: string,
): Promise<CancelEffects> {
  const effects: CancelEffects = { job: undefined, stopKeys: [], webhook: false }
  const row = await readJobRow(tx, statements, endpointId, id, true)
  if (row === undefined) return effects
  if (!allowedFrom('cancel').includes(row.status as JobStatus)) {
    effects.job = toJob(row)
    return effects
  }
  const now = clock.now().getTime()
  const updated = await tx
    .updateTable('jobs')
    .set(finishFields(row, 'CANCELLED', now))
    .where('seq', '=', row.seq)
    .where('status', '=', row.status)
    .returningAll()
    .executeTakeFirst()
  if (updated === undefined) {
    effects.job = toJob((await readJobRow(tx, statements, endpointId, id)) ?? row)
    return effects
  }
  effects.webhook = await addWebhookDelivery(tx, updated, now)
  if (row.status === 'IN_PROGRESS') {
    const key = await addStop(tx, row, 'cancelled', now)
    if (key !== undefined) effects.stopKeys.push(key)
  }
  effects.job = toJob(updated)
  return effects
}

/** Queues a FAILED or TIMED_OUT job again in `tx`, its output and stream cleared. */
export async function retryJobIn(
  tx: Db,
  statements: JobStatements,
  endpointId: string,
  id: string,
): Promise<RetryResult> {
  const row = await readJobRow(tx, statements, endpointId, id, true)
  if (row === undefined) return { retried: false, reason: 'not-found' }
  const status = row.status as JobStatus
  if (!allowedFrom('retry').includes(status)) {
    return { retried: false, reason: 'not-retryable', status }
  }
  const updated = await tx
    .updateTable('jobs')
    .set({
      status: 'IN_QUEUE',
      output: null,
      error: null,
      worker_id: null,
      started_at: null,
      completed_at: null,
      lease_expires_at: null,
      deadline_at: null,
      retain_until: null,
      stream_seq: 0,
      stream_delivered: 0,
      retries: sql`retries + 1`,
      version: sql`version + 1`,
    })
    .where('seq', '=', row.seq)
    .returningAll()
    .executeTakeFirstOrThrow()
  await tx.deleteFrom('job_stream').where('job_id', '=', id).execute()
  return { retried: true, job: toView(toJob(updated)) }
}

/** Deletes the endpoint's queued jobs and their stream chunks; returns their ids. */
export async function purgeQueuedJobs(
  db: Db,
  capabilities: StoreCapabilities,
  endpointId: string,
): Promise<string[]> {
  const rows = await retryLockConflicts(() =>
    db
      .deleteFrom('jobs')
      .where(lockedRows(capabilities, sql`endpoint_id = ${endpointId} and status = 'IN_QUEUE'`))
      .returning('id')
      .execute(),
  )
  for (const ids of chunks(rows.map((r) => r.id))) {
    await db.deleteFrom('job_stream').where('job_id', 'in', ids).execute()
  }
  return rows.map((r) => r.id)
}

/** Deletes every job of the endpoint in `tx`, with their stream chunks and stop notices. */
export async function deleteEndpointJobsIn(
  tx: Db,
  capabilities: StoreCapabilities,
  endpointId: string,
): Promise<string[]> {
  const rows = await tx
    .deleteFrom('jobs')
    .where(lockedRows(capabilities, sql`endpoint_id = ${endpointId}`))
    .returning('id')
    .execute()
  const gone = rows.map((r) => r.id)
  for (const batch of chunks(gone)) {
    await tx.deleteFrom('job_stream').where('job_id', 'in', batch).execute()
  }
  await tx.deleteFrom('job_stops').where('endpoint_id', '=', endpointId).execute()
  return gone
}
