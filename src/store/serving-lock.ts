import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import SqliteDatabase from 'better-sqlite3'
import { StartupRefusal } from '../shared/startup-refusal.js'

/**
 * One serving platform per SQLite store (docs/production.md, "SQLite"). Two `podyard serve` on
 * one data directory both led: the second marked the first one's healthy worker UNHEALTHY and
 * killed it, and each adopted (or removed) the other's workloads. The lock is an exclusive lock
 * of the operating system on a small SQLite file, taken for the life of the process: the kernel
 * releases it when the process ends, however it ends (SIGKILL too), so a dead server's lock is
 * taken over without any stale-lock guessing. A file beside it says who holds it, for the
 * message a second server prints.
 */
export class StoreInUseError extends StartupRefusal {
  override name = 'StoreInUseError'
}

export interface ServingLock {
  /** Also given to the holder file once known (the URL the server listens on). */
  describe(fields: Record<string, string>): void
  release(): void
}

interface Holder {
  pid: number
  host: string
  since: string
  [field: string]: string | number
}

const holderFile = (lockFile: string) => `${lockFile}.holder.json`

function readHolder(lockFile: string): Holder | undefined {
  try {
    return JSON.parse(readFileSync(holderFile(lockFile), 'utf8')) as Holder
  } catch {
    return undefined
  }
}

/**
 * Takes the lock of `lockFile` for `what` (e.g. "the data directory /srv/podyard"), or throws
 * StoreInUseError naming the server that holds it.
 */
export function lockForServing(lockFile: string, what: string): ServingLock {
  // timeout 0: a held lock answers SQLITE_BUSY at once instead of after the default 5 s.
  const database = new SqliteDatabase(lockFile, { timeout: 0 })
  try {
    database.pragma('locking_mode = EXCLUSIVE')
    database.exec('begin exclusive')
  } catch (error) {
    database.close()
    if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw error
    const holder = readHolder(lockFile)
    const who = holder
      ? `podyard serve (pid ${holder.pid} on ${holder.host}, since ${holder.since}${holder.url ? `, serving ${holder.url}` : ''})`
      : 'podyard serve'
    throw new StoreInUseError(
      `${what} is in use by another ${who}. One server serves a SQLite store: stop that one ` +
        'first, or start this one with another --data-dir. (Several servers need PostgreSQL: ' +
        'docs/production.md.)',
    )
  }
  const holder: Holder = { pid: process.pid, host: hostname(), since: new Date().toISOString() }
  const write = () => writeFileSync(holderFile(lockFile), `${JSON.stringify(holder)}\n`)
  write()
  let released = false
  return {
    describe(fields) {
      Object.assign(holder, fields)
      write()
    },
    release() {
      if (released) return
      released = true
      rmSync(holderFile(lockFile), { force: true })
      database.close()
    },
  }
}
