import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrateToLatest } from '../store/migrate.js'
import { openStore, type Store } from '../store/open-store.js'
import { testStores } from '../../test/support/stores.js'
import { INSERT_COLUMNS, JobStatements } from './job-statements.js'

describe('JobStatements', () => {
  it('numbers the placeholders for PostgreSQL and leaves SQLite its `?`', () => {
    const pg = new JobStatements('postgres')
    expect(pg.row).toBe('select * from jobs where id = $1 and endpoint_id = $2')
    expect(pg.insert(2)).toContain(`$${2 * INSERT_COLUMNS.length})`)
    expect(pg.insert(2)).not.toContain('?')
    expect(pg.takeUpdate(3)).toContain('where seq in ($5, $6, $7) and status = ')
    expect(pg.takeSelect).toMatch(/for update skip locked$/)
    const lite = new JobStatements('sqlite')
    expect(lite.takeSelect).not.toContain('for update')
    expect(lite.takeUpdate(2)).toContain('where seq in (?, ?) and +status = ')
    // Texts are built once per length and reused (the statement cache keys on the text).
    expect(lite.insert(5)).toBe(lite.insert(5))
  })

  describe('on SQLite, every statement uses an index', () => {
    let store: Store
    const statements = new JobStatements('sqlite')
    beforeAll(async () => {
      store = await openStore('sqlite::memory:')
      await migrateToLatest(store)
    })
    afterAll(() => store.close())
    const plan = async (text: string, parameters: unknown[]) => {
      const compiled = sql.raw(`explain query plan ${text}`).compile(store.db)
      const result = await store.db.executeQuery<{ detail: string }>({ ...compiled, parameters })
      return result.rows.map((row) => row.detail).join('; ')
    }

    it('take looks its rows up by seq, not by scanning the queued ones', async () => {
      const take = await plan(statements.takeUpdate(2), ['w', 'a', 'b', 'c', 1, 2])
      expect(take).toMatch(/USING INTEGER PRIMARY KEY \(rowid=\?\)/)
      const select = await plan(statements.takeSelect, ['e', 'x', 'w', 3])
      expect(select).toContain('USING INDEX jobs_queue')
      // The check of the worker's phase is one lookup of its row by primary key.
      expect(select).toContain('SEARCH workers USING INDEX sqlite_autoindex_workers_1 (id=?)')
      const workFor = await plan(statements.workFor, ['e', 'x', 'w'])
      expect(workFor).toContain('USING INDEX jobs_queue')
      expect(workFor).toContain('SEARCH workers USING INDEX sqlite_autoindex_workers_1 (id=?)')
    })

    it('completion and reads find the job by its id', async () => {
      const args = ['COMPLETED', null, null, 'a', 'b', 'c', 'id', 'e', 'w']
      expect(await plan(statements.complete, args)).toContain('sqlite_autoindex_jobs_1 (id=?)')
      expect(await plan(statements.row, ['id', 'e'])).toContain('sqlite_autoindex_jobs_1 (id=?)')
      expect(await plan(statements.version, ['id', 'e'])).toContain('sqlite_autoindex_jobs_1')
    })

    it('/health counts from indexes alone, never reading the jobs', async () => {
      expect(await plan(statements.countByStatus, ['e'])).toBe(
        'SEARCH jobs USING COVERING INDEX jobs_queue (endpoint_id=?)',
      )
      expect(await plan(statements.countRetried, ['e'])).toMatch(
        /^SEARCH jobs USING COVERING INDEX jobs_retried \(endpoint_id=\?/,
      )
    })

    it('the sweeps find running, expired and finished jobs through their indexes', async () => {
      // As the queue's sweeps write them (src/queue/kysely-job-queue.ts), `status` a literal.
      const running = `select * from "jobs" where status = 'IN_PROGRESS'`
      expect(await plan(`${running} and "lease_expires_at" <= ?`, ['x'])).toContain(
        'USING INDEX jobs_running (lease_expires_at<?)',
      )
      expect(await plan(`${running} and "deadline_at" <= ?`, ['x'])).toContain(
        'USING INDEX jobs_running',
      )
      const gone = await plan(
        `delete from "jobs" where ("expires_at" <= ? or "retain_until" <= ?) returning "id"`,
        ['x', 'y'],
      )
      expect(gone).toContain('USING INDEX jobs_expires (expires_at<?)')
      expect(gone).toContain('USING INDEX jobs_retain (retain_until<?)')
    })
  })

  describe.each(testStores().filter((store) => store.name === 'postgres'))(
    'on PostgreSQL, /health counts from indexes alone',
    ({ open }) => {
      let store: Store
      const statements = new JobStatements('postgres')
      beforeAll(async () => {
        store = await open()
      })
      afterAll(() => store.close())

      /**
       * The plan, with scans of the table and bitmap scans (which read the rows) priced out: on
       * an empty test table the planner would rightly prefer them, and what is checked here is
       * that the index alone can answer.
       */
      const plan = (text: string) =>
        store.db.transaction().execute(async (tx) => {
          await sql`set local enable_seqscan = off`.execute(tx)
          await sql`set local enable_bitmapscan = off`.execute(tx)
          const compiled = sql.raw(`explain ${text}`).compile(tx)
          const result = await tx.executeQuery<{ 'QUERY PLAN': string }>({
            ...compiled,
            parameters: ['e'],
          })
          return result.rows.map((row) => row['QUERY PLAN']).join('\n')
        })

      it('counts per status with an index-only scan of jobs_queue', async () => {
        const counted = await plan(statements.countByStatus)
        expect(counted).toContain('Index Only Scan using jobs_queue on jobs')
        expect(counted).not.toMatch(/Seq Scan|Heap/)
      })

      it('counts retried jobs with an index-only scan of the partial index jobs_retried', async () => {
        const counted = await plan(statements.countRetried)
        expect(counted).toContain('Index Only Scan using jobs_retried on jobs')
        expect(counted).not.toMatch(/Seq Scan|Filter/)
      })
    },
  )
})
