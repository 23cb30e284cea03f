import type { Job } from '../domain/serverless/job.js'
import type { Clock } from '../shared/clock.js'
import { retryLockConflicts } from '../shared/lock-conflict-retry.js'
import { chunks, iso, type Db, type JobRow } from './job-rows.js'
import { runStatement, type JobStatements } from './job-statements.js'

/**
 * The queue's two ways of taking jobs (docs/serverless-queue.md, "Taking"): PostgreSQL in one
 * statement whose `for update skip locked` lets concurrent takers of any replica pass each
 * other's rows by; SQLite as a select and an update in one transaction on its single
 * connection. Both mark the jobs IN_PROGRESS for the worker, with a lease and the execution
 * deadline, and return them oldest first.
 */
export interface TakeRequest {
  endpointId: string
  workerId: string
  max: number
  leaseMs: number
  /** The most characters of input (with s3Config and webhook) to hand over in one take. */
  maxPayloadSize?: number
}

interface TakeCandidate {
  seq: number | string
  execution_timeout_ms: number | string
  /** Characters of the job's input, s3Config and webhook as stored: what the worker is sent. */
  payload_size: number | string
}

/**
 * The candidates, oldest first, up to the first that would take the total over `maxPayloadSize`; the
 * first is always taken, however large, so that a job larger than the budget is not stuck.
 */
function withinBudget(candidates: TakeCandidate[], maxPayloadSize: number): TakeCandidate[] {
  let total = 0
  for (let i = 0; i < candidates.length; i++) {
    total += Number(candidates[i]!.payload_size)
    if (total > maxPayloadSize && i > 0) return candidates.slice(0, i)
  }
  return candidates
}

/** PostgreSQL: the take in one statement (JobStatements.takeAtOnce); oldest first. */
export async function takeAtOnce(
  db: Db,
  statements: JobStatements,
  clock: Clock,
  request: TakeRequest,
): Promise<JobRow[]> {
  const { endpointId, workerId, max, leaseMs } = request
  const now = clock.now().getTime()
  const budget = Math.min(
    request.maxPayloadSize ?? Number.MAX_SAFE_INTEGER,
    Number.MAX_SAFE_INTEGER,
  )
  const rows = await retryLockConflicts(() =>
    runStatement<JobRow>(db, statements.takeAtOnce, [
      endpointId,
      iso(now),
      workerId,
      max,
      budget,
      workerId,
      iso(now),
      iso(now + leaseMs),
      iso(now),
    ]),
  )
  return rows.sort((a, b) =>
    a.created_at === b.created_at
      ? Number(a.seq) - Number(b.seq)
      : a.created_at < b.created_at
        ? -1
        : 1,
  )
}

/** The take as a select and an update inside the caller's transaction `tx` (SQLite). */
export async function takeIn(
  tx: Db,
  statements: JobStatements,
  clock: Clock,
  request: TakeRequest,
): Promise<JobRow[]> {
  const { endpointId, workerId, max, leaseMs } = request
  const now = clock.now().getTime()
  const candidates = await runStatement<TakeCandidate>(tx, statements.takeSelect, [
    endpointId,
    iso(now),
    workerId,
    max,
  ])
  const chosen = withinBudget(candidates, request.maxPayloadSize ?? Number.POSITIVE_INFINITY)
  // One update per execution timeout (the deadline depends on it), usually just one. The
  // rows cannot change in between: SQLite runs one transaction at a time.
  const byTimeout = new Map<number, number[]>()
  for (const row of chosen) {
    const timeout = Number(row.execution_timeout_ms)
    const seqs = byTimeout.get(timeout) ?? []
    seqs.push(Number(row.seq))
    byTimeout.set(timeout, seqs)
  }
  const startedAt = iso(now)
  const leaseUntil = iso(now + leaseMs)
  const rows: JobRow[] = []
  for (const [timeout, seqs] of byTimeout) {
    const deadline = iso(now + timeout)
    for (const batch of chunks(seqs)) {
      rows.push(
        ...(await runStatement<JobRow>(tx, statements.takeUpdate(batch.length), [
          workerId,
          startedAt,
          leaseUntil,
          deadline,
          ...batch,
        ])),
      )
    }
  }
  // Oldest first, as they were chosen (an update returns its rows in no set order).
  const order = new Map(chosen.map((row, i) => [Number(row.seq), i]))
  return rows.sort((a, b) => order.get(Number(a.seq))! - order.get(Number(b.seq))!)
}

/**
 * A job handed at submission straight to a worker waiting to take (job-waits.ts): stored as
 * that worker's running job, as a take would have left it, so the take's transaction is saved.
 */
export function takenOnSubmit(
  job: Job,
  taker: { workerId: string; leaseMs: number },
  now: number,
): Job {
  return {
    ...job,
    status: 'IN_PROGRESS',
    workerId: taker.workerId,
    startedAt: iso(now),
    leaseExpiresAt: iso(now + taker.leaseMs),
    deadlineAt: iso(now + job.policy.executionTimeout),
    attempts: job.attempts + 1,
  }
}
