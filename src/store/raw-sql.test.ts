import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore, type Store } from './open-store.js'
import { changesOf, rowsOf, Statement } from './raw-sql.js'

const insert = new Statement('insert into notes (id, body) values (?, ?)')
const byId = new Statement('select id, body from notes where id = ?')
const rename = new Statement('update notes set body = ? where id = ?')

describe('statements as SQL text on SQLite', () => {
  let dir: string
  let store: Store
  const queries: boolean[] = []

  beforeEach(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-raw-sql-'))
    queries.length = 0
    store = await openStore(`sqlite:${path.join(dir, 'store.db')}`, {
      onQuery: (_seconds, failed) => queries.push(failed),
    })
    await sql`create table notes (id text primary key, body text not null)`.execute(store.db)
  })

  afterEach(async () => {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('reads and writes, and tells the query metrics of each statement', async () => {
    queries.length = 0
    expect(await changesOf(store.db, insert, ['a', 'first'])).toBe(1)
    expect(await rowsOf(store.db, byId, ['a'])).toEqual([{ id: 'a', body: 'first' }])
    expect(await changesOf(store.db, rename, ['second', 'a'])).toBe(1)
    expect(await changesOf(store.db, rename, ['third', 'missing'])).toBe(0)
    expect(await rowsOf(store.db, byId, ['missing'])).toEqual([])
    await expect(changesOf(store.db, insert, ['a', 'again'])).rejects.toThrow(/UNIQUE/)
    expect(queries).toEqual([false, false, false, false, false, true])
  })

  it('runs inside a transaction, seeing its own writes, which land at its commit', async () => {
    await store.db.transaction().execute(async (trx) => {
      await changesOf(trx, insert, ['e', 'in a transaction'])
      expect(await rowsOf(trx, byId, ['e'])).toEqual([{ id: 'e', body: 'in a transaction' }])
    })
    expect(await rowsOf(store.db, byId, ['e'])).toEqual([{ id: 'e', body: 'in a transaction' }])
  })

  it("never sees an open transaction's writes, which may yet be rolled back", async () => {
    let readDuring: Promise<unknown[]> | undefined
    await expect(
      store.db.transaction().execute(async (trx) => {
        await changesOf(trx, insert, ['b', 'uncommitted'])
        // Started while the transaction is open: it must wait for its end, not read through it.
        readDuring = rowsOf(store.db, byId, ['b'])
        await new Promise((resolve) => setTimeout(resolve, 20))
        throw new Error('rolled back')
      }),
    ).rejects.toThrow('rolled back')
    expect(await readDuring).toEqual([])
    expect(await rowsOf(store.db, byId, ['b'])).toEqual([])
  })

  it('a write started during a transaction lands after it, outside of it', async () => {
    let writeDuring: Promise<number> | undefined
    await expect(
      store.db.transaction().execute(async (trx) => {
        await changesOf(trx, insert, ['c', 'rolled back'])
        writeDuring = changesOf(store.db, insert, ['d', 'kept'])
        await new Promise((resolve) => setTimeout(resolve, 20))
        throw new Error('rolled back')
      }),
    ).rejects.toThrow('rolled back')
    expect(await writeDuring).toBe(1)
    expect(await rowsOf(store.db, byId, ['c'])).toEqual([])
    expect(await rowsOf(store.db, byId, ['d'])).toEqual([{ id: 'd', body: 'kept' }])
  })
})
