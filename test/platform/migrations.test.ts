import { sql } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  DatabaseTooNewError,
  MIGRATION_TABLE,
  appliedMigrations,
  isMigrated,
  migrateToLatest,
} from '../../src/store/migrate.js'
import { migrationList } from '../../src/store/migrations/migration-list.js'
import type { Store } from '../../src/store/open-store.js'
import { testStores } from '../support/stores.js'

describe.each(testStores())('migrations on $name', ({ open }) => {
  let store: Store

  beforeEach(async () => {
    store = await open()
  })
  afterEach(() => store.close())

  it('records every migration in one ledger and applies nothing twice', async () => {
    expect(await appliedMigrations(store)).toEqual(migrationList.map((m) => m.name))
    expect(await isMigrated(store)).toBe(true)
    expect(await migrateToLatest(store)).toEqual([])
  })

  it('refuses a database migrated by a newer version, saying so', async () => {
    await sql`insert into ${sql.table(MIGRATION_TABLE)} (name, timestamp) values (${'9999-from-the-future'}, ${new Date().toISOString()})`.execute(
      store.db,
    )
    const failure = await migrateToLatest(store).catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(DatabaseTooNewError)
    expect((failure as Error).message).toMatch(
      /migrated by a newer version of podyard: it has migration 9999-from-the-future/,
    )
  })

  it('every migration exists for both dialects under the same name', () => {
    for (const migration of migrationList) {
      expect(migration.sqlite.length).toBeGreaterThan(0)
      expect(migration.postgres.length).toBeGreaterThan(0)
      expect(migration.name).toMatch(/^\d{4}-[a-z0-9-]+$/)
    }
  })
})
