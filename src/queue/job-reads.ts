import type { JobCounts, JobPage, ScalingStats } from '../domain/serverless/ports.js'
import { iso, toJob, toView, type Db } from './job-rows.js'
import { runStatement, type JobStatements } from './job-statements.js'

/**
 * What the queue tells of an endpoint's jobs without changing them: `/health` counts, the
 * `/requests` list, and the autoscaler's figures (docs/serverless-queue.md, "Counts and
 * listing").
 */

/** Default page size of `list`. */
export const DEFAULT_JOB_PAGE_SIZE = 50
const MAX_PAGE_SIZE = 500

/** Counted from indexes only (JobStatements.countByStatus, countRetried). */
export async function readCounts(
  db: Db,
  statements: JobStatements,
  endpointId: string,
): Promise<JobCounts> {
  const rows = await runStatement<{ status: string; n: number | string }>(
    db,
    statements.countByStatus,
    [endpointId],
  )
  const by = new Map(rows.map((r) => [r.status, Number(r.n)]))
  const [retried] = await runStatement<{ n: number | string }>(db, statements.countRetried, [
    endpointId,
  ])
  return {
    completed: by.get('COMPLETED') ?? 0,
    failed: (by.get('FAILED') ?? 0) + (by.get('TIMED_OUT') ?? 0),
    inProgress: by.get('IN_PROGRESS') ?? 0,
    inQueue: by.get('IN_QUEUE') ?? 0,
    retried: Number(retried?.n ?? 0),
  }
}

export async function listJobs(
  db: Db,
  endpointId: string,
  options: { page: number; pageSize?: number },
): Promise<JobPage> {
  const pageSize = Math.min(
    MAX_PAGE_SIZE,
    Math.max(1, Math.floor(options.pageSize ?? DEFAULT_JOB_PAGE_SIZE)),
  )
  const page = Math.max(1, Math.floor(options.page))
  const total = await db
    .selectFrom('jobs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('endpoint_id', '=', endpointId)
    .executeTakeFirstOrThrow()
  const rows = await db
    .selectFrom('jobs')
    .selectAll()
    .where('endpoint_id', '=', endpointId)
    .orderBy('created_at', 'desc')
    .orderBy('seq', 'desc')
    .limit(pageSize)
    .offset((page - 1) * pageSize)
    .execute()
  return { jobs: rows.map((r) => toView(toJob(r))), page, pageSize, total: Number(total.n) }
}

export async function scalingStats(db: Db, endpointId: string, now: number): Promise<ScalingStats> {
  const queuedBefore = iso(now)
  const queued = await db
    .selectFrom('jobs')
    .select((eb) => [eb.fn.countAll<number>().as('count'), eb.fn.min('created_at').as('oldest')])
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', 'IN_QUEUE')
    .where('low_priority', '=', 0)
    .where('expires_at', '>', queuedBefore)
    .executeTakeFirstOrThrow()
  // Grouped by worker: the same rows as a plain count, read through the same index.
  const running = await db
    .selectFrom('jobs')
    .select((eb) => ['worker_id', eb.fn.countAll<number>().as('count')])
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', 'IN_PROGRESS')
    .groupBy('worker_id')
    .execute()
  const heldByWorker = new Map<string, number>()
  let inProgress = 0
  for (const row of running) {
    inProgress += Number(row.count)
    if (row.worker_id !== null) heldByWorker.set(row.worker_id, Number(row.count))
  }
  return {
    queued: Number(queued.count),
    oldestQueuedAt: queued.oldest === null ? null : new Date(queued.oldest).toISOString(),
    inProgress,
    heldByWorker,
  }
}
