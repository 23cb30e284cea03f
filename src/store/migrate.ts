import { Migrator, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely'
import { migrationStatements } from './migrations/migration-list.js'
import type { Store } from './open-store.js'
import { StartupRefusal } from '../shared/startup-refusal.js'

export const MIGRATION_TABLE = 'podyard_migration'
export const MIGRATION_LOCK_TABLE = 'podyard_migration_lock'

export class DatabaseTooNewError extends StartupRefusal {
  constructor(
    readonly unknownMigrations: string[],
    readonly latestKnown: string,
  ) {
    super(
      `the database was migrated by a newer version of podyard: it has migration ` +
        `${unknownMigrations.join(', ')}, which this version does not know (it knows up to ` +
        `${latestKnown}). Upgrade podyard, or point it at another database.`,
    )
    this.name = 'DatabaseTooNewError'
  }
}

function provider(store: Store): MigrationProvider {
  return {
    getMigrations: async () => {
      const out: Record<string, Migration> = {}
      for (const { name, statements } of migrationStatements(store.dialect)) {
        out[name] = {
          up: async (db: Kysely<unknown>) => {
            for (const statement of statements) await sql.raw(statement).execute(db)
          },
        }
      }
      return out
    },
  }
}

/** Names recorded in the ledger, or [] on a database never migrated. */
export async function appliedMigrations(store: Store): Promise<string[]> {
  const tables = await store.db.introspection.getTables()
  if (!tables.some((t) => t.name === MIGRATION_TABLE)) return []
  const rows = await sql<{
    name: string
  }>`select name from ${sql.table(MIGRATION_TABLE)} order by name`.execute(store.db)
  return rows.rows.map((r) => r.name)
}

/** Refuses a database that knows migrations this build does not. */
export async function assertNotNewer(store: Store): Promise<void> {
  const known = migrationStatements(store.dialect).map((m) => m.name)
  const unknown = (await appliedMigrations(store)).filter((name) => !known.includes(name))
  if (unknown.length > 0) throw new DatabaseTooNewError(unknown, known[known.length - 1] ?? 'none')
}

/**
 * Applies pending migrations under the ledger's lock (a row lock on PostgreSQL, the write
 * transaction on SQLite), so two replicas starting together migrate once.
 */
export async function migrateToLatest(store: Store): Promise<string[]> {
  await assertNotNewer(store)
  const migrator = new Migrator({
    db: store.db,
    provider: provider(store),
    migrationTableName: MIGRATION_TABLE,
    migrationLockTableName: MIGRATION_LOCK_TABLE,
  })
  const { error, results } = await migrator.migrateToLatest()
  if (error) throw error instanceof Error ? error : new Error(String(error))
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}

/** True when every known migration has been applied. */
export async function isMigrated(store: Store): Promise<boolean> {
  const applied = await appliedMigrations(store)
  return migrationStatements(store.dialect).every((m) => applied.includes(m.name))
}
