import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrateToLatest } from '../store/migrate.js'
import { openStore, type Store } from '../store/open-store.js'
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
      expect(await plan(statements.takeSelect, ['e', 'x', 3])).toContain('USING INDEX jobs_queue')
      expect(await plan(statements.hasWork, ['e', 'x'])).toContain('USING INDEX jobs_queue')
    })

    it('completion and reads find the job by its id', async () => {
      const args = ['COMPLETED', null, null, 'a', 'b', 'c', 'id', 'e', 'w']
      expect(await plan(statements.complete, args)).toContain('sqlite_autoindex_jobs_1 (id=?)')
      expect(await plan(statements.row, ['id', 'e'])).toContain('sqlite_autoindex_jobs_1 (id=?)')
      expect(await plan(statements.version, ['id', 'e'])).toContain('sqlite_autoindex_jobs_1')
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
})
