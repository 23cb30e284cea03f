import { sql } from 'kysely'
import type { Store } from './open-store.js'

/** pg advisory lock key of the start-up section (distinct from the queue's sweep lock). */
const STARTUP_LOCK_KEY = 7_341_013

/**
 * Serialises the start-up of replicas that start together on one empty PostgreSQL database
 * (docs/production.md): creating the admin account, the public models' account and endpoints,
 * and the encryption key check would otherwise race and fail one replica's start on a unique
 * key. Holds a session advisory lock on one pinned connection until the returned release is
 * called (idempotent); a replica that dies holding it loses it with its connection. SQLite:
 * one process, nothing to hold.
 */
export async function acquireStartupLock(store: Store): Promise<() => Promise<void>> {
  if (!store.capabilities.advisoryLocks) return async () => {}
  let release: () => void = () => {}
  const released = new Promise<void>((resolve) => {
    release = resolve
  })
  let locked: () => void = () => {}
  let failed: (error: unknown) => void = () => {}
  const ready = new Promise<void>((resolve, reject) => {
    locked = resolve
    failed = reject
  })
  const held = store.db
    .connection()
    .execute(async (connection) => {
      await sql`select pg_advisory_lock(${STARTUP_LOCK_KEY})`.execute(connection)
      locked()
      await released
      await sql`select pg_advisory_unlock(${STARTUP_LOCK_KEY})`.execute(connection)
    })
    .catch((error: unknown) => failed(error))
  await ready
  return async () => {
    release()
    await held
  }
}
