import type { Database as SqliteDatabase, Statement } from 'better-sqlite3'
import type { SqliteDatabase as KyselySqliteDatabase } from 'kysely'

/** Distinct SQL texts kept prepared; `in (?, ?, ...)` lists of many lengths make the set open. */
export const STATEMENT_CACHE_SIZE = 500

/**
 * The database as Kysely's SQLite driver sees it, with prepared statements reused. The driver
 * prepares every query it runs, and preparing (parsing and planning) cost more than running most
 * of the queue's statements (bench/README.md). A statement still iterating (a streamed query)
 * is busy and cannot run twice at once, so a fresh one is prepared for that text meanwhile.
 */
export function withStatementCache(
  database: SqliteDatabase,
  size = STATEMENT_CACHE_SIZE,
): KyselySqliteDatabase {
  const cache = new Map<string, Statement>()
  return {
    close: () => database.close(),
    prepare: (sql: string) => {
      const cached = cache.get(sql)
      if (cached !== undefined && !cached.busy) return cached
      const statement = database.prepare(sql)
      if (cached === undefined) {
        // Oldest first: Map keeps insertion order.
        if (cache.size >= size) cache.delete(cache.keys().next().value!)
        cache.set(sql, statement)
      }
      return statement
    },
  }
}
