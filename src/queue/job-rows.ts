import { sql, type Kysely, type Selectable } from 'kysely'
import {
  resultRetentionMs,
  type Job,
  type JobStatus,
  type JobView,
} from '../domain/serverless/job.js'
import type { JobQueueDatabase, JobsTable } from './job-tables.js'
import { runStatement, type JobStatements } from './job-statements.js'
import { insertWebhookDelivery } from './kysely-webhook-deliveries.js'

/**
 * The `jobs` table's rows (docs/serverless-queue.md): how a job is stored and read back, and
 * what every write that ends a job sets. Shared by the queue's parts (kysely-job-queue.ts,
 * job-sweeps.ts, stop-notices.ts, job-streams.ts).
 */
export type JobRow = Selectable<JobsTable>
export type Db = Kysely<JobQueueDatabase>

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

/** Ids per `in (...)` list, well under either dialect's parameter limit. */
export const ID_BATCH = 500

export const iso = (ms: number) => new Date(ms).toISOString()

/**
 * The running jobs, as the partial index `jobs_running` names them (migration 0014): a literal,
 * not a parameter, so that the planner can tell the sweep's rows are all in that index.
 */
export const RUNNING = sql<boolean>`status = 'IN_PROGRESS'`

/**
 * `iso` of an instant that repeats: the completions of one batch mostly share their millisecond,
 * and formatting a date was 2 % of the server's time per job (bench/README.md).
 */
export class IsoMemo {
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
export function toJob(row: JobRow, secrets?: SecretSealer): Job {
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
  if (row.trace_parent)
    job.trace = { traceparent: row.trace_parent, requestId: row.request_id ?? '' }
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

export function toView(job: Job): JobView {
  const { s3Config: _hidden, ...view } = job
  return view
}

export function chunks<T>(items: T[], size = ID_BATCH): T[][] {
  const out: T[][] = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

/** Undefined output is stored as SQL NULL; JSON `null` as well (they read back the same). */
export function jsonOrNull(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value)
}

/** A new job's values in the order of `INSERT_COLUMNS` (src/queue/job-statements.ts). */
export function insertValues(job: Job, into: unknown[], secrets: SecretSealer | undefined): void {
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
    job.trace?.traceparent ?? null,
    job.trace?.requestId ?? null,
  )
}

/** What a write that ends a job (cancel, timeout, a lost worker's last attempt) sets. */
export function finishFields(
  row: JobRow,
  status: 'CANCELLED' | 'TIMED_OUT' | 'FAILED',
  now: number,
) {
  return {
    status,
    completed_at: iso(now),
    retain_until: iso(now + resultRetentionMs(Number(row.sync) === 1)),
    lease_expires_at: null,
    deadline_at: null,
    version: sql<number>`version + 1`,
  }
}

/**
 * For a job that has just become terminal (`row` as updated), inside that transaction: its
 * webhook delivery (docs/job-api.md "Webhooks"). True when one was added.
 */
export async function addWebhookDelivery(tx: Db, row: JobRow, now: number): Promise<boolean> {
  if (row.webhook === null) return false
  await insertWebhookDelivery(tx, toView(toJob(row)), now)
  return true
}

/**
 * A job's row, or undefined. `lock` (PostgreSQL) locks it for the transaction `db` is: the read
 * then an update of a cancel, a retry or a cursor-less stream read.
 */
export async function readJobRow(
  db: Db,
  statements: JobStatements,
  endpointId: string,
  id: string,
  lock = false,
): Promise<JobRow | undefined> {
  if (!lock || statements.dialect !== 'postgres') {
    const [row] = await runStatement<JobRow>(db, statements.row, [id, endpointId])
    return row
  }
  return db
    .selectFrom('jobs')
    .selectAll()
    .where('id', '=', id)
    .where('endpoint_id', '=', endpointId)
    .forUpdate()
    .executeTakeFirst()
}
