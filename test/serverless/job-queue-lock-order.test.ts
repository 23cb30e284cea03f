import pg from 'pg'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { newJob, type Job } from '../../src/domain/serverless/job.js'
import { KyselyJobQueue } from '../../src/queue/kysely-job-queue.js'
import { BY_LOCK_ORDER, compareKeys } from '../../src/queue/lock-order.js'
import { ManualClock } from '../../src/shared/clock.js'
import { openStore, type Store } from '../../src/store/open-store.js'
import { migrateToLatest } from '../../src/store/migrate.js'
import { freshPostgresDatabase, POSTGRES_URL_ENV } from '../support/stores.js'
import { until } from '../support/until.js'

/**
 * One lock order for the rows of `jobs` on PostgreSQL (docs/serverless-queue.md, "Lock order"):
 * a worker's heartbeat (a ping, or a take that renews its leases) and a batch of completions
 * touch the same worker's rows; locked in different orders they deadlock, and PostgreSQL kills
 * one of them after `deadlock_timeout` (`deadlock detected`, answered 500 to the
 * worker). SQLite runs one transaction at a time and cannot deadlock, so this is PostgreSQL's.
 */
const postgresUrl = process.env[POSTGRES_URL_ENV]
if (!postgresUrl) {
  console.log(`job queue lock order: skipped: set ${POSTGRES_URL_ENV} to run it on PostgreSQL`)
}

const EP = 'endpoint000001'
const WORKER = 'worker00000001'
const LEASE = 30_000

describe.skipIf(!postgresUrl)('job queue lock order on postgres', () => {
  let database: { url: string; drop: () => Promise<void> }
  let store: Store
  let queue: KyselyJobQueue
  let holder: pg.Client
  /** Outside `holder`'s transaction: pg_stat_activity is read once per transaction. */
  let observer: pg.Client
  const clock = new ManualClock('2026-03-01T00:00:00.000Z')

  beforeEach(async () => {
    database = await freshPostgresDatabase(postgresUrl!)
    store = await openStore(database.url)
    await migrateToLatest(store)
    queue = new KyselyJobQueue({ db: store.db, dialect: 'postgres', clock, pollIntervalMs: 50 })
    holder = new pg.Client({ connectionString: database.url })
    await holder.connect()
    observer = new pg.Client({ connectionString: database.url })
    await observer.connect()
  })
  afterEach(async () => {
    await holder?.end()
    await observer?.end()
    await store?.close()
    await database?.drop()
  })

  async function submitAndTake(ids: string[]): Promise<void> {
    for (const id of ids) {
      const job: Job = newJob({
        id,
        endpointId: EP,
        accountId: 'acct_1',
        input: {},
        policy: { executionTimeout: 600_000, ttl: 86_400_000, lowPriority: false },
        sync: false,
        createdAt: clock.now(),
      })
      await queue.submit(job)
    }
    const taken = await queue.take(EP, WORKER, { max: ids.length, leaseMs: LEASE })
    expect(taken.map((j) => j.id).sort()).toEqual([...ids].sort())
  }

  /** Sessions of this database waiting for a lock (row, tuple or transaction). */
  async function lockWaiters(): Promise<number> {
    const { rows } = await observer.query<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock'`,
    )
    return rows[0]!.n
  }

  it("sorts job ids in JavaScript as PostgreSQL's lock order does", async () => {
    const ids = [
      'sync-0190a1b2-0000-7000-8000-000000000001',
      '0190a1b2-0000-7000-8000-00000000000a',
      '0190a1b2-0000-7000-8000-00000000000A',
      'Z-job',
      'a-job',
      '0190A1B2-0000-7000-8000-000000000001',
      'sync_0190',
      'model-job-1',
      'model_job-1',
    ]
    const { rows } = await observer.query<{ id: string }>(
      `select id from unnest($1::text[]) as ids(id) ${BY_LOCK_ORDER}`,
      [ids],
    )
    expect(rows.map((r) => r.id)).toEqual([...ids].sort(compareKeys))
  })

  it('a heartbeat and a batch of completions of the same jobs never deadlock', async () => {
    // Named so that the batch, in its arrival order, would lock `b` before `a`, while a
    // statement that visits rows by id locks `a` before `b`.
    const a = 'a0000000-0000-7000-8000-000000000001'
    const b = 'b0000000-0000-7000-8000-000000000002'
    await submitAndTake([a, b])

    // Another session holds `b` so that both writers are caught mid-way at a known point.
    await holder.query('begin')
    await holder.query('select id from jobs where id = $1 for update', [b])

    // One batch (both reach the batcher in the same turn): `b`, then `a`.
    const completions = [
      queue.complete(EP, b, WORKER, { output: { n: 2 } }),
      queue.complete(EP, a, WORKER, { output: { n: 1 } }),
    ]
    await until('the batch waiting', lockWaiters, (n) => n >= 1, 10_000)
    const heartbeat = queue.heartbeat(EP, WORKER, [a, b], LEASE)
    await until('the heartbeat waiting', lockWaiters, (n) => n >= 2, 10_000)
    await holder.query('commit')

    const [renewed, ...outcomes] = await Promise.all([heartbeat, ...completions])
    expect(outcomes.map((o) => o.applied)).toEqual([true, true])
    // The heartbeat ran after the completions (it waited for their rows): nothing to renew.
    expect(renewed).toEqual([])
    expect((await queue.get(EP, a))?.status).toBe('COMPLETED')
    expect((await queue.get(EP, b))?.status).toBe('COMPLETED')
  })
})
