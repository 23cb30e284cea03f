import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { KyselyJobQueue } from '../../src/queue/kysely-job-queue.js'
import { ManualClock } from '../../src/shared/clock.js'
import type { Store } from '../../src/store/open-store.js'
import { testStores } from '../support/stores.js'
import { testJob } from '../support/jobs.js'

const DOOMED = 'endpoint00doom'
const KEPT = 'endpoint00kept'

describe.each(testStores())('deleteEndpointJobs on $name', ({ open }) => {
  let store: Store
  let clock: ManualClock
  let queue: KyselyJobQueue

  beforeEach(async () => {
    store = await open()
    clock = new ManualClock('2026-03-01T00:00:00.000Z')
    queue = new KyselyJobQueue({ db: store.db, dialect: store.dialect, clock, pollIntervalMs: 50 })
  })
  afterEach(() => store.close())

  const submit = async (endpointId: string) => {
    const job = testJob({ endpointId, createdAt: clock.now() })
    await queue.submit(job)
    return job.id
  }

  it('deletes every job of the endpoint in any state, with its stream and stop notices', async () => {
    const done = await submit(DOOMED)
    const running = await submit(DOOMED)
    const cancelled = await submit(DOOMED)
    const take = () => queue.take(DOOMED, 'w1', { max: 1, leaseMs: 30_000 })
    expect((await take())[0]?.id).toBe(done)
    await queue.appendStream(DOOMED, done, 'w1', ['a'])
    await queue.complete(DOOMED, done, 'w1', { output: 1 })
    expect((await take())[0]?.id).toBe(running)
    await queue.appendStream(DOOMED, running, 'w1', ['b', 'c'])
    expect((await take())[0]?.id).toBe(cancelled)
    await queue.cancel(DOOMED, cancelled)
    const queued = await submit(DOOMED)
    const other = await submit(KEPT)
    await queue.take(KEPT, 'w1', { max: 1, leaseMs: 30_000 })
    await queue.appendStream(KEPT, other, 'w1', ['kept'])
    await queue.cancel(KEPT, other)

    const waiting = queue.waitForChange(DOOMED, queued, 10_000)
    expect(await queue.deleteEndpointJobs(DOOMED)).toBe(4)
    expect(await waiting).toBe(true)
    for (const id of [done, running, cancelled, queued]) {
      expect(await queue.get(DOOMED, id)).toBeUndefined()
      expect(await queue.readStream(DOOMED, id)).toBeUndefined()
    }
    expect(await queue.takeStops(DOOMED, 'w1')).toEqual([])
    expect(await queue.counts(DOOMED)).toMatchObject({ completed: 0, inProgress: 0, inQueue: 0 })
    expect(await queue.get(KEPT, other)).toMatchObject({ status: 'CANCELLED' })
    expect((await queue.readStream(KEPT, other))?.chunks.map((c) => c.output)).toEqual(['kept'])
    expect(await queue.takeStops(KEPT, 'w1')).toEqual([{ jobId: other, reason: 'cancelled' }])
    expect(await queue.deleteEndpointJobs(DOOMED)).toBe(0)
  })
})
