import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { JobSweeper } from '../../src/control/job-sweeper.js'
import { TEST_ADMIN_KEY, type TestPlatform } from '../support/platform.js'
import { json } from '../support/http.js'
import {
  jobApiCalls,
  problem,
  pythonShapedWorker,
  sleep,
  startJobApiPlatform,
  type Json,
} from '../support/job-api-fixtures.js'

/**
 * The worker protocol as runpod-python 1.12 speaks it (wire-compat §5; the worker is
 * test/support/job-api-fixtures.ts): long-polled job-take and job-take-batch, progress on
 * job-done, pings that renew leases, job-stop notices, and worker keys; and the job sweeper
 * that renews, requeues and expires on a timer. The job API's clients: job-api.test.ts.
 */
describe('job API (runpod-sdk as the client) and worker protocol (runpod-python-shaped worker)', () => {
  let platform: TestPlatform
  let strangerKey: string

  const { createEndpoint, jobCall } = jobApiCalls(() => platform)

  beforeAll(async () => {
    ;({ platform, strangerKey } = await startJobApiPlatform())
  })
  afterAll(() => platform.close())

  describe('worker protocol', () => {
    it('long-polls job-take: 204 after the wait when empty, at once when a job arrives', async () => {
      const id = await createEndpoint()
      const worker = pythonShapedWorker(platform.url, id, TEST_ADMIN_KEY)
      const started = Date.now()
      const empty = await worker.take({ wait: 300 })
      expect(empty.status).toBe(204)
      expect(Date.now() - started).toBeGreaterThanOrEqual(250)

      const take = worker.take({ wait: 10_000 })
      await sleep(100)
      const submittedAt = Date.now()
      const run = await json(
        await jobCall(id, '/run', { method: 'POST', json: { input: { q: 1 } } }),
      )
      const taken = await take
      expect(Date.now() - submittedAt).toBeLessThan(2000)
      expect(taken.headers.get('content-type')).toMatch(/^application\/json/)
      expect(await json(taken)).toEqual({ id: run.id, input: { q: 1 } })
      // The lease (60 s) starts when the job is handed out, 100 ms or more after the take came.
      const leaseEnd = Number(taken.headers.get('podyard-lease-ends-after-ms'))
      expect(leaseEnd).toBeGreaterThanOrEqual(60_000 + 90)
      expect(leaseEnd).toBeLessThanOrEqual(60_000 + (Date.now() - started))
    })

    it('hands out batches with job-take-batch', async () => {
      const id = await createEndpoint()
      const worker = pythonShapedWorker(platform.url, id, TEST_ADMIN_KEY)
      const ids: string[] = []
      for (let i = 0; i < 5; i++) {
        ids.push(
          (await json(await jobCall(id, '/run', { method: 'POST', json: { input: { i } } })))
            .id as string,
        )
      }
      const sentAt = Date.now()
      const batch = await worker.takeBatch(3)
      const leaseEnd = Number(batch.headers.get('podyard-lease-ends-after-ms'))
      expect(leaseEnd).toBeGreaterThanOrEqual(60_000)
      expect(leaseEnd).toBeLessThanOrEqual(60_000 + (Date.now() - sentAt))
      const first = await json<Json[]>(batch)
      expect(first.map((j) => j.id)).toEqual(ids.slice(0, 3))
      const rest = await json<Json[]>(await worker.takeBatch(3, { inProgress: true }))
      expect(rest.map((j) => j.input)).toEqual([{ i: 3 }, { i: 4 }])
      expect((await worker.takeBatch(3, { inProgress: true, wait: 0 })).status).toBe(204)
    })

    it('takes progress updates on job-done without finishing the job; pings renew leases', async () => {
      const id = await createEndpoint()
      const worker = pythonShapedWorker(platform.url, id, TEST_ADMIN_KEY)
      const run = await json(await jobCall(id, '/run', { method: 'POST', json: { input: {} } }))
      const jobId = run.id as string
      await json(await worker.take({ wait: 2000 }))
      await json(await worker.done(jobId, { status: 'IN_PROGRESS', output: { percent: 50 } }))
      expect(await json(await jobCall(id, `/status/${jobId}`))).toMatchObject({
        status: 'IN_PROGRESS',
        output: { percent: 50 },
        workerId: worker.workerId,
      })
      expect(await json(await worker.ping([jobId, 'unknown-job']))).toEqual({
        status: 'ok',
        renewed: [jobId],
        leaseMs: 60_000,
      })
      await json(await worker.done(jobId, { output: { percent: 100 }, stopPod: true }))
      expect(await json(await jobCall(id, `/status/${jobId}`))).toMatchObject({
        status: 'COMPLETED',
        output: { percent: 100 },
      })
    })

    it('keeps telling a worker to stop a cancelled job for as long as its pings name it', async () => {
      const id = await createEndpoint()
      const worker = pythonShapedWorker(platform.url, id, TEST_ADMIN_KEY)
      const run = await json(await jobCall(id, '/run', { method: 'POST', json: { input: {} } }))
      const jobId = run.id as string
      await json(await worker.take({ wait: 2000 }))
      await json(await jobCall(id, `/cancel/${jobId}`, { method: 'POST' }))
      expect(await json(await worker.stop({ wait: 2000 }))).toEqual({ jobsToStop: [jobId] })
      // runpod-python dropped that notice (its task had not started) and still names the job.
      expect(await json(await worker.ping([jobId]))).toMatchObject({ status: 'ok', renewed: [] })
      expect(await json(await worker.stop({ wait: 2000 }))).toEqual({ jobsToStop: [jobId] })
      // Once it no longer names the job, it is not told again.
      await json(await worker.ping([]))
      expect((await worker.stop({ wait: 300 })).status).toBe(204)
    })

    it('does not stop a job its worker took again after its lease ran out', async () => {
      const id = await createEndpoint()
      const worker = pythonShapedWorker(platform.url, id, TEST_ADMIN_KEY)
      const run = await json(await jobCall(id, '/run', { method: 'POST', json: { input: {} } }))
      const jobId = run.id as string
      await json(await worker.take({ wait: 2000 }))
      // The lease runs out (the server was away, say): the sweeper puts the job back.
      await platform.store.db
        .updateTable('jobs')
        .set({ lease_expires_at: new Date(Date.now() - 1000).toISOString() })
        .where('id', '=', jobId)
        .execute()
      await vi.waitFor(
        async () =>
          expect(await json(await jobCall(id, `/status/${jobId}`))).toMatchObject({
            status: 'IN_QUEUE',
          }),
        { timeout: 5000, interval: 100 },
      )
      expect(await json(await worker.take({ wait: 2000 }))).toMatchObject({ id: jobId })
      // Its job-stop poll must not hand it the notice of the attempt that is over.
      expect((await worker.stop({ wait: 500 })).status).toBe(204)
      expect(await json(await worker.done(jobId, { output: { once: true } }))).toEqual({
        status: 'ok',
      })
    })

    it('treats a handler dict with error as FAILED and keeps its output', async () => {
      const id = await createEndpoint()
      const worker = pythonShapedWorker(platform.url, id, TEST_ADMIN_KEY)
      const run = await json(await jobCall(id, '/run', { method: 'POST', json: { input: {} } }))
      await json(await worker.take({ wait: 2000 }))
      await json(await worker.done(run.id as string, { output: { partial: true }, error: 'msg' }))
      expect(await json(await jobCall(id, `/status/${run.id}`))).toMatchObject({
        status: 'FAILED',
        error: 'msg',
        output: { partial: true },
      })
    })

    it('authenticates workers by the raw key of the endpoint account', async () => {
      const id = await createEndpoint()
      await problem(await pythonShapedWorker(platform.url, id, strangerKey).take({ wait: 0 }), 404)
      await problem(await pythonShapedWorker(platform.url, id, 'pyd_wrong').take({ wait: 0 }), 401)
      const restricted = await json<{ key: string }>(
        await platform.call('/v2/account/api-keys', {
          method: 'POST',
          json: { name: 'worker', permission: 'RESTRICTED', endpoints: [id] },
        }),
        201,
      )
      const worker = pythonShapedWorker(platform.url, id, restricted.key)
      expect((await worker.take({ wait: 0 })).status).toBe(204)
      expect((await worker.stop({ wait: 0 })).status).toBe(204)
      const body = await problem(
        await fetch(`${platform.url}/v2/${id}/job-done/${worker.workerId}/j1?isStream=false`, {
          method: 'POST',
          headers: {
            authorization: restricted.key,
            'content-type': 'application/x-www-form-urlencoded',
          },
          body: 'not json',
        }),
        400,
      )
      expect(body.detail).toMatch(/not valid JSON/)
    })
  })
})

describe('job sweeper', () => {
  it('renews running leases once on start, then requeues expired leases and expires jobs every interval until stopped', async () => {
    const calls: string[] = []
    const renewals: number[] = []
    const now = Date.parse('2026-03-01T00:00:00.000Z')
    const sweeper = new JobSweeper({
      queue: {
        renewRunningLeases: async (until) => {
          calls.push('renew')
          renewals.push(until.getTime())
          return 1
        },
        requeueExpiredLeases: async () => {
          calls.push('leases')
          return { requeued: ['j1'], ended: [], lost: [] }
        },
        expire: async () => {
          calls.push('expire')
          return { ended: [], deleted: [], expired: [] }
        },
      },
      clock: { now: () => new Date(now) },
      logger: { info: () => {}, error: () => {} },
      intervalMs: 20,
      leaseMs: 15_000,
    })
    await sweeper.start()
    // The renewal is done when start() resolves: the leader starts the autoscaler only then.
    expect(calls).toEqual(['renew'])
    await vi.waitFor(() => expect(calls.length).toBeGreaterThanOrEqual(5), { interval: 10 })
    await sweeper.stop()
    const count = calls.length
    expect(calls.slice(0, 5)).toEqual(['renew', 'leases', 'expire', 'leases', 'expire'])
    expect(renewals).toEqual([now + 15_000])
    await sleep(60)
    expect(calls.length).toBe(count)
  })
})
