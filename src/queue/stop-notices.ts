import type { StopNotice } from '../domain/serverless/ports.js'
import { chunks, iso, type Db, type JobRow } from './job-rows.js'

/**
 * Stop notices (docs/serverless-queue.md, "Stop notices"): what the worker protocol's `job-stop`
 * hands a worker for the jobs it must stop. Rows of `job_stops`, written in the transaction that
 * takes a job from its worker (cancel, timeout, ttl, lost lease) or when its heartbeat still
 * names a job it no longer holds.
 */

/** Stop notices nobody collected within this are dropped by `expire`. */
export const STOP_NOTICE_RETENTION_MS = 60 * 60 * 1000

/** The wake-up key of a worker's stop notices. */
export const stopKey = (endpointId: string, workerId: string) => `stop:${endpointId}:${workerId}`

/** A job in one of these, held or finished by the worker that names it, is not one to stop. */
const OWN_STATUSES = new Set(['IN_PROGRESS', 'COMPLETED', 'FAILED'])

/**
 * Adds a stop notice for the worker of a running job: it stops the job's current attempt
 * (`attempts`), so that a later attempt the same worker takes is not stopped by it. Returns the
 * key to wake once the transaction has committed, or undefined when the job had no worker.
 */
export async function addStop(
  db: Db,
  row: Pick<JobRow, 'endpoint_id' | 'worker_id' | 'id' | 'attempts'>,
  reason: StopNotice['reason'],
  now: number,
): Promise<string | undefined> {
  if (row.worker_id === null) return undefined
  await db
    .insertInto('job_stops')
    .values({
      endpoint_id: row.endpoint_id,
      worker_id: row.worker_id,
      job_id: row.id,
      reason,
      created_at: iso(now),
      attempt: Number(row.attempts),
    })
    .execute()
  return stopKey(row.endpoint_id, row.worker_id)
}

/** Takes (and forgets) the worker's notices, but those of attempts that are over. */
export async function takeStops(
  db: Db,
  endpointId: string,
  workerId: string,
): Promise<StopNotice[]> {
  const rows = await db
    .deleteFrom('job_stops')
    .where('endpoint_id', '=', endpointId)
    .where('worker_id', '=', workerId)
    .returning(['seq', 'job_id', 'reason', 'attempt'])
    .execute()
  if (rows.length === 0) return []
  // A notice stops one attempt. When this worker has since taken the job again (its lease ran
  // out, the job was re-queued and came back to it), the notice is for a run that is over:
  // retired here, or the worker would abort the attempt it now rightly holds.
  const held = new Map<string, number>()
  for (const ids of chunks([...new Set(rows.map((r) => r.job_id))])) {
    const jobs = await db
      .selectFrom('jobs')
      .select(['id', 'attempts'])
      .where('endpoint_id', '=', endpointId)
      .where('worker_id', '=', workerId)
      .where('status', '=', 'IN_PROGRESS')
      .where('id', 'in', ids)
      .execute()
    for (const job of jobs) held.set(job.id, Number(job.attempts))
  }
  return rows
    .filter((r) => !(Number(held.get(r.job_id) ?? -1) > Number(r.attempt)))
    .sort((a, b) => Number(a.seq) - Number(b.seq))
    .map((r) => ({ jobId: r.job_id, reason: r.reason as StopNotice['reason'] }))
}

/**
 * A notice for each job the worker names but no longer holds, unless one is waiting already
 * (JobQueue.remindStops). Returns how many were added.
 */
export async function remindStops(
  db: Db,
  endpointId: string,
  workerId: string,
  jobIds: string[],
  now: number,
): Promise<number> {
  if (jobIds.length === 0) return 0
  const listed = [...new Set(jobIds)]
  return db.transaction().execute(async (tx) => {
    let count = 0
    for (const ids of chunks(listed)) {
      const jobs = new Map(
        (
          await tx
            .selectFrom('jobs')
            .select(['id', 'status', 'worker_id', 'attempts'])
            .where('endpoint_id', '=', endpointId)
            .where('id', 'in', ids)
            .execute()
        ).map((job) => [job.id, job]),
      )
      const pending = new Set(
        (
          await tx
            .selectFrom('job_stops')
            .select('job_id')
            .where('endpoint_id', '=', endpointId)
            .where('worker_id', '=', workerId)
            .where('job_id', 'in', ids)
            .execute()
        ).map((notice) => notice.job_id),
      )
      for (const id of ids) {
        if (pending.has(id)) continue
        const job = jobs.get(id)
        // Still its job, or one it finished itself (a heartbeat sent before its result).
        if (job?.worker_id === workerId && OWN_STATUSES.has(job.status)) continue
        const reason: StopNotice['reason'] =
          job === undefined
            ? 'expired'
            : job.status === 'CANCELLED'
              ? 'cancelled'
              : job.status === 'TIMED_OUT'
                ? 'timed-out'
                : 'lease-lost'
        await addStop(
          tx,
          { endpoint_id: endpointId, worker_id: workerId, id, attempts: job?.attempts ?? 0 },
          reason,
          now,
        )
        count += 1
      }
    }
    return count
  })
}

/** Whether the worker has a notice waiting (the check of a `job-stop` long poll). */
export async function hasStops(db: Db, endpointId: string, workerId: string): Promise<boolean> {
  const row = await db
    .selectFrom('job_stops')
    .select('seq')
    .where('endpoint_id', '=', endpointId)
    .where('worker_id', '=', workerId)
    .limit(1)
    .executeTakeFirst()
  return row !== undefined
}
