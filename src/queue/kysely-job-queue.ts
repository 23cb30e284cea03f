import { sql, type Kysely, type Selectable } from 'kysely'
import {
  allowedFrom,
  isTerminal,
  lostWorkerError,
  MAX_JOB_ATTEMPTS,
  resultRetentionMs,
  type Job,
  type JobStatus,
  type JobView,
} from '../domain/serverless/job.js'
import type {
  CompleteResult,
  IgnoredReason,
  JobCounts,
  JobPage,
  JobQueue,
  RetryResult,
  ScalingStats,
  StopNotice,
  StreamRead,
  WorkerWriteResult,
} from '../domain/serverless/ports.js'
import { systemClock, type Clock } from '../shared/clock.js'
import type { JobQueueDatabase, JobsTable } from './job-tables.js'
import { CountsCache } from './counts-cache.js'
import { JobStatements, runStatement } from './job-statements.js'
import { insertWebhookDelivery } from './kysely-webhook-deliveries.js'
import { WakeUps } from './wake-ups.js'
import { WriteBatcher } from './write-batcher.js'

type JobRow = Selectable<JobsTable>
type Db = Kysely<JobQueueDatabase>

export interface KyselyJobQueueOptions {
  /**
   * The store's Kysely instance (`store.db`): any database that has the queue's tables
   * (migration 0005-jobs). Typed loosely because the queue layer may not import the store's
   * schema; the queue narrows it to its own tables (src/queue/job-tables.ts).
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  db: Kysely<any>
  dialect: 'sqlite' | 'postgres'
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

/** Authenticated encryption of short secrets (src/domain/registries/secret-box.ts). */
export interface SecretSealer {
  seal(plain: string): string
  open(sealed: string): string
}

/**
 * `s3_config` as stored: a JSON string holding the sealed JSON of the config (a JSON text, so
 * that PostgreSQL's jsonb column takes it), or, without a sealer and in rows written before
 * sealing, the config as a JSON object.
 */
function storedS3Config(config: Job['s3Config'], secrets: SecretSealer | undefined): string | null {
  if (config === undefined) return null
  const json = JSON.stringify(config)
  return secrets ? JSON.stringify(secrets.seal(json)) : json
}

function readS3Config(stored: string, secrets: SecretSealer | undefined): Job['s3Config'] {
  const value: unknown = JSON.parse(stored)
  if (typeof value !== 'string') return value as Job['s3Config']
  return secrets ? (JSON.parse(secrets.open(value)) as Job['s3Config']) : undefined
}

/** Stop notices nobody collected within this are dropped by `expire`. */
export const STOP_NOTICE_RETENTION_MS = 60 * 60 * 1000
/** Default page size of `list`. */
export const DEFAULT_JOB_PAGE_SIZE = 50
const MAX_PAGE_SIZE = 500
/** Ids per `in (...)` list, well under either dialect's parameter limit. */
const ID_BATCH = 500

/**
 * Sweeps (`requeueExpiredLeases`, `expire`) on PostgreSQL run under this transaction-scoped
 * advisory lock, tried not waited for: when another replica is sweeping, this one skips (its
 * turn comes next time), and two sweeps never delete overlapping rows in different orders.
 */
const SWEEP_LOCK_KEY = 7_341_005

const iso = (ms: number) => new Date(ms).toISOString()

/** A job in one of these, held or finished by the worker that names it, is not one to stop. */
const OWN_STATUSES = new Set(['IN_PROGRESS', 'COMPLETED', 'FAILED'])

/**
 * The running jobs, as the partial index `jobs_running` names them (migration 0014): a literal,
 * not a parameter, so that the planner can tell the sweep's rows are all in that index.
 */
const RUNNING = sql<boolean>`status = 'IN_PROGRESS'`

/**
 * `iso` of an instant that repeats: the completions of one batch mostly share their millisecond,
 * and formatting a date was 2 % of the server's time per job (bench/README.md).
 */
class IsoMemo {
  private ms = Number.NaN
  private text = ''

  of(ms: number): string {
    if (ms !== this.ms) {
      this.ms = ms
      this.text = iso(ms)
    }
    return this.text
  }
}

function parseJson(text: string | null): unknown {
  return text === null ? undefined : JSON.parse(text)
}

/**
 * The job of a row. A sealed s3Config is opened only with `secrets`: the workers' view (take)
 * passes them; the other callers make views without it, and leave it sealed.
 */
function toJob(row: JobRow, secrets?: SecretSealer): Job {
  const job: Job = {
    id: row.id,
    endpointId: row.endpoint_id,
    accountId: row.account_id,
    status: row.status as JobStatus,
    input: JSON.parse(row.input),
    policy: {
      executionTimeout: Number(row.execution_timeout_ms),
      ttl: Number(row.ttl_ms),
      lowPriority: Number(row.low_priority) === 1,
    },
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    attempts: Number(row.attempts),
    retries: Number(row.retries),
    sync: Number(row.sync) === 1,
    streamSeq: Number(row.stream_seq),
    version: Number(row.version),
  }
  if (row.webhook !== null) job.webhook = row.webhook
  const s3Config = row.s3_config === null ? undefined : readS3Config(row.s3_config, secrets)
  if (s3Config !== undefined) job.s3Config = s3Config
  if (row.output !== null) job.output = parseJson(row.output)
  if (row.error !== null) job.error = row.error
  if (row.worker_id !== null) job.workerId = row.worker_id
  if (row.started_at !== null) job.startedAt = row.started_at
  if (row.completed_at !== null) job.completedAt = row.completed_at
  if (row.lease_expires_at !== null) job.leaseExpiresAt = row.lease_expires_at
  if (row.deadline_at !== null) job.deadlineAt = row.deadline_at
  if (row.retain_until !== null) job.retainUntil = row.retain_until
  return job
}

function toView(job: Job): JobView {
  const { s3Config: _hidden, ...view } = job
  return view
}

/** What a take reads of a queued job before it decides to take it. */
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

function chunks<T>(items: T[], size = ID_BATCH): T[][] {
  const out: T[][] = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

/** Undefined output is stored as SQL NULL; JSON `null` as well (they read back the same). */
function jsonOrNull(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value)
}

/** A new job's values in the order of `INSERT_COLUMNS` (src/queue/job-statements.ts). */
function insertValues(job: Job, into: unknown[], secrets: SecretSealer | undefined): void {
  const input = JSON.stringify(job.input ?? null)
  const s3Config = storedS3Config(job.s3Config, secrets)
  into.push(
    job.id,
    job.endpointId,
    job.accountId,
    job.status,
    job.sync ? 1 : 0,
    job.policy.lowPriority ? 1 : 0,
    job.policy.executionTimeout,
    job.policy.ttl,
    input,
    job.webhook ?? null,
    s3Config,
    job.createdAt,
    job.expiresAt,
    job.workerId ?? null,
    job.startedAt ?? null,
    job.leaseExpiresAt ?? null,
    job.deadlineAt ?? null,
    job.attempts,
    input.length + (s3Config?.length ?? 0) + (job.webhook?.length ?? 0),
  )
}

interface Completion {
  endpointId: string
  jobId: string
  workerId: string
  result: { output?: unknown; error?: string }
}

interface CompletionOutcome {
  outcome: CompleteResult
  /** A webhook delivery was added in the same transaction. */
  webhook: boolean
}

/** A long poll's watch on a key (`waitFor`), told directly of the writes in this process. */
interface Watch {
  changed: boolean
  /**
   * Only the job's end matters (`waitForEnd`): a write that leaves it unfinished moves `baseline`
   * (the version the store is compared with) instead of ending the wait.
   */
  endOnly?: boolean
  baseline?: number
  /** The job as the write that ended the wait left it, when that write said. */
  job?: JobView
}

/** What a write in this process left a job as, for the watches of its key. */
interface Written {
  status: JobStatus
  version: number
  /** The whole job, when the write has it at hand (a completion). */
  view?: JobView
}

/** A worker waiting in `waitToTake` while the queue is empty, ready for a job handed over. */
interface IdleTaker {
  workerId: string
  leaseMs: number
  /** Its own wake-up key: a hand-off wakes it alone. */
  key: string
  signal?: AbortSignal
  /** Set when a submission claims it: the job once stored, undefined if storing it failed. */
  handOff?: Promise<Job | undefined>
}

const workKey = (endpointId: string) => `work:${endpointId}`
const jobKey = (endpointId: string, jobId: string) => `job:${endpointId}:${jobId}`
const stopKey = (endpointId: string, workerId: string) => `stop:${endpointId}:${workerId}`

/**
 * The job queue over the store (docs/serverless-queue.md). Taking is one transaction: on
 * PostgreSQL `select ... for update skip locked` so concurrent takers (of any replica) pass each
 * other's rows by; on SQLite the store's single connection runs one transaction at a time.
 */
export class KyselyJobQueue implements JobQueue {
  private readonly db: Db
  private readonly dialect: 'sqlite' | 'postgres'
  private readonly clock: Clock
  private readonly pollIntervalMs: number
  private readonly wakeUps: WakeUps
  private readonly onWebhookQueued: (() => void) | undefined
  private readonly secrets: SecretSealer | undefined
  /** Submissions and completions are group-committed (src/queue/write-batcher.ts). */
  private readonly submissions: WriteBatcher<Job, void>
  private readonly completions: WriteBatcher<Completion, CompletionOutcome>
  private readonly completedAt = new IsoMemo()
  private readonly retainSync = new IsoMemo()
  private readonly retainAsync = new IsoMemo()
  /** The long polls waiting on each key (`waitFor`). */
  private readonly watching = new Map<string, Set<Watch>>()
  /** Per endpoint, the workers waiting in `waitToTake` on an empty queue, longest first. */
  private readonly idleTakers = new Map<string, Set<IdleTaker>>()
  private takerSerial = 0
  /** The hot statements, precompiled for the dialect. */
  private readonly statements: JobStatements
  private readonly countsCache = new CountsCache<JobCounts>(
    (c) => c.completed + c.failed + c.inProgress + c.inQueue,
  )

  constructor(options: KyselyJobQueueOptions) {
    this.db = options.db as Db
    this.dialect = options.dialect
    this.clock = options.clock ?? systemClock
    this.pollIntervalMs = options.pollIntervalMs ?? 200
    this.onWebhookQueued = options.onWebhookQueued
    this.wakeUps = options.wakeUps ?? new WakeUps()
    this.secrets = options.secrets
    // SQLite has one connection; PostgreSQL's pool lets a few batches commit side by side.
    const maxInFlight = this.postgres ? 4 : 1
    this.statements = new JobStatements(this.dialect)
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
      writeOne: (completion) =>
        this.db.transaction().execute((tx) => this.completeIn(tx, completion)),
      writeBatch: (completions) =>
        this.db.transaction().execute(async (tx) => {
          const outcomes: CompletionOutcome[] = []
          for (const completion of completions) outcomes.push(await this.completeIn(tx, completion))
          return outcomes
        }),
    })
  }

  private get postgres(): boolean {
    return this.dialect === 'postgres'
  }

  /** False when another replica's sweep holds the lock (PostgreSQL); always true on SQLite. */
  private async sweepLock(tx: Db): Promise<boolean> {
    if (!this.postgres) return true
    const result = await sql<{
      ok: boolean
    }>`select pg_try_advisory_xact_lock(${SWEEP_LOCK_KEY}) as ok`.execute(tx)
    return result.rows[0]?.ok === true
  }

  private changed(endpointId: string, jobId: string, written?: Written): void {
    this.countsCache.written(endpointId)
    this.wake(jobKey(endpointId, jobId), written)
  }

  /**
   * Wakes the long polls of `key` after a commit in this process. Their waits are told directly
   * that something changed, so they need not re-read the store to find out (bench/README.md,
   * step 10); a wake-up from another replica, or a poll's timer, still makes them re-read.
   */
  private wake(key: string, written?: Written): void {
    const watching = this.watching.get(key)
    if (watching !== undefined) {
      for (const watch of watching) {
        if (watch.endOnly && written !== undefined && !isTerminal(written.status)) {
          watch.baseline = written.version
        } else {
          watch.changed = true
          watch.job = written?.view
        }
      }
    }
    this.wakeUps.notify(key)
  }

  /**
   * Waits until `check` or a write in this process to `key` (see `wake`); a notification of
   * `alsoWakeOn` makes it check again too.
   */
  private async waitFor(
    key: string,
    check: () => Promise<boolean>,
    timeoutMs: number,
    signal?: AbortSignal,
    watch: Watch = { changed: false },
    alsoWakeOn?: string,
  ): Promise<boolean> {
    let watching = this.watching.get(key)
    if (watching === undefined) {
      watching = new Set()
      this.watching.set(key, watching)
    }
    watching.add(watch)
    try {
      return await this.wakeUps.waitUntil(
        alsoWakeOn === undefined ? key : [key, alsoWakeOn],
        async () => watch.changed || (await check()),
        timeoutMs,
        this.pollIntervalMs,
        signal,
      )
    } finally {
      watching.delete(watch)
      if (watching.size === 0) this.watching.delete(key)
    }
  }

  /**
   * For a job that has just become terminal (`row` as updated), inside that transaction: its
   * webhook delivery (docs/job-api.md "Webhooks"). True when one was added.
   */
  private async addWebhookDelivery(tx: Db, row: JobRow, now: number): Promise<boolean> {
    if (row.webhook === null) return false
    await insertWebhookDelivery(tx, toView(toJob(row)), now)
    return true
  }

  async submit(job: Job): Promise<void> {
    const taker = this.claimIdleTaker(job.endpointId)
    if (taker === undefined) {
      await this.submissions.write(job)
      this.countsCache.written(job.endpointId)
      this.wake(workKey(job.endpointId))
      return
    }
    // Handed straight to a worker waiting in `waitToTake`: stored as that worker's running job,
    // as a take would have left it, so the take's transaction is saved.
    const now = this.clock.now().getTime()
    const taken: Job = {
      ...job,
      status: 'IN_PROGRESS',
      workerId: taker.workerId,
      startedAt: iso(now),
      leaseExpiresAt: iso(now + taker.leaseMs),
      deadlineAt: iso(now + job.policy.executionTimeout),
      attempts: job.attempts + 1,
    }
    let handOver!: (job: Job | undefined) => void
    taker.handOff = new Promise((resolve) => {
      handOver = resolve
    })
    this.wakeUps.notifyHere(taker.key)
    try {
      await this.submissions.write(taken)
      this.countsCache.written(job.endpointId)
      handOver(taken)
    } catch (error) {
      handOver(undefined)
      throw error
    }
  }

  /**
   * The worker that has waited longest in `waitToTake` on the endpoint and can still answer,
   * taken off the list; undefined when none waits.
   */
  private claimIdleTaker(endpointId: string): IdleTaker | undefined {
    const takers = this.idleTakers.get(endpointId)
    if (takers === undefined) return undefined
    for (const taker of takers) {
      takers.delete(taker)
      if (!taker.signal?.aborted) {
        if (takers.size === 0) this.idleTakers.delete(endpointId)
        return taker
      }
    }
    this.idleTakers.delete(endpointId)
    return undefined
  }

  private async row(db: Db, endpointId: string, id: string, lock = false) {
    if (!lock || !this.postgres) {
      const [row] = await runStatement<JobRow>(db, this.statements.row, [id, endpointId])
      return row
    }
    let query = db
      .selectFrom('jobs')
      .selectAll()
      .where('id', '=', id)
      .where('endpoint_id', '=', endpointId)
    if (lock && this.postgres) query = query.forUpdate()
    return query.executeTakeFirst()
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
    const taken = await this.db.transaction().execute(async (tx) => {
      const now = this.clock.now().getTime()
      const candidates = await runStatement<TakeCandidate>(tx, this.statements.takeSelect, [
        endpointId,
        iso(now),
        max,
      ])
      const chosen = withinBudget(candidates, options.maxPayloadSize ?? Number.POSITIVE_INFINITY)
      // One update per execution timeout (the deadline depends on it), usually just one. The
      // rows cannot change in between: SQLite runs one transaction at a time, and PostgreSQL's
      // select locked them.
      const byTimeout = new Map<number, number[]>()
      for (const row of chosen) {
        const timeout = Number(row.execution_timeout_ms)
        const seqs = byTimeout.get(timeout) ?? []
        seqs.push(Number(row.seq))
        byTimeout.set(timeout, seqs)
      }
      const startedAt = iso(now)
      const leaseUntil = iso(now + options.leaseMs)
      const rows: JobRow[] = []
      for (const [timeout, seqs] of byTimeout) {
        const deadline = iso(now + timeout)
        for (const batch of chunks(seqs)) {
          rows.push(
            ...(await runStatement<JobRow>(tx, this.statements.takeUpdate(batch.length), [
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
    })
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
    for (const ids of chunks(jobIds)) {
      const rows = await this.db
        .updateTable('jobs')
        .set({ lease_expires_at: leaseUntil })
        .where('endpoint_id', '=', endpointId)
        .where('worker_id', '=', workerId)
        .where('status', '=', 'IN_PROGRESS')
        .where('id', 'in', ids)
        .returning('id')
        .execute()
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
    const applied = await this.db.transaction().execute(async (tx) => {
      let update = tx
        .updateTable('jobs')
        .set({
          stream_seq: sql`stream_seq + ${outputs.length}`,
          version: sql`version + 1`,
          // Numbered chunks: the attempt they count in and the next index expected.
          ...(firstIndex === undefined
            ? {}
            : {
                stream_attempt: sql`attempts`,
                stream_next_index: firstIndex + outputs.length,
              }),
        })
        .where('id', '=', jobId)
        .where('endpoint_id', '=', endpointId)
        .where('worker_id', '=', workerId)
        .where('status', '=', 'IN_PROGRESS')
      if (firstIndex !== undefined) {
        // Not a repeat: the attempt's first numbered chunk, or at or past the next index expected.
        update = update.where((eb) =>
          eb.or([
            eb('stream_attempt', '<>', eb.ref('attempts')),
            eb('stream_next_index', '<=', firstIndex),
          ]),
        )
      }
      const row = await update.returning('stream_seq').executeTakeFirst()
      if (row === undefined) return false
      const first = Number(row.stream_seq) - outputs.length + 1
      for (const batch of chunks(
        outputs.map((output, i) => ({
          job_id: jobId,
          seq: first + i,
          output: JSON.stringify(output ?? null),
        })),
        200,
      )) {
        await tx.insertInto('job_stream').values(batch).execute()
      }
      return true
    })
    if (!applied) {
      return {
        applied: false,
        reason: await this.ignoredReason(endpointId, jobId, workerId, firstIndex !== undefined),
      }
    }
    this.changed(endpointId, jobId)
    return { applied: true }
  }

  async readStream(
    endpointId: string,
    jobId: string,
    afterSeq?: number,
  ): Promise<StreamRead | undefined> {
    const read = async (db: Db, from: number) =>
      (
        await db
          .selectFrom('job_stream')
          .select(['seq', 'output'])
          .where('job_id', '=', jobId)
          .where('seq', '>', from)
          .orderBy('seq')
          .execute()
      ).map((r) => ({ seq: Number(r.seq), output: JSON.parse(r.output) as unknown }))
    if (afterSeq !== undefined) {
      const row = await this.row(this.db, endpointId, jobId)
      if (row === undefined) return undefined
      const found = await read(this.db, afterSeq)
      return {
        status: row.status as JobStatus,
        chunks: found,
        position: found.at(-1)?.seq ?? afterSeq,
      }
    }
    return this.db.transaction().execute(async (tx) => {
      const row = await this.row(tx, endpointId, jobId, true)
      if (row === undefined) return undefined
      const from = Number(row.stream_delivered)
      const found = await read(tx, from)
      const position = found.at(-1)?.seq ?? from
      if (position !== from) {
        await tx
          .updateTable('jobs')
          .set({ stream_delivered: position })
          .where('seq', '=', row.seq)
          .execute()
      }
      return { status: row.status as JobStatus, chunks: found, position }
    })
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

  /** The terminal transition of one completion, inside `tx` (maybe with other completions). */
  private async completeIn(
    tx: Db,
    { endpointId, jobId, workerId, result }: Completion,
  ): Promise<CompletionOutcome> {
    let webhook = false
    const outcome = await (async (): Promise<CompleteResult> => {
      const now = this.clock.now().getTime()
      // One conditional update (it locks the row on PostgreSQL); the job is read only to say
      // why nothing changed, which is rare.
      const parameters = [
        result.error !== undefined ? 'FAILED' : 'COMPLETED',
        jsonOrNull(result.output),
        result.error ?? null,
        this.completedAt.of(now),
        this.retainSync.of(now + resultRetentionMs(true)),
        this.retainAsync.of(now + resultRetentionMs(false)),
        jobId,
        endpointId,
        workerId,
      ]
      const [updated] = await runStatement<JobRow>(tx, this.statements.complete, parameters)
      if (updated === undefined) {
        const row = await this.row(tx, endpointId, jobId)
        if (row === undefined) return { applied: false, reason: 'not-found' }
        if (row.status !== 'IN_PROGRESS') return { applied: false, reason: 'not-in-progress' }
        return { applied: false, reason: 'not-owner' }
      }
      webhook = await this.addWebhookDelivery(tx, updated, now)
      return { applied: true, job: toView(toJob(updated)) }
    })()
    return { outcome, webhook }
  }

  /**
   * Adds a stop notice for the worker of a running job: it stops the job's current attempt
   * (`attempts`), so that a later attempt the same worker takes is not stopped by it.
   */
  private async addStop(
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

  private finishFields(row: JobRow, status: 'CANCELLED' | 'TIMED_OUT' | 'FAILED', now: number) {
    return {
      status,
      completed_at: iso(now),
      retain_until: iso(now + resultRetentionMs(Number(row.sync) === 1)),
      lease_expires_at: null,
      deadline_at: null,
      version: sql<number>`version + 1`,
    }
  }

  async cancel(endpointId: string, id: string): Promise<JobView | undefined> {
    const wake: string[] = []
    let webhook = false
    const job = await this.db.transaction().execute(async (tx) => {
      const row = await this.row(tx, endpointId, id, true)
      if (row === undefined) return undefined
      if (!allowedFrom('cancel').includes(row.status as JobStatus)) return toJob(row)
      const now = this.clock.now().getTime()
      const updated = await tx
        .updateTable('jobs')
        .set(this.finishFields(row, 'CANCELLED', now))
        .where('seq', '=', row.seq)
        .where('status', '=', row.status)
        .returningAll()
        .executeTakeFirst()
      if (updated === undefined) return toJob((await this.row(tx, endpointId, id)) ?? row)
      webhook = await this.addWebhookDelivery(tx, updated, now)
      if (row.status === 'IN_PROGRESS') {
        const key = await this.addStop(tx, row, 'cancelled', now)
        if (key !== undefined) wake.push(key)
      }
      return toJob(updated)
    })
    for (const key of wake) this.wakeUps.notify(key)
    if (job !== undefined) this.changed(endpointId, id)
    if (webhook) this.onWebhookQueued?.()
    return job && toView(job)
  }

  async retry(endpointId: string, id: string): Promise<RetryResult> {
    const result = await this.db.transaction().execute(async (tx): Promise<RetryResult> => {
      const row = await this.row(tx, endpointId, id, true)
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
    })
    if (result.retried) {
      this.wake(workKey(endpointId))
      this.changed(endpointId, id)
    }
    return result
  }

  async purgeQueued(endpointId: string): Promise<number> {
    const rows = await this.db
      .deleteFrom('jobs')
      .where('endpoint_id', '=', endpointId)
      .where('status', '=', 'IN_QUEUE')
      .returning('id')
      .execute()
    for (const ids of chunks(rows.map((r) => r.id))) {
      await this.db.deleteFrom('job_stream').where('job_id', 'in', ids).execute()
    }
    for (const row of rows) this.changed(endpointId, row.id)
    return rows.length
  }

  async deleteEndpointJobs(endpointId: string): Promise<number> {
    const ids = await this.db.transaction().execute(async (tx) => {
      const rows = await tx
        .deleteFrom('jobs')
        .where('endpoint_id', '=', endpointId)
        .returning('id')
        .execute()
      const gone = rows.map((r) => r.id)
      for (const batch of chunks(gone)) {
        await tx.deleteFrom('job_stream').where('job_id', 'in', batch).execute()
      }
      await tx.deleteFrom('job_stops').where('endpoint_id', '=', endpointId).execute()
      return gone
    })
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
    return this.countsCache.get(endpointId, () => this.readCounts(endpointId))
  }

  private async readCounts(endpointId: string): Promise<JobCounts> {
    const rows = await runStatement<{ status: string; n: number | string }>(
      this.db,
      this.statements.countByStatus,
      [endpointId],
    )
    const by = new Map(rows.map((r) => [r.status, Number(r.n)]))
    const [retried] = await runStatement<{ n: number | string }>(
      this.db,
      this.statements.countRetried,
      [endpointId],
    )
    return {
      completed: by.get('COMPLETED') ?? 0,
      failed: (by.get('FAILED') ?? 0) + (by.get('TIMED_OUT') ?? 0),
      inProgress: by.get('IN_PROGRESS') ?? 0,
      inQueue: by.get('IN_QUEUE') ?? 0,
      retried: Number(retried?.n ?? 0),
    }
  }

  async list(endpointId: string, options: { page: number; pageSize?: number }): Promise<JobPage> {
    const pageSize = Math.min(
      MAX_PAGE_SIZE,
      Math.max(1, Math.floor(options.pageSize ?? DEFAULT_JOB_PAGE_SIZE)),
    )
    const page = Math.max(1, Math.floor(options.page))
    const total = await this.db
      .selectFrom('jobs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('endpoint_id', '=', endpointId)
      .executeTakeFirstOrThrow()
    const rows = await this.db
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

  async requeueExpiredLeases(now: Date): Promise<{ requeued: string[]; timedOut: string[] }> {
    const at = now.getTime()
    const wake = new Set<string>()
    const moved: Array<{ endpointId: string; id: string; requeued: boolean }> = []
    let webhooks = false
    await this.db.transaction().execute(async (tx) => {
      if (!(await this.sweepLock(tx))) return
      let query = tx
        .selectFrom('jobs')
        .selectAll()
        .where(RUNNING)
        .where('lease_expires_at', '<=', iso(at))
      if (this.postgres) query = query.forUpdate().skipLocked()
      for (const row of await query.execute()) {
        const timedOut = row.deadline_at !== null && row.deadline_at <= iso(at)
        const exhausted = !timedOut && Number(row.attempts) >= MAX_JOB_ATTEMPTS
        const update = tx.updateTable('jobs')
        const set = timedOut
          ? update.set(this.finishFields(row, 'TIMED_OUT', at))
          : exhausted
            ? update.set({
                ...this.finishFields(row, 'FAILED', at),
                error: lostWorkerError(Number(row.attempts)),
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
        if (finished && updated && (await this.addWebhookDelivery(tx, updated, at))) webhooks = true
        const key = await this.addStop(tx, row, timedOut ? 'timed-out' : 'lease-lost', at)
        if (key !== undefined) wake.add(key)
        moved.push({ endpointId: row.endpoint_id, id: row.id, requeued: !finished })
      }
    })
    for (const key of wake) this.wakeUps.notify(key)
    for (const job of moved) {
      if (job.requeued) this.wake(workKey(job.endpointId))
      this.changed(job.endpointId, job.id)
    }
    if (webhooks) this.onWebhookQueued?.()
    return {
      requeued: moved.filter((m) => m.requeued).map((m) => m.id),
      timedOut: moved.filter((m) => !m.requeued).map((m) => m.id),
    }
  }

  async renewRunningLeases(until: Date): Promise<number> {
    const result = await this.db
      .updateTable('jobs')
      .set({ lease_expires_at: iso(until.getTime()) })
      .where(RUNNING)
      .where('lease_expires_at', '<', iso(until.getTime()))
      .executeTakeFirst()
    return Number(result.numUpdatedRows)
  }

  async expire(now: Date): Promise<{ timedOut: string[]; deleted: string[] }> {
    const at = iso(now.getTime())
    const wake = new Set<string>()
    const touched: Array<{ endpointId: string; id: string }> = []
    const timedOut: string[] = []
    const deleted: string[] = []
    let webhooks = false
    await this.db.transaction().execute(async (tx) => {
      if (!(await this.sweepLock(tx))) return
      // ttl first: a job past both its ttl and its deadline is simply gone.
      const gone = await tx
        .deleteFrom('jobs')
        .where((eb) => eb.or([eb('expires_at', '<=', at), eb('retain_until', '<=', at)]))
        .returning(['id', 'endpoint_id', 'worker_id', 'status', 'attempts'])
        .execute()
      for (const row of gone) {
        if (row.status === 'IN_PROGRESS') {
          const key = await this.addStop(tx, row, 'expired', now.getTime())
          if (key !== undefined) wake.add(key)
        }
        deleted.push(row.id)
        touched.push({ endpointId: row.endpoint_id, id: row.id })
      }
      for (const ids of chunks(deleted)) {
        await tx.deleteFrom('job_stream').where('job_id', 'in', ids).execute()
      }
      let late = tx.selectFrom('jobs').selectAll().where(RUNNING).where('deadline_at', '<=', at)
      if (this.postgres) late = late.forUpdate().skipLocked()
      for (const row of await late.execute()) {
        const updated = await tx
          .updateTable('jobs')
          .set(this.finishFields(row, 'TIMED_OUT', now.getTime()))
          .where('seq', '=', row.seq)
          .returningAll()
          .executeTakeFirst()
        if (updated && (await this.addWebhookDelivery(tx, updated, now.getTime()))) webhooks = true
        const key = await this.addStop(tx, row, 'timed-out', now.getTime())
        if (key !== undefined) wake.add(key)
        timedOut.push(row.id)
        touched.push({ endpointId: row.endpoint_id, id: row.id })
      }
      await tx
        .deleteFrom('job_stops')
        .where('created_at', '<=', iso(now.getTime() - STOP_NOTICE_RETENTION_MS))
        .execute()
    })
    for (const key of wake) this.wakeUps.notify(key)
    for (const job of touched) this.changed(job.endpointId, job.id)
    if (webhooks) this.onWebhookQueued?.()
    return { timedOut, deleted }
  }

  async takeStops(endpointId: string, workerId: string): Promise<StopNotice[]> {
    const rows = await this.db
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
      const jobs = await this.db
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

  async remindStops(endpointId: string, workerId: string, jobIds: string[]): Promise<number> {
    if (jobIds.length === 0) return 0
    const listed = [...new Set(jobIds)]
    const now = this.clock.now().getTime()
    const added = await this.db.transaction().execute(async (tx) => {
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
          await this.addStop(
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
    if (added > 0) this.wakeUps.notify(stopKey(endpointId, workerId))
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
    return this.waitFor(
      jobKey(endpointId, jobId),
      async () => (await this.version(endpointId, jobId)) !== baseline,
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
  async waitForEnd(
    endpointId: string,
    jobId: string,
    timeoutMs: number,
    sinceVersion: number,
    signal?: AbortSignal,
  ): Promise<JobView | boolean> {
    const watch: Watch = { changed: false, endOnly: true, baseline: sinceVersion }
    const changed = await this.waitFor(
      jobKey(endpointId, jobId),
      async () => (await this.version(endpointId, jobId)) !== watch.baseline,
      timeoutMs,
      signal,
      watch,
    )
    return changed && watch.changed && watch.job !== undefined ? watch.job : changed
  }

  async waitToTake(
    endpointId: string,
    taker: { workerId: string; leaseMs: number; max: number },
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<Job | boolean> {
    const idle: IdleTaker = {
      workerId: taker.workerId,
      leaseMs: taker.leaseMs,
      key: `taker:${endpointId}:${taker.workerId}:${++this.takerSerial}`,
      ...(signal ? { signal } : {}),
    }
    // Only a worker that takes one job at a time is handed one: a batch taker woken by the
    // first submission takes every job that arrived meanwhile in one take, and one job per take
    // and per result post would cost the server more than the take saved.
    const handsOff = taker.max === 1
    const unlist = () => {
      const takers = this.idleTakers.get(endpointId)
      if (takers?.delete(idle) && takers.size === 0) this.idleTakers.delete(endpointId)
    }
    try {
      const work = await this.waitFor(
        workKey(endpointId),
        async () => {
          if (idle.handOff !== undefined) return true
          const rows = await runStatement(this.db, this.statements.hasWork, [
            endpointId,
            iso(this.clock.now().getTime()),
          ])
          // Listed only while the queue, as last read, has nothing for it (and not once aborted).
          if (rows.length > 0 || signal?.aborted) unlist()
          else if (handsOff && idle.handOff === undefined) this.listIdleTaker(endpointId, idle)
          // Claimed while it read: done waiting either way.
          return rows.length > 0 || idle.handOff !== undefined
        },
        timeoutMs,
        signal,
        undefined,
        idle.key,
      )
      // A job claimed for it just as the wait ended is still its job (a claim unlists it).
      const handed = idle.handOff === undefined ? undefined : await idle.handOff
      return handed ?? work
    } finally {
      unlist()
    }
  }

  private listIdleTaker(endpointId: string, taker: IdleTaker): void {
    let takers = this.idleTakers.get(endpointId)
    if (takers === undefined) {
      takers = new Set()
      this.idleTakers.set(endpointId, takers)
    }
    takers.add(taker)
  }

  async waitForStops(
    endpointId: string,
    workerId: string,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<boolean> {
    return this.wakeUps.waitUntil(
      stopKey(endpointId, workerId),
      async () => {
        const row = await this.db
          .selectFrom('job_stops')
          .select('seq')
          .where('endpoint_id', '=', endpointId)
          .where('worker_id', '=', workerId)
          .limit(1)
          .executeTakeFirst()
        return row !== undefined
      },
      timeoutMs,
      this.pollIntervalMs,
      signal,
    )
  }
  async releaseWorker(endpointId: string, workerId: string): Promise<number> {
    const result = await this.db
      .updateTable('jobs')
      .set({ lease_expires_at: iso(this.clock.now().getTime()) })
      .where('endpoint_id', '=', endpointId)
      .where('worker_id', '=', workerId)
      .where('status', '=', 'IN_PROGRESS')
      .executeTakeFirst()
    return Number(result.numUpdatedRows)
  }

  async scalingStats(endpointId: string): Promise<ScalingStats> {
    const now = iso(this.clock.now().getTime())
    const queued = await this.db
      .selectFrom('jobs')
      .select((eb) => [eb.fn.countAll<number>().as('count'), eb.fn.min('created_at').as('oldest')])
      .where('endpoint_id', '=', endpointId)
      .where('status', '=', 'IN_QUEUE')
      .where('low_priority', '=', 0)
      .where('expires_at', '>', now)
      .executeTakeFirstOrThrow()
    // Grouped by worker: the same rows as a plain count, read through the same index.
    const running = await this.db
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
}
