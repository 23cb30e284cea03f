import { CompiledQuery, PostgresAdapter, type Kysely } from 'kysely'
import type { Database } from './database-schema.js'

/**
 * The pods' hottest statements (a create, a lifecycle step, a read by id) as SQL text written
 * once per dialect and run without Kysely's query builder, which costs more to build and
 * compile a query than SQLite takes to run these (as for the job queue: src/queue/
 * job-statements.ts). Written with `?` placeholders, numbered `$1, $2, ...` for PostgreSQL.
 */
class PodStatements {
  readonly podById: string
  readonly podInsert: string
  readonly podUpdate: string
  readonly eventAppend: string
  readonly allocationInsert: string
  readonly allocationDelete: string
  readonly allocationByOwner: string
  readonly allocationEpoch: string

  constructor(postgres: boolean) {
    const text = (sql: string) => {
      let n = 0
      return postgres ? sql.replace(/\?/g, () => `$${++n}`) : sql
    }
    this.podById = text('select doc from pods where id = ?')
    this.podInsert = text(
      'insert into pods (id, account_id, name, status, host_id, version, created_at, terminated_at, doc) ' +
        'values (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    )
    this.podUpdate = text(
      'update pods set account_id = ?, name = ?, status = ?, host_id = ?, version = ?, ' +
        'created_at = ?, terminated_at = ?, doc = ? where id = ? and version = ?',
    )
    this.eventAppend = text('insert into pod_events (pod_id, ts, line) values (?, ?, ?)')
    this.allocationInsert = text(
      'insert into allocations (id, host_id, owner_kind, owner_id, gpu_count, gpu_indices, ' +
        'vcpus, memory_gb, disk_gb, created_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    )
    this.allocationDelete = text('delete from allocations where owner_kind = ? and owner_id = ?')
    this.allocationByOwner = text('select * from allocations where owner_kind = ? and owner_id = ?')
    this.allocationEpoch = 'select epoch from allocation_epoch where id = 1'
  }
}

const sqlite = new PodStatements(false)
const postgres = new PodStatements(true)

/** The statements in the dialect of `db` (a Kysely instance or one of its transactions). */
export function podStatements(db: Kysely<Database>): PodStatements {
  return db.getExecutor().adapter instanceof PostgresAdapter ? postgres : sqlite
}

/** The rows `text` returns. */
export async function rowsOf<R>(
  db: Kysely<Database>,
  text: string,
  parameters: readonly unknown[],
): Promise<R[]> {
  return (await db.executeQuery<R>(CompiledQuery.raw(text, [...parameters]))).rows
}

/** How many rows `text` changed. */
export async function changesOf(
  db: Kysely<Database>,
  text: string,
  parameters: readonly unknown[],
): Promise<number> {
  const result = await db.executeQuery(CompiledQuery.raw(text, [...parameters]))
  return Number(result.numAffectedRows ?? 0n)
}
