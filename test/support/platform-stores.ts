import {
  startTestPlatform,
  type TestConfig,
  type TestPlatform,
  type TestPlatformOptions,
} from './platform.js'
import { freshPostgresDatabase, POSTGRES_URL_ENV } from './stores.js'

export interface TestPlatformFactory {
  name: 'sqlite' | 'postgres'
  /** A platform on a store of its own, removed by its close(). */
  start(overrides?: TestConfig, options?: TestPlatformOptions): Promise<TestPlatform>
}

/**
 * The stores a platform suite runs on: a SQLite file always, and a fresh PostgreSQL database
 * when PODYARD_TEST_POSTGRES_URL is set. Use with `describe.each(platformStores())('$name', ...)`.
 */
export function platformStores(): TestPlatformFactory[] {
  const factories: TestPlatformFactory[] = [
    {
      name: 'sqlite',
      start: (overrides = {}, options = {}) => startTestPlatform(overrides, options),
    },
  ]
  const adminUrl = process.env[POSTGRES_URL_ENV]
  if (adminUrl) {
    factories.push({
      name: 'postgres',
      start: async (overrides = {}, options = {}) => {
        const database = await freshPostgresDatabase(adminUrl)
        try {
          const platform = await startTestPlatform(
            { ...overrides, storeUrl: database.url },
            options,
          )
          return {
            ...platform,
            close: async () => {
              try {
                await platform.close()
              } finally {
                await database.drop()
              }
            },
          }
        } catch (error) {
          await database.drop()
          throw error
        }
      },
    })
  }
  return factories
}
