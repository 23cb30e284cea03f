import { randomUUID } from 'node:crypto'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { TAKE_PAYLOAD_BUDGET } from '../../src/domain/serverless/job-service.js'
import { newJob, type Job } from '../../src/domain/serverless/job.js'
import { KyselyJobQueue } from '../../src/queue/kysely-job-queue.js'
import { ManualClock } from '../../src/shared/clock.js'
import type { Store } from '../../src/store/open-store.js'
import { createTestEndpoint, json } from '../support/http.js'
import { TEST_ADMIN_KEY, type TestPlatform } from '../support/platform.js'
import { platformStores } from '../support/platform-stores.js'
import { testStores } from '../support/stores.js'

/**
 * A take hands out at most TAKE_PAYLOAD_BUDGET of jobs (docs/job-api.md, "Take budget"), always
 * at least one, and leases only the jobs it hands out (55 jobs of 10 MB in one
 * job-take-batch answered 500 and left all 55 IN_PROGRESS).
 */

const EP = 'endpoint000001'
const LEASE = 30_000

describe.each(testStores())('take budget of the queue on $name', ({ open }) => {
  let store: Store
  let clock: ManualClock
  let queue: KyselyJobQueue

  beforeEach(async () => {
    store = await open()
    clock = new ManualClock('2026-03-01T00:00:00.000Z')
    queue = new KyselyJobQueue({ db: store.db, dialect: store.dialect, clock, pollIntervalMs: 50 })
  })
  afterEach(() => store.close())

  /** A job whose input, as stored, is `{"text":"<size - 11 characters>"}`: `size` characters. */
  async function submit(size: number, webhook?: string): Promise<Job> {
    const job = newJob({
      id: randomUUID(),
      endpointId: EP,
      accountId: 'acct_1',
      input: { text: 'x'.repeat(size - 11) },
      policy: { executionTimeout: 600_000, ttl: 86_400_000, lowPriority: false },
      sync: false,
      createdAt: clock.now(),
      ...(webhook ? { webhook } : {}),
    })
    expect(JSON.stringify(job.input)).toHaveLength(size)
    await queue.submit(job)
    clock.advance(1)
    return job
  }

  it('stops before the job that would pass the budget, and leases only what it hands out', async () => {
    const jobs = [await submit(400), await submit(400), await submit(300), await submit(100)]
    const taken = await queue.take(EP, 'w1', { max: 10, leaseMs: LEASE, maxPayloadSize: 1000 })
    expect(taken.map((job) => job.id)).toEqual(jobs.slice(0, 2).map((job) => job.id))
    for (const job of jobs.slice(2)) {
      expect((await queue.get(EP, job.id))?.status).toBe('IN_QUEUE')
    }
    // Exactly at the budget is within it.
    const rest = await queue.take(EP, 'w2', { max: 10, leaseMs: LEASE, maxPayloadSize: 400 })
    expect(rest.map((job) => job.id)).toEqual(jobs.slice(2).map((job) => job.id))
  })

  it('always hands out the first job, however large, and counts the webhook', async () => {
    const large = await submit(5000)
    const next = await submit(50, 'http://127.0.0.1:9/hook')
    const taken = await queue.take(EP, 'w1', { max: 10, leaseMs: LEASE, maxPayloadSize: 1000 })
    expect(taken.map((job) => job.id)).toEqual([large.id])
    expect(taken[0]).toMatchObject({ status: 'IN_PROGRESS', workerId: 'w1', attempts: 1 })
    // 50 characters of input and 23 of webhook: over 60, but the first of its take.
    const alone = await queue.take(EP, 'w1', { max: 10, leaseMs: LEASE, maxPayloadSize: 60 })
    expect(alone.map((job) => job.id)).toEqual([next.id])
  })
})

describe.each(platformStores())('job-take-batch budget on $name', (stores) => {
  let platform: TestPlatform
  let endpointId: string

  beforeAll(async () => {
    platform = await stores.start()
    endpointId = await createTestEndpoint(platform, 'budget')
  })
  afterAll(() => platform?.close())

  it('hands out no more than the budget; the other jobs stay queued for the next take', async () => {
    // Six jobs of 5 MB: three are 15 MB, a fourth would pass 16 MiB.
    const input = { text: 'x'.repeat(5 * 1024 * 1024) }
    const ids: string[] = []
    for (let i = 0; i < 6; i++) {
      const queued = await json<{ id: string }>(
        await platform.call(`/v2/${endpointId}/run`, { method: 'POST', json: { input } }),
      )
      ids.push(queued.id)
    }
    const take = (workerId: string) =>
      fetch(`${platform.url}/v2/${endpointId}/job-take-batch/${workerId}?batch_size=100&wait=0`, {
        headers: { authorization: TEST_ADMIN_KEY },
      })
    const first = await json<Array<{ id: string }>>(await take('w1'))
    const perTake = Math.floor(TAKE_PAYLOAD_BUDGET / (5 * 1024 * 1024 + 11))
    expect(perTake).toBe(3)
    expect(first.map((job) => job.id)).toEqual(ids.slice(0, perTake))
    const health = await json<{ jobs: Record<string, number> }>(
      await platform.call(`/v2/${endpointId}/health`),
    )
    expect(health.jobs).toMatchObject({ inProgress: 3, inQueue: 3 })
    const second = await json<Array<{ id: string }>>(await take('w2'))
    expect(second.map((job) => job.id)).toEqual(ids.slice(perTake))
  })
})
