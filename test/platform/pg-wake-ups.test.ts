import pg from 'pg'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PgWakeUps, parseWakePayload, wakePayloads } from '../../src/queue/pg-wake-ups.js'
import { freshPostgresDatabase, POSTGRES_URL_ENV } from '../support/stores.js'

const postgresUrl = process.env[POSTGRES_URL_ENV]
if (!postgresUrl) {
  console.log(`pg wake-ups: skipped: set ${POSTGRES_URL_ENV} to run LISTEN/NOTIFY tests`)
}

describe('wake-up payloads', () => {
  it('name the sender, carry every key once, and stay under the NOTIFY size limit', () => {
    const keys = Array.from({ length: 1_000 }, (_, i) => `job:endpoint${i}:${'x'.repeat(36)}`)
    const payloads = wakePayloads('replica-1', keys)
    expect(payloads.length).toBeGreaterThan(1)
    const seen: string[] = []
    for (const payload of payloads) {
      expect(Buffer.byteLength(payload)).toBeLessThan(8_000)
      const parsed = parseWakePayload(payload)!
      expect(parsed.sender).toBe('replica-1')
      seen.push(...parsed.keys)
    }
    expect(seen).toEqual(keys)
    expect(wakePayloads('r', [])).toEqual([])
    expect(parseWakePayload('r')).toBeUndefined()
  })
})

describe.skipIf(!postgresUrl)('wake-ups across replicas (LISTEN/NOTIFY)', () => {
  let database: { url: string; drop: () => Promise<void> }
  let a: PgWakeUps
  let b: PgWakeUps
  const remote: string[] = []
  const logger = pino({ level: 'silent' })

  beforeAll(async () => {
    database = await freshPostgresDatabase(postgresUrl!)
    a = new PgWakeUps({ connectionString: database.url, replicaId: 'a', logger })
    b = new PgWakeUps({
      connectionString: database.url,
      replicaId: 'b',
      logger,
      reconnectDelayMs: 100,
      onRemote: (key) => remote.push(key),
    })
    await a.start()
    await b.start()
  })
  afterAll(async () => {
    await a?.close()
    await b?.close()
    await database?.drop()
  })

  /** Waits on `replica` for `key` with a long poll interval: only a notification ends it early. */
  const wait = (replica: PgWakeUps, key: string, woken: { value: boolean }) =>
    replica.waitUntil(key, async () => woken.value, 10_000, 10_000)

  it("wakes the other replica's waiters, coalescing one turn's keys into one NOTIFY", async () => {
    const flag = { value: false }
    const waiting = wait(b, 'work:ep1', flag)
    await new Promise((resolve) => setTimeout(resolve, 50))
    const sentBefore = a.stats.sent
    const started = Date.now()
    flag.value = true
    a.notify('work:ep1')
    a.notify('job:ep1:j1')
    a.notify('job:ep1:j2')
    expect(await waiting).toBe(true)
    expect(Date.now() - started).toBeLessThan(1_000)
    await expect.poll(() => remote.includes('job:ep1:j2')).toBe(true)
    // Counted once its query has returned, which may be after b heard it.
    await expect.poll(() => a.stats.sent - sentBefore).toBe(1)
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(a.stats.sent - sentBefore).toBe(1)
    // A replica does not hear itself.
    expect(a.stats.received).toBe(0)
  })

  it('listens again after its connection is lost', async () => {
    const admin = new pg.Client({ connectionString: database.url })
    await admin.connect()
    try {
      await admin.query(
        `select pg_terminate_backend(pid) from pg_stat_activity
          where application_name = 'podyard-wake-ups' and pid <> pg_backend_pid()`,
      )
    } finally {
      await admin.end()
    }
    await expect
      .poll(() => a.stats.connects === 2 && b.stats.connects === 2 && a.listening && b.listening, {
        timeout: 5_000,
      })
      .toBe(true)
    const flag = { value: false }
    const waiting = wait(b, 'work:ep2', flag)
    await new Promise((resolve) => setTimeout(resolve, 50))
    flag.value = true
    const started = Date.now()
    a.notify('work:ep2')
    expect(await waiting).toBe(true)
    expect(Date.now() - started).toBeLessThan(1_000)
  })
})
