import { closeSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import Database from 'better-sqlite3'
import { FALLBACK_AUTOCHECKPOINT_PAGES, SqliteCheckpointer } from './sqlite-checkpointer.js'
import { openStore, type Store } from './open-store.js'

/** Writes about `pages` 4 KiB pages to the store's WAL in one transaction. */
async function writePages(store: Store, pages: number): Promise<void> {
  await sql`create table filler (data blob)`.execute(store.db)
  await store.db.transaction().execute(async (tx) => {
    for (let i = 0; i < pages; i++)
      await sql`insert into filler values (randomblob(3900))`.execute(tx)
  })
}

const sizeOf = (file: string) => statSync(file).size

/**
 * The processes holding a lock on the "DMS" byte of a WAL index (`/proc/locks`; byte 128 of the
 * `-shm` file in SQLite's unix VFS): SQLite holds it as long as a connection is open, and a
 * process that finds nobody holding it takes itself for the first and starts the index over.
 */
function dmsLocksOf(indexFile: string): number[] {
  const inode = statSync(indexFile).ino
  return readFileSync('/proc/locks', 'utf8')
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((f) => f[1] === 'POSIX' && f[5]?.endsWith(`:${inode}`) && f[6] === '128')
    .map((f) => Number(f[4]))
}

/** How many times the WAL has been started over (its header's checkpoint sequence number). */
const walRestarts = (file: string) => readFileSync(`${file}-wal`).readUInt32BE(12)

describe('SQLite checkpoints on a thread of their own', () => {
  let dir: string | undefined
  let store: Store | undefined
  afterEach(async () => {
    await store?.close()
    store = undefined
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  const open = async (checkpointInBackground: boolean) => {
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-checkpointer-'))
    const file = path.join(dir, 'podyard.db')
    store = await openStore(`sqlite:${file}`, { checkpointInBackground })
    return file
  }

  it('copies the WAL into the database file while the server only commits', async () => {
    const file = await open(true)
    // Fewer pages than the server's own fallback threshold: only the thread checkpoints them.
    await writePages(store!, 2_000)
    expect(2_000).toBeLessThan(FALLBACK_AUTOCHECKPOINT_PAGES)
    const deadline = Date.now() + 5_000
    while (sizeOf(file) < 2_000 * 3_900 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    expect(sizeOf(file)).toBeGreaterThanOrEqual(2_000 * 3_900)
    // The data is intact and the store keeps working.
    const rows = await sql<{ n: number }>`select count(*) as n from filler`.execute(store!.db)
    expect(rows.rows[0]!.n).toBe(2_000)
  })

  it('still copies the WAL after a quiet spell, when its thread looks only once a second', async () => {
    const file = await open(true)
    await new Promise((resolve) => setTimeout(resolve, 2_500))
    await writePages(store!, 2_000)
    const deadline = Date.now() + 5_000
    while (sizeOf(file) < 2_000 * 3_900 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    expect(sizeOf(file)).toBeGreaterThanOrEqual(2_000 * 3_900)
  })

  it('leaves a few small commits in the WAL, so that they do not start it over (and sync it) each time', async () => {
    const file = await open(true)
    await sql`create table small (n integer)`.execute(store!.db)
    const before = walRestarts(file)
    // One small commit every 70 ms: each would find the WAL fully copied were it checkpointed
    // every time the thread looks (50 ms), and start it over, syncing it inside the commit.
    for (let n = 0; n < 20; n++) {
      await sql`insert into small values (${n})`.execute(store!.db)
      await new Promise((resolve) => setTimeout(resolve, 70))
    }
    expect(walRestarts(file) - before).toBeLessThanOrEqual(1)
    const rows = await sql<{ n: number }>`select count(*) as n from small`.execute(store!.db)
    expect(rows.rows[0]!.n).toBe(20)
  })

  it('copies a few small commits once the oldest has waited its longest', async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-checkpointer-'))
    const file = path.join(dir, 'podyard.db')
    const db = new Database(file)
    db.pragma('journal_mode = WAL')
    db.pragma('wal_autocheckpoint = 0')
    db.prepare('select count(*) from sqlite_master').get()
    const checkpointer = new SqliteCheckpointer(file, { maxAgeMs: 300 })
    // Read through one descriptor, closed after the connections (closeIndex says why).
    const indexFd = openSync(`${file}-shm`, 'r')
    try {
      db.exec('create table small (n integer)')
      for (let n = 0; n < 5; n++) db.prepare('insert into small values (?)').run(n)
      // The WAL index: frames written (mxFrame, byte 16) and copied (nBackfill, byte 96).
      const index = Buffer.alloc(100)
      const waiting = () => {
        readSync(indexFd, index, 0, index.length, 0)
        return index.readUInt32LE(16) - index.readUInt32LE(96)
      }
      expect(waiting()).toBeGreaterThan(0)
      const deadline = Date.now() + 5_000
      while (waiting() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
      expect(waiting()).toBe(0)
    } finally {
      await checkpointer.stop()
      db.close()
      checkpointer.closeIndex()
      closeSync(indexFd)
    }
  })

  it('without it, the same writes stay in the WAL below the automatic threshold', async () => {
    const file = await open(false)
    await sql.raw(`pragma wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`).execute(store!.db)
    await writePages(store!, 2_000)
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(sizeOf(file)).toBeLessThan(1_000_000)
    expect(sizeOf(`${file}-wal`)).toBeGreaterThanOrEqual(2_000 * 3_900)
  })

  it("keeps the server's lock on the WAL index, so that another process opening the file does not reset it", async () => {
    // SQLite's locks are POSIX record locks: closing any descriptor of the file drops every lock
    // the process holds on it. The thread once opened and closed `<file>-shm` at each look, so
    // the server's lock on it went, and the next process to open the database (`podyard credits
    // add` on the data directory) took itself for the first, truncated the index under the
    // server's mapping, and the server died of SIGBUS.
    const file = await open(true)
    await sql`create table small (n integer)`.execute(store!.db)
    for (let n = 0; n < 5; n++) {
      await sql`insert into small values (${n})`.execute(store!.db)
      await new Promise((resolve) => setTimeout(resolve, 70))
    }
    expect(dmsLocksOf(`${file}-shm`)).toContain(process.pid)
  })

  it('stops with the store', async () => {
    await open(true)
    const closing = store!.close()
    store = undefined
    await expect(closing).resolves.toBeUndefined()
  })
})
