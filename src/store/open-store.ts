import { mkdirSync } from 'node:fs'
import path from 'node:path'
import SqliteDatabase, { type Statement as SqliteStatement } from 'better-sqlite3'
import { Kysely, PostgresDialect, SqliteDialect, sql, type KyselyConfig } from 'kysely'
import type pg from 'pg'
import type { Database } from './database-schema.js'
import { FALLBACK_AUTOCHECKPOINT_PAGES, SqliteCheckpointer } from './sqlite-checkpointer.js'
import { runDirectlyOnSqlite } from './direct-sqlite.js'
import { withStatementCache } from './sqlite-statement-cache.js'

import {
  storeCapabilities,
  type StoreCapabilities,
  type StoreDialect,
} from '../shared/store-capabilities.js'

export type Dialect = StoreDialect

export interface Store {
  readonly db: Kysely<Database>
  readonly dialect: Dialect
  /** What the database can do; branch on these rather than on `dialect`. */
  readonly capabilities: StoreCapabilities
  /** The URL with any password removed, for logs. */
  readonly displayUrl: string
  ping(): Promise<void>
  close(): Promise<void>
  /** PostgreSQL: the connection pool now (`max` is its size); SQLite has one connection. */
  pool?(): { total: number; idle: number; waiting: number; max: number }
}

const PG_INT8 = 20
const PG_TIMESTAMPTZ = 1184
const PG_TIMESTAMP = 1114
const PG_JSON = 114
const PG_JSONB = 3802

function postgresTypes(types: typeof pg.types): pg.CustomTypesConfig {
  const toIso =
    (oid: number) =>
    (value: string): string =>
      (types.getTypeParser(oid) as (v: string) => Date)(value).toISOString()
  return {
    getTypeParser: ((oid: number, format?: string) => {
      if (oid === PG_INT8) return (value: string) => Number(value)
      if (oid === PG_TIMESTAMPTZ || oid === PG_TIMESTAMP) return toIso(oid)
      // Repositories parse JSON themselves so both dialects hand them the same string.
      if (oid === PG_JSON || oid === PG_JSONB) return (value: string) => value
      return types.getTypeParser(oid, format as 'text')
    }) as pg.CustomTypesConfig['getTypeParser'],
  }
}

export function redactUrl(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@')
}

/** Opens `sqlite:<file>` (WAL), `sqlite::memory:` or `postgres://...`. */
export interface OpenStoreOptions {
  /**
   * Told when PostgreSQL drops an idle pooled connection (a restart, a failover, an
   * administrator's pg_terminate_backend). The pool discards it and the next query opens a new
   * one; without a listener the pool's 'error' event would be an uncaught exception and end the
   * process.
   */
  onIdleConnectionError?: (error: Error) => void
  /**
   * SQLite file stores: checkpoint the WAL from a thread of its own (`SqliteCheckpointer`)
   * instead of inside the server's commits. `onCheckpointError` hears what that thread reports.
   */
  checkpointInBackground?: boolean
  onCheckpointError?: (message: string) => void
  /** Told how long each statement took (seconds), and whether it failed: the metrics. */
  onQuery?: (seconds: number, failed: boolean) => void
}

/** Kysely's log hook for `onQuery`: it times each statement when given one. */
function queryLog(onQuery: OpenStoreOptions['onQuery']): KyselyConfig['log'] {
  if (!onQuery) return undefined
  return (event) => onQuery(event.queryDurationMillis / 1000, event.level === 'error')
}

export async function openStore(url: string, options: OpenStoreOptions = {}): Promise<Store> {
  if (url.startsWith('sqlite:')) {
    const file = url.slice('sqlite:'.length)
    if (file !== ':memory:') mkdirSync(path.dirname(path.resolve(file)), { recursive: true })
    const database = new SqliteDatabase(file)
    database.pragma('journal_mode = WAL')
    database.pragma('busy_timeout = 5000')
    database.pragma('foreign_keys = ON')
    database.pragma('synchronous = NORMAL')
    let checkpointer: SqliteCheckpointer | undefined
    if (options.checkpointInBackground && file !== ':memory:') {
      database.pragma(`wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`)
      // A first read opens the WAL and creates its index (`-shm`), which the checkpointer reads.
      database.prepare('select count(*) from sqlite_master').get()
      checkpointer = new SqliteCheckpointer(
        file,
        options.onCheckpointError ? { onError: options.onCheckpointError } : {},
      )
    }
    const log = queryLog(options.onQuery)
    const cached = withStatementCache(database)
    const db = new Kysely<Database>({
      dialect: new SqliteDialect({ database: cached }),
      ...(log ? { log } : {}),
    })
    runDirectlyOnSqlite(db, {
      prepare: (text) => cached.prepare(text) as SqliteStatement,
      get inTransaction() {
        return database.inTransaction
      },
      ...(options.onQuery ? { onQuery: options.onQuery } : {}),
    })
    return {
      db,
      dialect: 'sqlite',
      capabilities: storeCapabilities('sqlite'),
      displayUrl: url,
      ping: async () => {
        await sql`select 1`.execute(db)
      },
      close: async () => {
        await checkpointer?.stop()
        await db.destroy()
        checkpointer?.closeIndex()
      },
    }
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    const max = 10
    // Loaded for PostgreSQL only: a server on SQLite (the default) never needs it.
    const { default: postgres } = await import('pg')
    const pool = new postgres.Pool({
      connectionString: url,
      types: postgresTypes(postgres.types),
      max,
    })
    pool.on('error', (error) => options.onIdleConnectionError?.(error))
    const log = queryLog(options.onQuery)
    const db = new Kysely<Database>({
      dialect: new PostgresDialect({ pool }),
      ...(log ? { log } : {}),
    })
    return {
      db,
      dialect: 'postgres',
      capabilities: storeCapabilities('postgres'),
      pool: () => ({
        total: pool.totalCount,
        idle: pool.idleCount,
        waiting: pool.waitingCount,
        max,
      }),
      displayUrl: redactUrl(url),
      ping: async () => {
        await sql`select 1`.execute(db)
      },
      close: () => db.destroy(),
    }
  }
  throw new Error(`unsupported store URL ${redactUrl(url)}: use sqlite:<file> or postgres://...`)
}
