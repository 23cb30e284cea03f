import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pino, type Logger } from 'pino'
import { startPlatform, type Platform } from '../../src/platform.js'
import type { Clock } from '../../src/shared/clock.js'
import {
  callPlatform,
  stopPlatform,
  testConfig,
  type CallInit,
  type TestConfig,
} from './platform.js'
import { freshPostgresDatabase, POSTGRES_URL_ENV } from './stores.js'

/**
 * A real platform that a test can take down and bring back: `stop()` closes its port (workers
 * get "connection refused" until `start()`), `start()` serves again on the same port, the same
 * data directory and the same store. The store is a SQLite file, or a fresh PostgreSQL database.
 */
export interface RestartablePlatform {
  /** The base URL; the same across restarts. */
  readonly url: string
  /** The running platform; undefined while it is down. */
  readonly current: Platform | undefined
  call(pathAndQuery: string, init?: CallInit): Promise<Response>
  stop(): Promise<void>
  start(): Promise<void>
  /** Stops it (when up) and removes its data directory and database. */
  close(): Promise<void>
}

export type StoreKind = 'sqlite' | 'postgres'

/** The stores the restart suites run on: SQLite always, PostgreSQL when configured. */
export function restartableStores(): StoreKind[] {
  return process.env[POSTGRES_URL_ENV] ? ['sqlite', 'postgres'] : ['sqlite']
}

export async function startRestartablePlatform(
  store: StoreKind,
  overrides: TestConfig = {},
  options: { clock?: Clock; logger?: Logger } = {},
): Promise<RestartablePlatform> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-restart-'))
  const database =
    store === 'postgres' ? await freshPostgresDatabase(process.env[POSTGRES_URL_ENV]!) : undefined
  let port = 0
  let url = ''
  let current: Platform | undefined
  const start = async () => {
    if (current !== undefined) return
    const config = testConfig(dataDir, {
      port,
      ...(database ? { storeUrl: database.url } : {}),
      ...overrides,
    })
    current = await startPlatform(config, {
      logger: options.logger ?? pino({ level: 'silent' }),
      ...(options.clock ? { clock: options.clock } : {}),
    })
    url = current.url
    port = Number(new URL(url).port)
  }
  const stop = async () => {
    const platform = current
    current = undefined
    if (platform !== undefined) await stopPlatform(platform)
  }
  try {
    await start()
  } catch (error) {
    await database?.drop()
    rmSync(dataDir, { recursive: true, force: true })
    throw error
  }
  return {
    get url() {
      return url
    },
    get current() {
      return current
    },
    call: (pathAndQuery, init) => callPlatform(url, pathAndQuery, init),
    stop,
    start,
    close: async () => {
      try {
        await stop()
      } finally {
        await database?.drop()
        rmSync(dataDir, { recursive: true, force: true })
      }
    },
  }
}
