import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { EgressGuard } from '../../src/domain/egress/egress-guard.js'
import type { EndpointService } from '../../src/domain/serverless/endpoint-service.js'
import type { Job } from '../../src/domain/serverless/job.js'
import { JobService } from '../../src/domain/serverless/job-service.js'
import { WorkerPresence } from '../../src/domain/serverless/worker-presence.js'
import { KyselyJobQueue } from '../../src/queue/kysely-job-queue.js'
import { WakeUps } from '../../src/queue/wake-ups.js'
import { ManualClock } from '../../src/shared/clock.js'
import { migrateToLatest } from '../../src/store/migrate.js'
import { openStore, type Store } from '../../src/store/open-store.js'
import { testJob } from '../support/jobs.js'

/**
 * The job service's long polls on a ManualClock (its `pollClock`, and the queue's wake-ups on
 * the same clock), over a real queue on SQLite: a take and a /runsync wait last exactly their
 * wait on the clock, and answer at once when the work comes, without the test waiting.
 */
describe('long polls timed by a ManualClock', () => {
  let store: Store
  let clock: ManualClock
  let queue: KyselyJobQueue
  let jobs: JobService

  beforeAll(async () => {
    store = await openStore('sqlite::memory:')
    await migrateToLatest(store)
    clock = new ManualClock()
    queue = new KyselyJobQueue({
      db: store.db,
      dialect: store.dialect,
      clock,
      wakeUps: new WakeUps(clock),
      pollIntervalMs: 5_000,
    })
    jobs = new JobService({
      // Neither is called by takes and waits.
      endpoints: {} as EndpointService,
      webhookEgress: {} as EgressGuard,
      queue,
      presence: new WorkerPresence(clock),
      clock,
      pollClock: clock,
    })
  })
  afterAll(() => store.close())

  /** The value of `promise` if it settles within a few turns of the event loop, else 'pending'. */
  const state = async <T>(promise: Promise<T>): Promise<T | 'pending'> => {
    const pending = Symbol('pending')
    let turns = Promise.resolve()
    for (let i = 0; i < 5; i++) turns = turns.then(() => new Promise((r) => setImmediate(r)))
    const first = await Promise.race([promise, turns.then(() => pending)])
    return first === pending ? 'pending' : (first as T)
  }

  it('answers an empty take when its wait has passed on the clock, not before', async () => {
    const take = jobs.take('ep-empty', 'w1', { max: 1, waitMs: 30_000, jobInProgress: false })
    await clock.advanceAsync(29_999)
    expect(await state(take)).toBe('pending')
    await clock.advanceAsync(1)
    expect(await state(take)).toEqual([])
  })

  it('hands a job submitted during the wait to the waiting take at once', async () => {
    const take = jobs.take('ep-handed', 'w1', { max: 1, waitMs: 30_000, jobInProgress: false })
    await clock.advanceAsync(10_000)
    const job = testJob({ endpointId: 'ep-handed', createdAt: clock.now() })
    await queue.submit(job)
    const taken = (await state(take)) as Job[]
    expect(taken.map((j) => j.id)).toEqual([job.id])
    expect(taken[0]!.status).toBe('IN_PROGRESS')
  })

  it('ends a /runsync wait after its wait on the clock with the job as it is, or at its end', async () => {
    const idle = testJob({ endpointId: 'ep-sync', sync: true, createdAt: clock.now() })
    await queue.submit(idle)
    const waiting = jobs.waitForEnd('ep-sync', idle.id, 90_000)
    await clock.advanceAsync(89_999)
    expect(await state(waiting)).toBe('pending')
    await clock.advanceAsync(1)
    expect(await state(waiting)).toMatchObject({ id: idle.id, status: 'IN_QUEUE' })

    const answered = jobs.waitForEnd('ep-sync', idle.id, 90_000)
    const [taken] = await queue.take('ep-sync', 'w2', { max: 1, leaseMs: 60_000 })
    expect(taken?.id).toBe(idle.id)
    expect(await state(answered)).toBe('pending')
    await queue.complete('ep-sync', idle.id, 'w2', { output: { ok: true } })
    expect(await state(answered)).toMatchObject({ status: 'COMPLETED', output: { ok: true } })
  })
})
