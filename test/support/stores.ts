import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { newId } from '../../src/shared/ids.js'
import { KyselyAccountRepo } from '../../src/store/account-repo.js'
import { migrateToLatest } from '../../src/store/migrate.js'
import { openStore, type Dialect, type Store } from '../../src/store/open-store.js'

/**
 * A PostgreSQL URL whose role may create databases, e.g.
 * postgres://podyard:podyard@127.0.0.1:5432/podyard_test. Unset, suites run on SQLite only.
 */
export const POSTGRES_URL_ENV = 'PODYARD_TEST_POSTGRES_URL'

export interface TestStoreFactory {
  name: Dialect
  /** A fresh, migrated store that no other test sees; its close() removes it. */
  open(): Promise<Store>
}

function withCleanup(store: Store, cleanup: () => Promise<void> | void): Store {
  return {
    db: store.db,
    dialect: store.dialect,
    capabilities: store.capabilities,
    displayUrl: store.displayUrl,
    ping: () => store.ping(),
    close: async () => {
      try {
        await store.close()
      } finally {
        await cleanup()
      }
    },
  }
}

async function migrated(store: Store, cleanup: () => Promise<void> | void): Promise<Store> {
  const wrapped = withCleanup(store, cleanup)
  try {
    await migrateToLatest(wrapped)
  } catch (error) {
    await wrapped.close()
    throw error
  }
  return wrapped
}

async function openSqlite(): Promise<Store> {
  const dir = mkdtempSync(path.join(tmpdir(), 'podyard-test-'))
  const store = await openStore(`sqlite:${path.join(dir, 'podyard.db')}`)
  return migrated(store, () => rmSync(dir, { recursive: true, force: true }))
}

async function onAdminConnection(url: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(statement)
  } finally {
    await client.end()
  }
}

/**
 * A database per store rather than a schema: the migrator and Kysely's introspection list
 * tables of every schema, so two suites migrating side by side in one database would see each
 * other's ledger.
 */
async function openPostgres(adminUrl: string): Promise<Store> {
  const { url, drop } = await freshPostgresDatabase(adminUrl)
  let store: Store
  try {
    store = await openStore(url)
  } catch (error) {
    await drop()
    throw error
  }
  return migrated(store, drop)
}

/** A new, empty database next to the one of `adminUrl`, and how to drop it. */
export async function freshPostgresDatabase(
  adminUrl: string,
): Promise<{ url: string; drop: () => Promise<void> }> {
  const database = `podyard_t_${randomBytes(6).toString('hex')}`
  await onAdminConnection(adminUrl, `create database ${database}`)
  const url = new URL(adminUrl)
  url.pathname = `/${database}`
  return {
    url: url.toString(),
    drop: () => onAdminConnection(adminUrl, `drop database if exists ${database} with (force)`),
  }
}

/**
 * The stores every repository suite runs against: SQLite always, PostgreSQL when
 * PODYARD_TEST_POSTGRES_URL is set. Use with `describe.each(testStores())('$name', ...)`.
 */
export function testStores(): TestStoreFactory[] {
  const stores: TestStoreFactory[] = [{ name: 'sqlite', open: openSqlite }]
  const postgresUrl = process.env[POSTGRES_URL_ENV]
  if (postgresUrl) stores.push({ name: 'postgres', open: () => openPostgres(postgresUrl) })
  return stores
}

/** An account (with its one user) in the store, for repositories whose rows belong to one. */
export async function addTestAccount(store: Store, id = newId.account()): Promise<string> {
  const createdAt = '2026-01-01T00:00:00.000Z'
  await new KyselyAccountRepo(store.db).create(
    { id, name: id, role: 'user', createdAt },
    { id: `user_${id}`, accountId: id, email: `${id}@example.com`, createdAt },
  )
  return id
}
