import { sql, type RawBuilder } from 'kysely'
import type { StoreCapabilities } from '../shared/store-capabilities.js'

/**
 * One lock order for the rows of `jobs` on PostgreSQL (docs/serverless-queue.md, "Lock order"):
 * every write that may wait for several rows locks them by job id, in byte order. Two writers
 * that lock in one order can wait for each other but never in a circle, so they never deadlock.
 * Writers that skip locked rows (a take, the lease sweep) never wait and may go in any order.
 *
 * The same order in JavaScript (`compareKeys`, UTF-16 code units) and in SQL (`collate "C"`,
 * bytes): job ids are ASCII, where the two agree.
 */
export function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** The positions of `items`, sorted by the lock order of `key`: the order to write them in. */
export function lockOrder<T>(items: readonly T[], key: (item: T) => string): number[] {
  return items.map((_, i) => i).sort((x, y) => compareKeys(key(items[x]!), key(items[y]!)))
}

/** The lock order's key in SQL, for a `select ... order by ... for update`. */
export const ID_IN_LOCK_ORDER = 'id collate "C"'

/** `order by id collate "C"`: the lock order in SQL, for a `select ... for update`. */
export const BY_LOCK_ORDER = `order by ${ID_IN_LOCK_ORDER}`

function lockedSeqs(where: RawBuilder<boolean>, skipLocked: boolean): RawBuilder<unknown> {
  return sql`select seq from jobs where ${where} ${sql.raw(BY_LOCK_ORDER)} for update${sql.raw(
    skipLocked ? ' skip locked' : '',
  )}`
}

/**
 * The condition of a write of several rows of `jobs`: with row locks `seq in (...)` of the rows
 * `where` selects, locked in the lock order first (`skipLocked`: leaving out rows another
 * transaction holds); on a single connection, which runs one transaction at a time, `where`
 * itself.
 */
export function lockedRows(
  capabilities: StoreCapabilities,
  where: RawBuilder<boolean>,
  skipLocked = false,
): RawBuilder<boolean> {
  return capabilities.rowLocks
    ? sql<boolean>`seq in (${lockedSeqs(where, skipLocked && capabilities.skipLocked)})`
    : where
}
