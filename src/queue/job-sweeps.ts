import { sql } from 'kysely'
import type { StoreCapabilities } from '../shared/store-capabilities.js'
import { lostWorkerError, MAX_JOB_ATTEMPTS } from '../domain/serverless/job.js'
import type {
  EndedJob,
  ExpiredJob,
  LostAttempt,
  SweptJobs,
  WorkerRetirement,
} from '../domain/serverless/ports.js'
import {
  addWebhookDelivery,
  chunks,
  finishFields,
  iso,
  RUNNING,
  toJob,
  toView,
  type Db,
  type JobRow,
} from './job-rows.js'
import { ID_IN_LOCK_ORDER, lockedRows } from './lock-order.js'
import { addStop, STOP_NOTICE_RETENTION_MS } from './stop-notices.js'

/**
 * The queue's sweeps (docs/serverless-queue.md, "Taking and leases" and "Timeouts, ttl and
 * retention"), run by the leader's JobSweeper. Each is one transaction, and returns what it
 * changed so that the queue wakes the long polls concerned once it has committed.
 */

/**
 * Sweeps on PostgreSQL run under this transaction-scoped advisory lock, tried not waited for:
 * when another replica is sweeping, this one skips (its turn comes next time), and two sweeps
 * never delete overlapping rows in different orders.
 */
const SWEEP_LOCK_KEY = 7_341_005

/** What a sweep changed, for the wake-ups after its commit. */
export interface SweepEffects {
  /**
   * Jobs whose status changed or that are gone; `requeued` when they are takeable again, `ended`
   * when the sweep ended them (TIMED_OUT or FAILED).
   */
  touched: Array<{
    endpointId: string
    id: string
    requeued: boolean
    ended?: EndedJob['status']
    /** The ended job's row after the sweep, for its spans. */
    row?: JobRow
    /** A requeued job's attempt that its lost worker cut short, for its spans. */
    lost?: LostAttempt
  }>
  /** Wake-up keys of the stop notices it wrote. */
  stopKeys: Set<string>
  /** It added webhook deliveries. */
  webhooks: boolean
}

const noEffects = (): SweepEffects => ({ touched: [], stopKeys: new Set(), webhooks: false })

/** False when another replica's sweep holds the lock; always true without advisory locks. */
async function sweepLock(tx: Db, capabilities: StoreCapabilities): Promise<boolean> {
  if (!capabilities.advisoryLocks) return true
  const result = await sql<{
    ok: boolean
  }>`select pg_try_advisory_xact_lock(${SWEEP_LOCK_KEY}) as ok`.execute(tx)
  return result.rows[0]?.ok === true
}

/**
 * IN_PROGRESS jobs whose lease ended by `at` go back to the queue, or become TIMED_OUT when their
 * deadline has passed too, or FAILED when their worker was lost MAX_JOB_ATTEMPTS times. Their
 * workers get stop notices.
 */
export async function requeueExpiredLeases(
  db: Db,
  capabilities: StoreCapabilities,
  at: number,
): Promise<SweepEffects> {
  const effects = noEffects()
  await db.transaction().execute(async (tx) => {
    if (!(await sweepLock(tx, capabilities))) return
    let query = tx
      .selectFrom('jobs')
      .selectAll()
      .where(RUNNING)
      .where('lease_expires_at', '<=', iso(at))
    if (capabilities.skipLocked) query = query.forUpdate().skipLocked()
    for (const row of await query.execute()) await endLease(tx, row, at, effects)
  })
  return effects
}

/**
 * The worker is lost (its host is DOWN): its running jobs are treated at once as if their
 * leases had ended, in one transaction, whatever their leases say. From its commit on, nothing
 * the worker sends is applied (a result, progress, a stream chunk or a heartbeat names a job
 * that is no longer its own), so a job is never finished by two workers. Not under the sweep
 * lock: the rows are locked and waited for instead (PostgreSQL), so that a result the worker
 * is committing now either lands first or is refused, and the requeue is never skipped.
 *
 * With `retire`, the worker's row in `workers` is written first, in the same transaction: a take
 * reads the worker's phase and the queued jobs in one snapshot (JobStatements.takeSelect), so
 * no take, on any replica, can see its jobs back in the queue without seeing it retired, and it
 * never takes them again (it did, through a replica whose view of the workers lagged).
 *
 * With `failure`, its jobs are not requeued but FAILED with it as their error (the worker ran out
 * of memory: another attempt would too), unless their deadline has passed (TIMED_OUT).
 */
export async function requeueWorkerJobs(
  db: Db,
  capabilities: StoreCapabilities,
  endpointId: string,
  workerId: string,
  at: number,
  { retire, failure }: { retire?: WorkerRetirement; failure?: string } = {},
): Promise<SweepEffects> {
  const effects = noEffects()
  await db.transaction().execute(async (tx) => {
    if (retire) {
      await tx
        .updateTable('workers')
        .set({ phase: retire.phase, reason: retire.reason, phase_changed_at: retire.changedAt })
        .where('id', '=', workerId)
        .execute()
    }
    let query = tx
      .selectFrom('jobs')
      .selectAll()
      .where('endpoint_id', '=', endpointId)
      .where('worker_id', '=', workerId)
      .where(RUNNING)
    // Waits for the rows, so it takes them in the lock order like every waiting writer.
    if (capabilities.rowLocks) query = query.orderBy(sql.raw(ID_IN_LOCK_ORDER)).forUpdate()
    for (const row of await query.execute()) await endLease(tx, row, at, effects, failure)
  })
  return effects
}

/**
 * A running job whose lease ended at `at`: requeued, TIMED_OUT or FAILED (after its last
 * attempt, or at once with `failure` as its error), its worker told.
 */
async function endLease(
  tx: Db,
  row: JobRow,
  at: number,
  effects: SweepEffects,
  failure?: string,
): Promise<void> {
  const timedOut = row.deadline_at !== null && row.deadline_at <= iso(at)
  const exhausted = !timedOut && (failure !== undefined || Number(row.attempts) >= MAX_JOB_ATTEMPTS)
  const update = tx.updateTable('jobs')
  const set = timedOut
    ? update.set(finishFields(row, 'TIMED_OUT', at))
    : exhausted
      ? update.set({
          ...finishFields(row, 'FAILED', at),
          error: failure ?? lostWorkerError(Number(row.attempts)),
        })
      : update.set({
          status: 'IN_QUEUE',
          worker_id: null,
          started_at: null,
          lease_expires_at: null,
          deadline_at: null,
          output: null,
          version: sql`version + 1`,
        })
  const updated = await set.where('seq', '=', row.seq).returningAll().executeTakeFirst()
  const finished = timedOut || exhausted
  if (finished && updated && (await addWebhookDelivery(tx, updated, at))) {
    effects.webhooks = true
  }
  const key = await addStop(tx, row, timedOut ? 'timed-out' : 'lease-lost', at)
  if (key !== undefined) effects.stopKeys.add(key)
  effects.touched.push({
    endpointId: row.endpoint_id,
    id: row.id,
    requeued: !finished,
    ...(finished ? { ended: timedOut ? 'TIMED_OUT' : 'FAILED' } : {}),
    ...(finished && updated ? { row: updated } : {}),
    ...(!finished && updated ? { lost: unfinishedJob(row) } : {}),
  })
}

/** Renews every running lease that ends before `until` to `until`; returns how many. */
export async function renewRunningLeases(
  db: Db,
  capabilities: StoreCapabilities,
  until: number,
): Promise<number> {
  const result = await db
    .updateTable('jobs')
    .set({ lease_expires_at: iso(until) })
    .where(lockedRows(capabilities, sql`${RUNNING} and lease_expires_at < ${iso(until)}`))
    .executeTakeFirst()
  return Number(result.numUpdatedRows)
}

/**
 * ttl passed: deleted in any state; retention passed: deleted; deadline passed: TIMED_OUT. Workers
 * of running jobs so ended get stop notices; notices nobody collected for an hour are dropped.
 */
export async function expireJobs(
  db: Db,
  capabilities: StoreCapabilities,
  now: number,
): Promise<SweepEffects & { deleted: string[]; expired: ExpiredJob[] }> {
  const at = iso(now)
  const effects = { ...noEffects(), deleted: [] as string[], expired: [] as ExpiredJob[] }
  await db.transaction().execute(async (tx) => {
    if (!(await sweepLock(tx, capabilities))) return
    // ttl first: a job past both its ttl and its deadline is simply gone.
    // Rows another transaction holds (a completion, a heartbeat) are left for the next sweep.
    const gone = await tx
      .deleteFrom('jobs')
      .where(lockedRows(capabilities, sql`(expires_at <= ${at} or retain_until <= ${at})`, true))
      .returning([
        'id',
        'endpoint_id',
        'worker_id',
        'status',
        'attempts',
        'created_at',
        'started_at',
        'trace_parent',
        'request_id',
      ])
      .execute()
    for (const row of gone) {
      if (row.status === 'IN_PROGRESS') {
        const key = await addStop(tx, row, 'expired', now)
        if (key !== undefined) effects.stopKeys.add(key)
      }
      // Unfinished: its ttl passed (a finished job is kept until its retention, and its spans
      // have ended).
      if (row.status === 'IN_QUEUE' || row.status === 'IN_PROGRESS') {
        effects.expired.push(expiredJob(row, row.status))
      }
      effects.deleted.push(row.id)
      effects.touched.push({ endpointId: row.endpoint_id, id: row.id, requeued: false })
    }
    for (const ids of chunks(effects.deleted)) {
      await tx.deleteFrom('job_stream').where('job_id', 'in', ids).execute()
    }
    let late = tx.selectFrom('jobs').selectAll().where(RUNNING).where('deadline_at', '<=', at)
    if (capabilities.skipLocked) late = late.forUpdate().skipLocked()
    for (const row of await late.execute()) {
      const updated = await tx
        .updateTable('jobs')
        .set(finishFields(row, 'TIMED_OUT', now))
        .where('seq', '=', row.seq)
        .returningAll()
        .executeTakeFirst()
      if (updated && (await addWebhookDelivery(tx, updated, now))) effects.webhooks = true
      const key = await addStop(tx, row, 'timed-out', now)
      if (key !== undefined) effects.stopKeys.add(key)
      effects.touched.push({
        endpointId: row.endpoint_id,
        id: row.id,
        requeued: false,
        ended: 'TIMED_OUT',
        ...(updated ? { row: updated } : {}),
      })
    }
    await tx
      .deleteFrom('job_stops')
      .where('created_at', '<=', iso(now - STOP_NOTICE_RETENTION_MS))
      .execute()
  })
  return effects
}

type UnfinishedRow = Pick<
  JobRow,
  | 'id'
  | 'endpoint_id'
  | 'worker_id'
  | 'attempts'
  | 'created_at'
  | 'started_at'
  | 'trace_parent'
  | 'request_id'
>

function expiredJob(row: UnfinishedRow, status: ExpiredJob['status']): ExpiredJob {
  return { ...unfinishedJob(row), status }
}

/** A job as it was before a sweep changed it, for the spans of what it was doing. */
function unfinishedJob(row: UnfinishedRow): LostAttempt {
  return {
    id: row.id,
    endpointId: row.endpoint_id,
    attempts: Number(row.attempts),
    createdAt: row.created_at,
    ...(row.worker_id !== null ? { workerId: row.worker_id } : {}),
    ...(row.started_at !== null ? { startedAt: row.started_at } : {}),
    ...(row.trace_parent
      ? { trace: { traceparent: row.trace_parent, requestId: row.request_id ?? '' } }
      : {}),
  }
}

/** The jobs a sweep put back in the queue (with the attempts cut short), and those it ended. */
export function requeuedAndEnded(effects: SweepEffects): SweptJobs {
  const swept: SweptJobs = { requeued: [], ended: [], lost: [] }
  for (const job of effects.touched) {
    if (job.requeued) {
      swept.requeued.push(job.id)
      if (job.lost) swept.lost.push(job.lost)
    } else if (job.ended) {
      swept.ended.push({
        id: job.id,
        endpointId: job.endpointId,
        status: job.ended,
        ...(job.row ? { job: toView(toJob({ ...job.row, s3_config: null })) } : {}),
      })
    }
  }
  return swept
}
