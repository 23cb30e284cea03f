import { CompiledQuery, PostgresAdapter, type Kysely } from 'kysely'
import { directChanges, directRows } from './direct-sqlite.js'
import type { Database } from './database-schema.js'

/**
 * Hot statements as SQL text, run without Kysely's query builder, which costs more to build and
 * compile a query than SQLite takes to run most of them (as the job queue does:
 * src/queue/job-statements.ts). A text is written once with `?` placeholders; `Statement`
 * holds it numbered `$1, $2, ...` for PostgreSQL too.
 */
export class Statement {
  private readonly postgres: string

  constructor(readonly sqlite: string) {
    let n = 0
    this.postgres = sqlite.replace(/\?/g, () => `$${++n}`)
  }

  /** The text for the dialect of `db` (a Kysely instance or one of its transactions). */
  textFor(db: Kysely<Database>): string {
    return db.getExecutor().adapter instanceof PostgresAdapter ? this.postgres : this.sqlite
  }
}

/** The rows `statement` returns. */
export async function rowsOf<R>(
  db: Kysely<Database>,
  statement: Statement,
  parameters: readonly unknown[],
): Promise<R[]> {
  const rows = directRows<R>(db, statement.sqlite, parameters)
  if (rows) return rows
  const query = CompiledQuery.raw(statement.textFor(db), [...parameters])
  return (await db.executeQuery<R>(query)).rows
}

/** How many rows `statement` changed. */
export async function changesOf(
  db: Kysely<Database>,
  statement: Statement,
  parameters: readonly unknown[],
): Promise<number> {
  const changes = directChanges(db, statement.sqlite, parameters)
  if (changes !== undefined) return changes
  const query = CompiledQuery.raw(statement.textFor(db), [...parameters])
  return Number((await db.executeQuery(query)).numAffectedRows ?? 0n)
}
