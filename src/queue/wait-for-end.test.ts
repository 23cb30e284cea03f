import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { systemClock } from '../shared/clock.js'
import { migrateToLatest } from '../store/migrate.js'
import { openStore, type Store } from '../store/open-store.js'
import { KyselyJobQueue } from './kysely-job-queue.js'
import { testJob } from '../../test/support/jobs.js'

describe('KyselyJobQueue.waitForEnd', () => {
  let store: Store
  let queue: KyselyJobQueue
  beforeAll(async () => {
    store = await openStore('sqlite::memory:')
    await migrateToLatest(store)
    queue = new KyselyJobQueue({ db: store.db, dialect: store.dialect, clock: systemClock })
  })
  afterAll(() => store.close())

  const submit = async () => {
    const job = testJob({ endpointId: 'ep', sync: true })
    await queue.submit(job)
    return job
  }
  const settled = async (promise: Promise<unknown>) => {
    let done = false
    void promise.then(() => (done = true))
    await new Promise((resolve) => setTimeout(resolve, 20))
    return done
  }

  it('sleeps through the take and is handed the job its completion finished', async () => {
    const job = await submit()
    const waiting = queue.waitForEnd('ep', job.id, 10_000, job.version)
    const [taken] = await queue.take('ep', 'w1', { max: 1, leaseMs: 60_000 })
    expect(taken?.id).toBe(job.id)
    expect(await settled(waiting)).toBe(false)
    const done = await queue.complete('ep', job.id, 'w1', { output: { ok: 1 } })
    const ended = await waiting
    expect(done.applied).toBe(true)
    expect(ended).toMatchObject({ id: job.id, status: 'COMPLETED', output: { ok: 1 } })
    expect(ended).toEqual(await queue.get('ep', job.id))
  })

  it('ends with `true` (read it again) on other changes, and `false` on timeout', async () => {
    const job = await submit()
    const waiting = queue.waitForEnd('ep', job.id, 10_000, job.version)
    await queue.cancel('ep', job.id)
    expect(await waiting).toBe(true)
    const idle = await submit()
    expect(await queue.waitForEnd('ep', idle.id, 30, idle.version)).toBe(false)
    // A baseline older than the store's version: the job already changed.
    const [taken] = await queue.take('ep', 'w2', { max: 1, leaseMs: 60_000 })
    expect(taken?.id).toBe(idle.id)
    expect(await queue.waitForEnd('ep', idle.id, 10_000, idle.version)).toBe(true)
  })
})
