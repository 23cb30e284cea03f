import { performance } from 'node:perf_hooks'
import type { Statement as SqliteStatement } from 'better-sqlite3'
import type { Kysely } from 'kysely'

/**
 * The SQLite connection behind a store's Kysely instance, on which the statements written as SQL
 * text (src/store/raw-sql.ts, src/queue/job-statements.ts) run without Kysely's path to it: its
 * connection mutex, provider and runtime driver cost half a dozen promises a statement, more
 * than SQLite takes to run most of them (bench/README.md). better-sqlite3 runs a statement
 * synchronously, and the store has one connection, so:
 *
 * - on the store's Kysely instance itself, a statement runs directly while no transaction is
 *   open (it cannot interleave with another statement); while one is open it goes through
 *   Kysely, which makes it wait for the transaction's end, so it never sees writes that may yet
 *   be rolled back;
 * - on a Kysely transaction of it, a statement runs directly while the connection is in a
 *   transaction, which can only be that one (Kysely lends the connection to one at a time).
 */
export interface DirectSqlite {
  /** A prepared statement of the text (the store's statement cache). */
  prepare(sql: string): SqliteStatement
  /** Whether the connection is inside a transaction. */
  readonly inTransaction: boolean
  /** Told how long each statement took and whether it failed, as Kysely's log hook is. */
  onQuery?: (seconds: number, failed: boolean) => void
}

// Keyed by the dialect's adapter, which a Kysely instance shares with its transactions.
const connections = new WeakMap<object, DirectSqlite>()

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyKysely = Kysely<any>

/** Lets statements on `db` and its transactions run on `connection` directly (above). */
export function runDirectlyOnSqlite(db: AnyKysely, connection: DirectSqlite): void {
  connections.set(db.getExecutor().adapter, connection)
}

function directOf(db: AnyKysely): DirectSqlite | undefined {
  const direct = connections.get(db.getExecutor().adapter)
  return direct && direct.inTransaction === db.isTransaction ? direct : undefined
}

function run<T>(direct: DirectSqlite, text: string, use: (prepared: SqliteStatement) => T): T {
  const started = direct.onQuery ? performance.now() : 0
  let failed = true
  try {
    const result = use(direct.prepare(text))
    failed = false
    return result
  } finally {
    direct.onQuery?.((performance.now() - started) / 1000, failed)
  }
}

/**
 * The rows of the SQLite `text` run directly on `db`'s connection, or `undefined` when it cannot
 * be (not SQLite, or a transaction in the way): then the caller runs it through Kysely. As
 * Kysely's SQLite driver, a statement that returns no data answers no rows.
 */
export function directRows<R>(
  db: AnyKysely,
  text: string,
  parameters: readonly unknown[],
): R[] | undefined {
  const direct = directOf(db)
  if (!direct) return undefined
  return run(direct, text, (prepared) =>
    prepared.reader ? (prepared.all(parameters) as R[]) : (prepared.run(parameters), []),
  )
}

/**
 * How many rows the SQLite `text` changed, run directly as `directRows` is, or `undefined`. As
 * Kysely's SQLite driver, a statement that returns data reports no changes.
 */
export function directChanges(
  db: AnyKysely,
  text: string,
  parameters: readonly unknown[],
): number | undefined {
  const direct = directOf(db)
  if (!direct) return undefined
  return run(direct, text, (prepared) =>
    prepared.reader ? (prepared.all(parameters), 0) : prepared.run(parameters).changes,
  )
}
