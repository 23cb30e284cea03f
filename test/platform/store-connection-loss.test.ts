import { sql } from 'kysely'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openStore, type Store } from '../../src/store/open-store.js'
import { freshPostgresDatabase, POSTGRES_URL_ENV } from '../support/stores.js'

const postgresUrl = process.env[POSTGRES_URL_ENV]
if (!postgresUrl) {
  console.log(`store connection loss: skipped: set ${POSTGRES_URL_ENV} to run it`)
}

describe.skipIf(!postgresUrl)('a PostgreSQL store whose connections are cut', () => {
  let database: { url: string; drop: () => Promise<void> }
  let store: Store
  const lost: Error[] = []

  beforeAll(async () => {
    database = await freshPostgresDatabase(postgresUrl!)
    store = await openStore(database.url, { onIdleConnectionError: (error) => lost.push(error) })
  })
  afterAll(async () => {
    await store?.close()
    await database?.drop()
  })

  it('survives the server terminating its idle connections (a PostgreSQL restart, a failover) and serves the next query', async () => {
    // Several idle connections in the pool.
    await Promise.all(Array.from({ length: 4 }, () => sql`select pg_sleep(0.05)`.execute(store.db)))
    const admin = new pg.Client({ connectionString: postgresUrl })
    await admin.connect()
    try {
      const name = new URL(database.url).pathname.slice(1)
      const { rowCount } = await admin.query(
        'select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
        [name],
      )
      expect(rowCount).toBeGreaterThan(0)
    } finally {
      await admin.end()
    }
    // The pool hears of the loss on its idle clients (an 'error' event each); without a
    // listener Node raises it as an uncaught exception, which kills a server.
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(lost.length).toBeGreaterThan(0)
    const rows = await sql<{ one: number }>`select 1 as one`.execute(store.db)
    expect(rows.rows[0]?.one).toBe(1)
  })
})
