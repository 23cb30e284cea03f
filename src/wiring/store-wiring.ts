import { existsSync, mkdirSync } from 'node:fs'
import path from 'node:path'
import type { Logger } from 'pino'
import { resolveEncryptionKey } from '../config/encryption-key.js'
import type { Config } from '../config/schema.js'
import { AccountService } from '../domain/accounts/account-service.js'
import { QuotaService } from '../domain/quotas/quota-service.js'
import { parseEncryptionKey, SecretBox } from '../domain/registries/secret-box.js'
import type { Clock } from '../shared/clock.js'
import { KyselyAccountRepo } from '../store/account-repo.js'
import { KyselyApiKeyRepo } from '../store/api-key-repo.js'
import { verifyEncryptionKey } from '../store/encryption-check.js'
import { appliedMigrations, migrateToLatest } from '../store/migrate.js'
import { openStore, type Store } from '../store/open-store.js'
import { KyselyQuotaRepo, quotaUseReaderOf } from '../store/quota-repo.js'
import { lockForServing, type ServingLock } from '../store/serving-lock.js'
import { StartupRefusal } from '../shared/startup-refusal.js'

/**
 * A store command (`keys`, `accounts`, `credits`, `migrate`) found no podyard database where
 * the configuration points and was not told to create one (`--init`).
 */
export class NoDatabaseError extends StartupRefusal {
  override name = 'NoDatabaseError'
}

const noDatabase = (where: string) =>
  new NoDatabaseError(
    `no podyard database at ${where}: name an existing one (--data-dir, --store-url, ` +
      'PODYARD_DATA_DIR, PODYARD_STORE_URL) or pass --init to create it there',
  )

/**
 * Opens and migrates the store; refuses one migrated by a newer podyard. With `mustExist`
 * (the store commands without `--init`) it refuses, before creating anything, a SQLite file
 * that does not exist and a database podyard never migrated.
 */
export async function openMigratedStore(
  config: Readonly<Config>,
  logger?: Pick<Logger, 'warn'>,
  /**
   * A serving platform checkpoints a SQLite file's WAL on a thread of its own, and times its
   * statements for the metrics (`onQuery`).
   */
  options: {
    serving?: boolean
    mustExist?: boolean
    onQuery?: (seconds: number, failed: boolean) => void
  } = {},
): Promise<{ store: Store; applied: string[] }> {
  if (config.storeUrl.startsWith('sqlite:')) {
    const file = config.storeUrl.slice('sqlite:'.length)
    if (options.mustExist && file !== ':memory:' && !existsSync(file)) {
      throw noDatabase(`sqlite:${path.resolve(file)}`)
    }
    mkdirSync(config.dataDir, { recursive: true })
  }
  const store = await openStore(config.storeUrl, {
    onIdleConnectionError: (error) =>
      logger?.warn(
        { err: error },
        'PostgreSQL closed an idle connection; the next query reconnects',
      ),
    ...(options.onQuery ? { onQuery: options.onQuery } : {}),
    ...(options.serving
      ? {
          checkpointInBackground: true,
          onCheckpointError: (message: string) =>
            logger?.warn({ error: message }, 'the SQLite checkpoint thread reported an error'),
        }
      : {}),
  })
  try {
    if (options.mustExist && (await appliedMigrations(store)).length === 0) {
      throw noDatabase(store.displayUrl)
    }
    return { store, applied: await migrateToLatest(store) }
  } catch (error) {
    await store.close()
    throw error
  }
}

/** The store of a serving platform, held for as long as it serves (a SQLite file: a lock). */
export interface ServingStore {
  store: Store
  /** The migrations this start applied. */
  applied: string[]
  /** Says where the server listens, to a second server that finds the store in use. */
  describe(fields: Record<string, string>): void
  /** Closes the store and lets it go. */
  close(): Promise<void>
}

export async function openServingStore(
  config: Readonly<Config>,
  logger: Logger,
  onQuery?: (seconds: number, failed: boolean) => void,
): Promise<ServingStore> {
  const locks = lockSqliteStore(config)
  const release = () => {
    for (const lock of locks) lock.release()
  }
  try {
    const { store, applied } = await openMigratedStore(config, logger, {
      serving: true,
      ...(onQuery ? { onQuery } : {}),
    })
    return {
      store,
      applied,
      describe: (fields) => {
        for (const lock of locks) lock.describe(fields)
      },
      close: async () => {
        try {
          await store.close()
        } finally {
          release()
        }
      },
    }
  } catch (error) {
    release()
    throw error
  }
}

/**
 * A serving platform on a SQLite store holds its data directory (and the database file, when
 * it lives elsewhere) for as long as it runs: a second server there refuses to start
 * (src/store/serving-lock.ts). Replicas on PostgreSQL share a data directory by design.
 */
function lockSqliteStore(config: Readonly<Config>): ServingLock[] {
  if (!config.storeUrl.startsWith('sqlite:')) return []
  const file = config.storeUrl.slice('sqlite:'.length)
  if (file === ':memory:') return []
  mkdirSync(config.dataDir, { recursive: true })
  const locks = [
    lockForServing(
      path.join(config.dataDir, SERVE_LOCK_FILE),
      `the data directory ${config.dataDir}`,
    ),
  ]
  const database = path.resolve(file)
  if (path.dirname(database) !== path.resolve(config.dataDir)) {
    try {
      locks.push(lockForServing(`${database}.${SERVE_LOCK_FILE}`, `the database ${database}`))
    } catch (error) {
      locks[0]!.release()
      throw error
    }
  }
  return locks
}

const SERVE_LOCK_FILE = 'serve.lock'

export function accountServiceOf(store: Store, clock: Clock): AccountService {
  return new AccountService(new KyselyAccountRepo(store.db), new KyselyApiKeyRepo(store.db), clock)
}

/** The quotas of `accounts`' accounts, for the server and the store commands alike. */
export function quotaServiceOf(store: Store, accounts: AccountService, clock: Clock): QuotaService {
  return new QuotaService({
    repo: new KyselyQuotaRepo(store.db),
    use: quotaUseReaderOf(store.db),
    accountExists: async (accountId) => (await accounts.findAccount(accountId)) !== undefined,
    clock,
  })
}

/**
 * The box that seals registry passwords, with the configured key or the data dir's key file
 * (generated on first start); refuses to start when the key is not the database's. The key
 * itself is returned too: worker keys are derived from it (worker-keys.ts).
 */
export async function secretBoxFor(
  config: Readonly<Config>,
  store: Store,
  logger: Logger,
): Promise<{ box: SecretBox; key: Buffer }> {
  const resolved = resolveEncryptionKey({
    configured: config.encryptionKey,
    dataDir: config.dataDir,
  })
  if (resolved.source === 'generated') {
    logger.info({ file: resolved.file }, 'generated the encryption key for registry passwords')
  }
  const key = parseEncryptionKey(resolved.key)
  const box = new SecretBox(key)
  await verifyEncryptionKey(store.db, box, resolved.file ? { keyFile: resolved.file } : {})
  return { box, key }
}
