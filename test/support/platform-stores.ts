import type { Config } from '../../src/config/schema.js'
import { freshPostgresDatabase, POSTGRES_URL_ENV } from './stores.js'

export interface PlatformStore {
  name: 'sqlite' | 'postgres'
  /** The config overrides that put the platform on this store, and how to drop it after. */
  open(): Promise<{ overrides: Partial<Config>; drop: () => Promise<void> }>
}

/**
 * The stores a whole-platform suite runs on: SQLite always (the platform's default file in its
 * data directory), PostgreSQL when PODYARD_TEST_POSTGRES_URL is set (a fresh database, one
 * replica). Use with `describe.each(platformStores())('... on $name', ...)`.
 */
export function platformStores(): PlatformStore[] {
  const stores: PlatformStore[] = [
    { name: 'sqlite', open: () => Promise.resolve({ overrides: {}, drop: async () => {} }) },
  ]
  const postgresUrl = process.env[POSTGRES_URL_ENV]
  if (postgresUrl) {
    stores.push({
      name: 'postgres',
      open: async () => {
        const { url, drop } = await freshPostgresDatabase(postgresUrl)
        return { overrides: { storeUrl: url }, drop }
      },
    })
  }
  return stores
}
