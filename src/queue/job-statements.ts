import { directRows } from '../store/direct-sqlite.js'
import { CompiledQuery, type Kysely } from 'kysely'
import { RETIRED_WORKER_PHASES } from '../domain/serverless/worker.js'
import { BY_LOCK_ORDER } from './lock-order.js'
import type { JobQueueDatabase } from './job-tables.js'

/**
 * The queue's hottest statements as SQL text written once per dialect, run without Kysely's
 * query builder: building and compiling a query cost 30 to 50 µs each, more than SQLite took to
 * run most of them (bench/README.md, step 7). Only the submission, take, completion and the
 * long polls' re-checks are here; everything else keeps the builder.
 *
 * Texts are written with `?` placeholders (SQLite's) and numbered `$1, $2, ...` for PostgreSQL;
 * none of them has a `?` anywhere else.
 */
export type QueueDialect = 'sqlite' | 'postgres'

/**
 * Columns of a new job; the others take their defaults (NULL, 0, version 1). The worker's
 * columns are set when the job is handed straight to a waiting worker (`waitToTake`).
 */
export const INSERT_COLUMNS = [
  'id',
  'endpoint_id',
  'account_id',
  'status',
  'sync',
  'low_priority',
  'execution_timeout_ms',
  'ttl_ms',
  'input',
  'webhook',
  's3_config',
  'created_at',
  'expires_at',
  'worker_id',
  'started_at',
  'lease_expires_at',
  'deadline_at',
  'attempts',
  'payload_size',
  'trace_parent',
  'request_id',
] as const

function numbered(text: string): string {
  let n = 0
  return text.replace(/\?/g, () => `$${++n}`)
}

const list = (n: number, item: string) => Array.from({ length: n }, () => item).join(', ')

/**
 * A row when the worker (one `?`) is one the store knows as gone for good (UNHEALTHY, STOPPED:
 * a worker lost with its host may run on and call); none for a worker without a row (one that
 * connects by itself). Uncorrelated, so evaluated once per statement, by the primary key of
 * `workers`.
 */
const RETIRED = `select 1 from workers where id = ? and phase in (${RETIRED_WORKER_PHASES.map((p) => `'${p}'`).join(', ')})`
const NOT_RETIRED = `not exists (${RETIRED})`

export class JobStatements {
  private readonly inserts = new Map<number, string>()
  private readonly takeUpdates = new Map<number, string>()
  private readonly heartbeats = new Map<number, string>()
  private readonly completeBatches = new Map<number, string>()
  readonly takeSelect: string
  readonly complete: string
  readonly row: string
  readonly version: string
  readonly workFor: string
  readonly countByStatus: string
  readonly countRetried: string

  constructor(readonly dialect: QueueDialect) {
    const postgres = dialect === 'postgres'
    // Only what the take decides with: the size of what the worker is sent is measured here, and
    // the rows it is not sent are never read (docs/job-api.md, "Take budget").
    // Parameters: endpoint, now, worker, limit. A retired worker's take finds nothing: the check
    // and the rows are read in one snapshot, and a lost worker is retired in the transaction
    // that requeues its jobs, so it never takes those back (JobQueue.requeueWorkerJobs).
    this.takeSelect = this.text(
      `select seq, execution_timeout_ms, payload_size from jobs where endpoint_id = ? and status = 'IN_QUEUE' and expires_at > ? and ${NOT_RETIRED} order by created_at, seq limit ?${postgres ? ' for update skip locked' : ''}`,
    )
    // A finished job's retention depends on the row's `sync` (docs/job-api.md, "Retention").
    const retain = postgres
      ? 'cast(case when sync = 1 then ? else ? end as timestamptz)'
      : 'case when sync = 1 then ? else ? end'
    this.complete = this.text(
      `update jobs set status = ?, output = ?, error = ?, completed_at = ?, retain_until = ${retain}, lease_expires_at = null, deadline_at = null, version = version + 1 where id = ? and endpoint_id = ? and worker_id = ? and status = 'IN_PROGRESS' returning *`,
    )
    this.row = this.text('select * from jobs where id = ? and endpoint_id = ?')
    this.version = this.text('select version from jobs where id = ? and endpoint_id = ?')
    // A long poll's re-check (`waitToTake`): whether the endpoint has a job to take, and whether
    // the worker is retired (then it waits as on an empty queue, and is never handed a job).
    // Parameters: endpoint, now, worker; one row, `work` null when there is none.
    this.workFor = this.text(
      `select (select seq from jobs where endpoint_id = ? and status = 'IN_QUEUE' and expires_at > ? limit 1) as work, (${RETIRED}) as retired`,
    )
    // `/health` (docs/job-api.md): read from indexes only, never the jobs' rows. `jobs_queue`
    // covers the counts per status; the partial index `jobs_retried` holds only retried jobs,
    // and its condition is a literal so that the planner can use it (migration 0020).
    this.countByStatus = this.text(
      'select status, count(*) as n from jobs where endpoint_id = ? group by status',
    )
    this.countRetried = this.text(
      'select count(*) as n from jobs where endpoint_id = ? and retries > 0',
    )
    this.takeAtOnce = this.text(
      `with candidates as materialized (select seq, created_at, payload_size from jobs where endpoint_id = ? and status = 'IN_QUEUE' and expires_at > ? and ${NOT_RETIRED} order by created_at, seq limit ? for update skip locked), ` +
        `chosen as (select seq from (select seq, sum(payload_size) over (order by created_at, seq) as total, row_number() over (order by created_at, seq) as n from candidates) as ranked where n = 1 or total <= ?) ` +
        `update jobs set status = 'IN_PROGRESS', worker_id = ?, started_at = cast(? as timestamptz), lease_expires_at = cast(? as timestamptz), deadline_at = cast(? as timestamptz) + execution_timeout_ms * interval '1 millisecond', attempts = attempts + 1, version = version + 1 where seq in (select seq from chosen) returning *`,
    )
  }

  /**
   * A column SQLite's planner must not pick an index for: given `seq in (...) and status = ...`
   * it chose to scan every queued row through a status index instead of looking the seqs up,
   * which made a take cost O(queue length). A unary `+` turns the index off (SQLite only).
   */
  private unindexed(column: string): string {
    return this.dialect === 'sqlite' ? `+${column}` : column
  }

  private text(sqlite: string): string {
    return this.dialect === 'postgres' ? numbered(sqlite) : sqlite
  }

  /** A multi-row insert of `n` jobs, `INSERT_COLUMNS` per row. */
  insert(n: number): string {
    let text = this.inserts.get(n)
    if (text === undefined) {
      const row = `(${list(INSERT_COLUMNS.length, '?')})`
      text = this.text(`insert into jobs (${INSERT_COLUMNS.join(', ')}) values ${list(n, row)}`)
      this.inserts.set(n, text)
    }
    return text
  }

  /**
   * Takes `n` queued rows by seq: worker, started, lease, deadline, then the seqs. The rows come
   * back from the update itself, each read once: the take's select (which locked them on
   * PostgreSQL) read only their sizes.
   */
  takeUpdate(n: number): string {
    let text = this.takeUpdates.get(n)
    if (text === undefined) {
      text = this.text(
        `update jobs set status = 'IN_PROGRESS', worker_id = ?, started_at = ?, lease_expires_at = ?, deadline_at = ?, attempts = attempts + 1, version = version + 1 where seq in (${list(n, '?')}) and ${this.unindexed('status')} = 'IN_QUEUE' returning *`,
      )
      this.takeUpdates.set(n, text)
    }
    return text
  }

  /**
   * PostgreSQL: a whole take in one statement (one round trip instead of begin, select, update
   * and commit): the endpoint's oldest queued rows up to `limit` are locked skipping locked ones,
   * cut to the payload budget (the first always taken), and moved to IN_PROGRESS with the
   * deadline of each row's own execution timeout; nothing for a retired worker (`takeSelect`).
   * Parameters: endpoint, now, worker, limit, budget, worker, started, lease, started. The rows
   * come back in no set order.
   */
  readonly takeAtOnce: string

  /**
   * PostgreSQL: `n` completions in one statement. Parameters, per completion: its index, job
   * id, endpoint, worker, status, output (JSON text or null), error; then completed_at and the
   * retention of sync and async jobs. The rows are locked in the lock order first; each row
   * returned carries `completion_index`, the index of the completion that ended it.
   */
  completeBatch(n: number): string {
    let text = this.completeBatches.get(n)
    if (text === undefined) {
      const row =
        '(cast(? as integer), cast(? as text), cast(? as text), cast(? as text), cast(? as text), cast(? as jsonb), cast(? as text))'
      text = this.text(
        `with c (completion_index, id, endpoint_id, worker_id, status, output, error) as (values ${list(n, row)}), ` +
          `locked as materialized (select seq from jobs where id in (select id from c) ${BY_LOCK_ORDER} for update) ` +
          `update jobs set status = c.status, output = c.output, error = c.error, completed_at = cast(? as timestamptz), retain_until = case when jobs.sync = 1 then cast(? as timestamptz) else cast(? as timestamptz) end, lease_expires_at = null, deadline_at = null, version = jobs.version + 1 ` +
          `from c where jobs.seq in (select seq from locked) and jobs.id = c.id and jobs.endpoint_id = c.endpoint_id and jobs.worker_id = c.worker_id and jobs.status = 'IN_PROGRESS' returning jobs.*, c.completion_index`,
      )
      this.completeBatches.set(n, text)
    }
    return text
  }

  /**
   * Renews the leases of `n` jobs the worker holds: the lease's end, endpoint, worker, then the
   * ids; returns the ids renewed. On PostgreSQL the rows are locked in the lock order first
   * (src/queue/lock-order.ts): a plain `update ... where id in (...)` locks them in whatever
   * order its plan visits them, and deadlocked with batched completions.
   */
  heartbeat(n: number): string {
    let text = this.heartbeats.get(n)
    if (text === undefined) {
      const held = `endpoint_id = ? and worker_id = ? and status = 'IN_PROGRESS' and id in (${list(n, '?')})`
      text = this.text(
        this.dialect === 'postgres'
          ? `update jobs set lease_expires_at = ? where seq in (select seq from jobs where ${held} ${BY_LOCK_ORDER} for update) returning id`
          : `update jobs set lease_expires_at = ? where ${held} returning id`,
      )
      this.heartbeats.set(n, text)
    }
    return text
  }
}

/**
 * Runs a statement of `JobStatements` on `db` (or a transaction of it); its rows. On SQLite,
 * directly on the connection when it can be (src/shared/direct-sqlite.ts).
 */
export async function runStatement<R>(
  db: Kysely<JobQueueDatabase>,
  text: string,
  parameters: readonly unknown[],
): Promise<R[]> {
  const rows = directRows<R>(db, text, parameters)
  if (rows) return rows
  const result = await db.executeQuery<R>(CompiledQuery.raw(text, parameters as unknown[]))
  return result.rows
}
