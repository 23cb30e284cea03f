import { sql, type Kysely } from 'kysely'
import type { Database } from '../store/database-schema.js'
import type { Job, JobView } from '../domain/serverless/job.js'
import type {
  CompleteResult,
  EndedJob,
  ExpiredJob,
  IgnoredReason,
  JobCounts,
  JobPage,
  JobQueue,
  RetryResult,
  ScalingStats,
  StopNotice,
  StreamRead,
  SweptJobs,
  WorkerRetirement,
  WorkerWriteResult,
} from '../domain/serverless/ports.js'
import { systemClock, type Clock } from '../shared/clock.js'
import {
  storeCapabilities,
  type StoreCapabilities,
  type StoreDialect,
} from '../shared/store-capabilities.js'
import { retryLockConflicts } from '../shared/lock-conflict-retry.js'
import { CountsCache } from './counts-cache.js'
import {
  chunks,
  insertValues,
  iso,
  jsonOrNull,
  readJobRow,
  toJob,
  toView,
  type Db,
  type SecretSealer,
} from './job-rows.js'
import { listJobs, readCounts, scalingStats } from './job-reads.js'
import { JobStatements, runStatement } from './job-statements.js'
import { appendStreamChunks, readStreamChunks } from './job-streams.js'
import * as sweeps from './job-sweeps.js'
import { jobKey, JobWaits, workKey, type Written } from './job-waits.js'
import { compareKeys, lockedRows } from './lock-order.js'
import * as stops from './stop-notices.js'
import { WakeUps } from './wake-ups.js'
import { queueTablesOf } from './job-tables.js'
import { WriteBatcher } from '../shared/write-batcher.js'
import { CompletionWriter, type Completion, type CompletionOutcome } from './job-completions.js'
import {
  cancelJobIn,
  deleteEndpointJobsIn,
  purgeQueuedJobs,
  retryJobIn,
} from './job-owner-actions.js'
import { takeAtOnce, takeIn, takenOnSubmit } from './job-takes.js'

export interface KyselyJobQueueOptions {
  /**
   * The store's Kysely instance (`store.db`); the queue narrows it to the tables it touches
   * (src/queue/job-tables.ts).
   */
  db: Kysely<Database>
  dialect: StoreDialect
  clock?: Clock
  /** How often a long poll re-reads the store, to see other replicas' writes. Default 200 ms. */
  pollIntervalMs?: number
  /** Called after a commit that added webhook deliveries (the dispatcher sends them at once). */
  onWebhookQueued?: () => void
  /** The long polls' wake-ups; PgWakeUps carries them to other replicas. Default in-process. */
  wakeUps?: WakeUps
  /**
   * Seals a job's `s3Config` (its access secret) before it is stored, and opens it when read:
   * the platform's SecretBox, as for registry passwords. Without it (tests of the queue alone)
   * s3Config is stored in the clear.
   */
  secrets?: SecretSealer
}

/**
 * The job queue over the store (docs/serverless-queue.md). Its parts: the rows (job-rows.ts),
 * taking (job-takes.ts), completing (job-completions.ts), the long polls (job-waits.ts), the
 * sweeps (job-sweeps.ts), cancel, retry and deletions (job-owner-actions.ts), stop notices
 * (stop-notices.ts) and stream chunks (job-streams.ts).
 */
export class KyselyJobQueue implements JobQueue {
  private readonly db: Db
  private readonly capabilities: StoreCapabilities
  private readonly clock: Clock
  private readonly waits: JobWaits
  private readonly onWebhookQueued: (() => void) | undefined
  private readonly secrets: SecretSealer | undefined
  /** Submissions and completions are group-committed (src/shared/write-batcher.ts). */
  private readonly submissions: WriteBatcher<Job, void>
  private readonly completions: WriteBatcher<Completion, CompletionOutcome>
  /** The hot statements, precompiled for the dialect. */
  private readonly statements: JobStatements
  private readonly countsCache = new CountsCache<JobCounts>(
    (c) => c.completed + c.failed + c.inProgress + c.inQueue,
  )

  constructor(options: KyselyJobQueueOptions) {
    this.db = queueTablesOf(options.db)
    this.capabilities = storeCapabilities(options.dialect)
    this.clock = options.clock ?? systemClock
    this.waits = new JobWaits(options.wakeUps ?? new WakeUps(), options.pollIntervalMs ?? 200)
    this.onWebhookQueued = options.onWebhookQueued
    this.secrets = options.secrets
    // A pool lets a few batches commit side by side; one connection, one at a time.
    const maxInFlight = this.capabilities.singleConnection ? 1 : 4
    this.statements = new JobStatements(options.dialect)
    const writer = new CompletionWriter(this.statements, this.clock, this.capabilities)
    const insert = async (jobs: Job[]) => {
      const values: unknown[] = []
      for (const job of jobs) insertValues(job, values, this.secrets)
      await runStatement(this.db, this.statements.insert(jobs.length), values)
    }
    this.submissions = new WriteBatcher({
      maxInFlight,
      writeOne: (job) => insert([job]),
      writeBatch: async (jobs) => {
        await insert(jobs)
        return jobs.map(() => undefined)
      },
    })
    this.completions = new WriteBatcher({
      maxInFlight,
      writeOne: (completion) => this.transaction((tx) => writer.completeIn(tx, completion)),
      writeBatch: (completions) => this.transaction((tx) => writer.completeAllIn(tx, completions)),
    })
  }

  /**
   * A transaction, run again when PostgreSQL answers a serialization failure or a deadlock
   * (src/shared/lock-conflict-retry.ts): `work` must collect its effects afresh on each run.
   */
  private transaction<T>(work: (tx: Db) => Promise<T>): Promise<T> {
    return retryLockConflicts(() => this.db.transaction().execute(work))
  }

  /** A job changed (or is gone) after a commit in this process: its waits and /health hear it. */
  private changed(endpointId: string, jobId: string, written?: Written): void {
    this.countsCache.written(endpointId)
    this.waits.wake(jobKey(endpointId, jobId), written)
  }

  async submit(job: Job): Promise<void> {
    const taker = this.waits.claimIdleTaker(job.endpointId)
    if (taker === undefined) {
      await this.submissions.write(job)
      this.countsCache.written(job.endpointId)
      this.waits.wake(workKey(job.endpointId))
      return
    }
    // Handed straight to a worker waiting in `waitToTake` (takenOnSubmit).
    const taken = takenOnSubmit(job, taker, this.clock.now().getTime())
    let handOver!: (job: Job | undefined) => void
    taker.handOff = new Promise((resolve) => {
      handOver = resolve
    })
    this.waits.wakeUps.notifyHere(taker.key)
    try {
      await this.submissions.write(taken)
      this.countsCache.written(job.endpointId)
      handOver(taken)
    } catch (error) {
      handOver(undefined)
      throw error
    }
  }

  private row(db: Db, endpointId: string, id: string, lock = false) {
    return readJobRow(db, this.statements, endpointId, id, lock)
  }

  async get(endpointId: string, id: string): Promise<JobView | undefined> {
    const row = await this.row(this.db, endpointId, id)
    return row && toView(toJob(row))
  }

  async take(
    endpointId: string,
    workerId: string,
    options: { max: number; leaseMs: number; maxPayloadSize?: number },
  ): Promise<Job[]> {
    const max = Math.max(0, Math.floor(options.max))
    if (max === 0) return []
    const request = { ...options, endpointId, workerId, max }
    const taken = this.capabilities.skipLocked
      ? await takeAtOnce(this.db, this.statements, this.clock, request)
      : await this.transaction((tx) => takeIn(tx, this.statements, this.clock, request))
    for (const row of taken) {
      this.changed(endpointId, row.id, { status: 'IN_PROGRESS', version: Number(row.version) })
    }
    return taken.map((row) => toJob(row, this.secrets))
  }

  async heartbeat(
    endpointId: string,
    workerId: string,
    jobIds: string[],
    leaseMs: number,
  ): Promise<string[]> {
    if (jobIds.length === 0) return []
    const leaseUntil = iso(this.clock.now().getTime() + leaseMs)
    const renewed: string[] = []
    // Each chunk its own statement, in the lock order, so that no statement waits for a row
    // while holding one that comes later in that order.
    const sorted = [...new Set(jobIds)].sort(compareKeys)
    for (const ids of chunks(sorted)) {
      const rows = await retryLockConflicts(() =>
        runStatement<{ id: string }>(this.db, this.statements.heartbeat(ids.length), [
          leaseUntil,
          endpointId,
          workerId,
          ...ids,
        ]),
      )
      renewed.push(...rows.map((r) => r.id))
    }
    return renewed
  }

  /** Why a worker's conditional write touched nothing. */
  private async ignoredReason(
    endpointId: string,
    jobId: string,
    workerId: string,
    numberedChunk = false,
  ): Promise<IgnoredReason> {
    const row = await this.row(this.db, endpointId, jobId)
    if (row === undefined) return 'not-found'
    if (row.status !== 'IN_PROGRESS') return 'not-in-progress'
    if (row.worker_id !== workerId) return 'not-owner'
    // Held by this worker: a numbered chunk seen before (or the job changed hands meanwhile).
    return numberedChunk ? 'duplicate' : 'not-in-progress'
  }

  async progress(
    endpointId: string,
    jobId: string,
    workerId: string,
    output: unknown,
  ): Promise<WorkerWriteResult> {
    const row = await this.db
      .updateTable('jobs')
      .set({ output: jsonOrNull(output), version: sql`version + 1` })
      .where('id', '=', jobId)
      .where('endpoint_id', '=', endpointId)
      .where('worker_id', '=', workerId)
      .where('status', '=', 'IN_PROGRESS')
      .returning('id')
      .executeTakeFirst()
    if (row === undefined) {
      return { applied: false, reason: await this.ignoredReason(endpointId, jobId, workerId) }
    }
    this.changed(endpointId, jobId)
    return { applied: true }
  }

  async appendStream(
    endpointId: string,
    jobId: string,
    workerId: string,
    outputs: unknown[],
    firstIndex?: number,
  ): Promise<WorkerWriteResult> {
    if (outputs.length === 0) return { applied: true }
    const applied = await appendStreamChunks(
      this.db,
      endpointId,
      jobId,
      workerId,
      outputs,
      firstIndex,
    )
    if (!applied) {
      return {
        applied: false,
        reason: await this.ignoredReason(endpointId, jobId, workerId, firstIndex !== undefined),
      }
    }
    this.changed(endpointId, jobId)
    return { applied: true }
  }

  readStream(
    endpointId: string,
    jobId: string,
    afterSeq?: number,
  ): Promise<StreamRead | undefined> {
    return readStreamChunks(this.db, this.statements, endpointId, jobId, afterSeq)
  }

  async complete(
    endpointId: string,
    jobId: string,
    workerId: string,
    result: { output?: unknown; error?: string },
  ): Promise<CompleteResult> {
    const { outcome, webhook } = await this.completions.write({
      endpointId,
      jobId,
      workerId,
      result,
    })
    if (outcome.applied) {
      const job = outcome.job
      this.changed(endpointId, jobId, { status: job.status, version: job.version, view: job })
    }
    if (webhook) this.onWebhookQueued?.()
    return outcome
  }

  async cancel(endpointId: string, id: string): Promise<JobView | undefined> {
    const { job, stopKeys, webhook } = await this.transaction((tx) =>
      cancelJobIn(tx, this.statements, this.clock, endpointId, id),
    )
    for (const key of stopKeys) this.waits.wakeUps.notify(key)
    if (job !== undefined) this.changed(endpointId, id)
    if (webhook) this.onWebhookQueued?.()
    return job && toView(job)
  }

  async retry(endpointId: string, id: string): Promise<RetryResult> {
    const result = await this.transaction((tx) => retryJobIn(tx, this.statements, endpointId, id))
    if (result.retried) {
      this.waits.wake(workKey(endpointId))
      this.changed(endpointId, id)
    }
    return result
  }

  async purgeQueued(endpointId: string): Promise<number> {
    const ids = await purgeQueuedJobs(this.db, this.capabilities, endpointId)
    for (const id of ids) this.changed(endpointId, id)
    return ids.length
  }

  async deleteEndpointJobs(endpointId: string): Promise<number> {
    const ids = await this.transaction((tx) =>
      deleteEndpointJobsIn(tx, this.capabilities, endpointId),
    )
    // /runsync, /status-sync and /stream waiters re-read and find nothing: 404 at once.
    for (const id of ids) this.changed(endpointId, id)
    return ids.length
  }

  /**
   * Counted from indexes only (JobStatements.countByStatus, countRetried), and reused as
   * CountsCache says: `/health` costs the event loop a bounded share however many jobs are
   * stored and however often it is called (docs/job-api.md, "/health").
   */
  counts(endpointId: string): Promise<JobCounts> {
    return this.countsCache.get(endpointId, () => readCounts(this.db, this.statements, endpointId))
  }

  list(endpointId: string, options: { page: number; pageSize?: number }): Promise<JobPage> {
    return listJobs(this.db, endpointId, options)
  }

  async requeueExpiredLeases(now: Date): Promise<SweptJobs> {
    const effects = await retryLockConflicts(() =>
      sweeps.requeueExpiredLeases(this.db, this.capabilities, now.getTime()),
    )
    this.afterSweep(effects)
    return sweeps.requeuedAndEnded(effects)
  }

  renewRunningLeases(until: Date): Promise<number> {
    return retryLockConflicts(() =>
      sweeps.renewRunningLeases(this.db, this.capabilities, until.getTime()),
    )
  }

  async expire(
    now: Date,
  ): Promise<{ ended: EndedJob[]; deleted: string[]; expired: ExpiredJob[] }> {
    const effects = await retryLockConflicts(() =>
      sweeps.expireJobs(this.db, this.capabilities, now.getTime()),
    )
    this.afterSweep(effects)
    return {
      ended: sweeps.requeuedAndEnded(effects).ended,
      deleted: effects.deleted,
      expired: effects.expired,
    }
  }

  /** The wake-ups of what a sweep changed, once it has committed. */
  private afterSweep(effects: sweeps.SweepEffects): void {
    for (const key of effects.stopKeys) this.waits.wakeUps.notify(key)
    for (const job of effects.touched) {
      if (job.requeued) this.waits.wake(workKey(job.endpointId))
      this.changed(job.endpointId, job.id)
    }
    if (effects.webhooks) this.onWebhookQueued?.()
  }

  takeStops(endpointId: string, workerId: string): Promise<StopNotice[]> {
    return stops.takeStops(this.db, endpointId, workerId)
  }

  async remindStops(endpointId: string, workerId: string, jobIds: string[]): Promise<number> {
    const now = this.clock.now().getTime()
    const added = await stops.remindStops(this.db, endpointId, workerId, jobIds, now)
    if (added > 0) this.waits.wakeUps.notify(stops.stopKey(endpointId, workerId))
    return added
  }

  private async version(endpointId: string, jobId: string): Promise<number | undefined> {
    const [row] = await runStatement<{ version: number }>(this.db, this.statements.version, [
      jobId,
      endpointId,
    ])
    return row && Number(row.version)
  }

  async waitForChange(
    endpointId: string,
    jobId: string,
    timeoutMs: number,
    sinceVersion?: number,
    signal?: AbortSignal,
  ): Promise<boolean> {
    const baseline = sinceVersion ?? (await this.version(endpointId, jobId))
    if (baseline === undefined) return true
    return this.waits.waitForChange(
      jobKey(endpointId, jobId),
      () => this.version(endpointId, jobId),
      baseline,
      timeoutMs,
      signal,
    )
  }

  /**
   * `waitForChange` for a waiter that wants the job's end (`/runsync`, `/status-sync`): a write
   * in this process that leaves the job unfinished (a take) does not end the wait, and one that
   * finishes it (a completion) hands the job over, so that the waiter need not read it back
   * (bench/README.md, step 17). Resolves with that job; `true` when the job changed otherwise
   * (the caller reads it: another replica's write, a cancel, a deletion); `false` after
   * `timeoutMs` or once `signal` aborts.
   */
  waitForEnd(
    endpointId: string,
    jobId: string,
    timeoutMs: number,
    sinceVersion: number,
    signal?: AbortSignal,
  ): Promise<JobView | boolean> {
    return this.waits.waitForEnd(
      jobKey(endpointId, jobId),
      () => this.version(endpointId, jobId),
      sinceVersion,
      timeoutMs,
      signal,
    )
  }

  waitToTake(
    endpointId: string,
    taker: { workerId: string; leaseMs: number; max: number; holdsNothing?: boolean },
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<Job | boolean> {
    return this.waits.waitToTake(endpointId, taker, timeoutMs, signal, async () => {
      const [row] = await runStatement<{ work: unknown; retired: unknown }>(
        this.db,
        this.statements.workFor,
        [endpointId, iso(this.clock.now().getTime()), taker.workerId],
      )
      if (row?.retired != null) return 'retired'
      return row?.work != null ? 'work' : 'none'
    })
  }

  waitForStops(
    endpointId: string,
    workerId: string,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<boolean> {
    return this.waits.waitUntil(
      stops.stopKey(endpointId, workerId),
      () => stops.hasStops(this.db, endpointId, workerId),
      timeoutMs,
      signal,
    )
  }

  async releaseWorker(endpointId: string, workerId: string): Promise<number> {
    const result = await retryLockConflicts(() =>
      this.db
        .updateTable('jobs')
        .set({ lease_expires_at: iso(this.clock.now().getTime()) })
        .where(
          lockedRows(
            this.capabilities,
            sql`endpoint_id = ${endpointId} and worker_id = ${workerId} and status = 'IN_PROGRESS'`,
          ),
        )
        .executeTakeFirst(),
    )
    return Number(result.numUpdatedRows)
  }

  requeueWorkerJobs(
    endpointId: string,
    workerId: string,
    retire?: WorkerRetirement,
  ): Promise<SweptJobs> {
    return this.sweepWorker(endpointId, workerId, { retire })
  }

  failWorkerJobs(endpointId: string, workerId: string, error: string): Promise<SweptJobs> {
    return this.sweepWorker(endpointId, workerId, { failure: error })
  }

  private async sweepWorker(
    endpointId: string,
    workerId: string,
    how: Parameters<typeof sweeps.requeueWorkerJobs>[5],
  ): Promise<SweptJobs> {
    const at = this.clock.now().getTime()
    const effects = await retryLockConflicts(() =>
      sweeps.requeueWorkerJobs(this.db, this.capabilities, endpointId, workerId, at, how),
    )
    this.afterSweep(effects)
    return sweeps.requeuedAndEnded(effects)
  }

  scalingStats(endpointId: string): Promise<ScalingStats> {
    return scalingStats(this.db, endpointId, this.clock.now().getTime())
  }
}
