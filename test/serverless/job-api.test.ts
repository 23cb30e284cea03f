import runpodSdk from 'runpod-sdk'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/**
 * The job API with runpod-sdk as the client: run, runsync, status, stream, cancel, retry,
 * purge-queue, health and requests, and what it refuses, against a worker that calls the
 * platform as runpod-python does (test/support/job-api-fixtures.ts). The worker protocol
 * itself: job-worker-protocol.test.ts.
 */
describe('job API (runpod-sdk as the client) and worker protocol (runpod-python-shaped worker)', () => {
  let platform: TestPlatform
  let strangerKey: string

  const { createEndpoint, jobCall } = jobApiCalls(() => platform)
  const sdkFor = (endpointId: string, key = TEST_ADMIN_KEY) =>
    runpodSdk(key, { baseUrl: `${platform.url}/v2` }).endpoint(endpointId)!

  beforeAll(async () => {
    ;({ platform, strangerKey } = await startJobApiPlatform())
    // runpod-sdk's runSync logs every poll.
    vi.spyOn(console, 'log').mockImplementation(() => {})
  })
  afterAll(async () => {
    vi.restoreAllMocks()
    await platform.close()
  })

  describe('job API', () => {
    it('runs a job: run -> worker takes -> done -> COMPLETED with output and timings', async () => {
      const id = await createEndpoint()
      const sdk = sdkFor(id)
      const worker = pythonShapedWorker(platform.url, id, TEST_ADMIN_KEY)
      const run = (await sdk.run({ input: { prompt: 'hi' } })) as Json
      expect(run).toEqual({ id: expect.stringMatching(UUID), status: 'IN_QUEUE' })

      const queued = (await sdk.status(run.id as string)) as Json
      expect(queued).toMatchObject({ id: run.id, status: 'IN_QUEUE', executionTime: 0 })

      await sleep(30)
      const job = await json(await worker.take({ wait: 2000 }))
      expect(job).toEqual({ id: run.id, input: { prompt: 'hi' } })
      expect(((await sdk.status(run.id as string)) as Json).status).toBe('IN_PROGRESS')
      await sleep(30)
      expect(
        await json(await worker.done(run.id as string, { output: { text: 'hello' } })),
      ).toEqual({ status: 'ok' })

      const status = (await sdk.status(run.id as string)) as Json
      expect(status).toEqual({
        id: run.id,
        status: 'COMPLETED',
        output: { text: 'hello' },
        workerId: worker.workerId,
        delayTime: expect.any(Number),
        executionTime: expect.any(Number),
        started: true,
        completed: true,
        succeeded: true,
      })
      expect(Number.isInteger(status.delayTime)).toBe(true)
      expect(status.delayTime).toBeGreaterThanOrEqual(25)
      expect(status.executionTime).toBeGreaterThanOrEqual(25)
      // POST /status works as well (runpod-python's local API and docs use it).
      expect((await json(await jobCall(id, `/status/${run.id}`, { method: 'POST' }))).status).toBe(
        'COMPLETED',
      )
    })

    it('runSync returns the finished job when it completes within the wait', async () => {
      const id = await createEndpoint()
      const worker = pythonShapedWorker(platform.url, id, TEST_ADMIN_KEY)
      const result = sdkFor(id).runSync({ input: { n: 2 } }, 10_000)
      const job = await json<{ id: string; input: unknown }>(await worker.take({ wait: 5000 }))
      expect(job.id).toMatch(/^sync-[0-9a-f-]{36}$/)
      expect(job.input).toEqual({ n: 2 })
      await json(await worker.done(job.id, { output: 4 }))
      expect(await result).toMatchObject({
        id: job.id,
        status: 'COMPLETED',
        output: 4,
        completed: true,
        succeeded: true,
      })
    })

    it('runsync answers id and status when the job is not done within ?wait, then status-sync waits', async () => {
      const id = await createEndpoint()
      const started = Date.now()
      const pending = await json(
        await jobCall(id, '/runsync?wait=1000', { method: 'POST', json: { input: {} } }),
      )
      expect(Date.now() - started).toBeGreaterThanOrEqual(900)
      expect(pending).toEqual({ id: expect.stringMatching(/^sync-/), status: 'IN_QUEUE' })
      const waited = await json(await jobCall(id, `/status-sync/${pending.id}?wait=1000`))
      expect(waited).toMatchObject({ id: pending.id, status: 'IN_QUEUE', executionTime: 0 })

      const worker = pythonShapedWorker(platform.url, id, TEST_ADMIN_KEY)
      const sync = jobCall(id, `/status-sync/${pending.id}?wait=10000`)
      await json(await worker.take({ wait: 2000 }))
      await json(await worker.done(pending.id as string, { output: 'late' }))
      expect(await json(await sync)).toMatchObject({ status: 'COMPLETED', output: 'late' })
      await problem(
        await jobCall(id, '/runsync?wait=5', { method: 'POST', json: { input: {} } }),
        400,
      )
    })

    it('streams chunks through sdk.stream as the worker posts them', async () => {
      const id = await createEndpoint()
      const sdk = sdkFor(id)
      const worker = pythonShapedWorker(platform.url, id, TEST_ADMIN_KEY)
      const run = (await sdk.run({ input: { stream: true } })) as Json
      const jobId = run.id as string
      const collected = (async () => {
        const out: unknown[] = []
        for await (const chunk of sdk.stream(jobId)) out.push(chunk)
        return out
      })()
      await json(await worker.take({ wait: 2000 }))
      for (const chunk of ['a', { b: 1 }, 'c']) {
        await json(await worker.stream(jobId, chunk))
        await sleep(20)
      }
      await json(await worker.done(jobId, { output: [] }, { isStream: true }))
      expect(await collected).toEqual([{ output: 'a' }, { output: { b: 1 } }, { output: 'c' }])
      // Everything was delivered: a further read has an empty stream and the final status.
      expect(await json(await jobCall(id, `/stream/${jobId}`))).toEqual({
        status: 'COMPLETED',
        stream: [],
      })
    })

    it('cancels a running job (its worker is told on job-stop) and a queued one', async () => {
      const id = await createEndpoint()
      const sdk = sdkFor(id)
      const worker = pythonShapedWorker(platform.url, id, TEST_ADMIN_KEY)
      const run = (await sdk.run({ input: {} })) as Json
      await json(await worker.take({ wait: 2000 }))
      const stop = worker.stop({ wait: 5000 })
      await sleep(50)
      expect(await sdk.cancel(run.id as string)).toMatchObject({
        id: run.id,
        status: 'CANCELLED',
        delayTime: expect.any(Number),
        executionTime: expect.any(Number),
      })
      expect(await json(await stop)).toEqual({ jobsToStop: [run.id] })
      expect((await worker.stop({ wait: 0 })).status).toBe(204)
      // The late result is ignored.
      expect(await json(await worker.done(run.id as string, { output: 1 }))).toEqual({
        status: 'ignored',
        reason: 'not-in-progress',
      })
      expect(((await sdk.status(run.id as string)) as Json).status).toBe('CANCELLED')

      const queued = (await sdk.run({ input: {} })) as Json
      expect(await sdk.cancel(queued.id as string)).toMatchObject({ status: 'CANCELLED' })
      expect((await worker.take({ wait: 0 })).status).toBe(204)
    })

    it('fails a job whose worker sends error as a JSON string, and retries it with the same id', async () => {
      const id = await createEndpoint()
      const sdk = sdkFor(id)
      const worker = pythonShapedWorker(platform.url, id, TEST_ADMIN_KEY)
      const run = (await sdk.run({ input: { x: 1 } })) as Json
      const jobId = run.id as string
      await json(await worker.take({ wait: 2000 }))
      const error = JSON.stringify({
        error_type: "<class 'ValueError'>",
        error_message: 'boom',
        error_traceback: 'Traceback ...',
        hostname: 'h',
        worker_id: worker.workerId,
        runpod_version: '1.12.0',
      })
      await json(await worker.done(jobId, { error }))
      expect(await sdk.status(jobId)).toMatchObject({
        id: jobId,
        status: 'FAILED',
        error,
        completed: true,
        succeeded: false,
      })

      expect(await json(await jobCall(id, `/retry/${jobId}`, { method: 'POST' }))).toEqual({
        id: jobId,
        status: 'IN_QUEUE',
      })
      const status = (await sdk.status(jobId)) as Json
      expect(status.status).toBe('IN_QUEUE')
      expect(status).not.toHaveProperty('error')
      expect(await json(await worker.take({ wait: 2000 }))).toEqual({ id: jobId, input: { x: 1 } })
      await json(await worker.done(jobId, { output: 'second time' }))
      expect(await sdk.status(jobId)).toMatchObject({ status: 'COMPLETED', output: 'second time' })
      const refused = await problem(await jobCall(id, `/retry/${jobId}`, { method: 'POST' }), 400)
      expect(refused.detail).toMatch(/only FAILED or TIMED_OUT/)
    })

    it('purges the queue', async () => {
      const id = await createEndpoint()
      const sdk = sdkFor(id)
      const a = (await sdk.run({ input: {} })) as Json
      await sdk.run({ input: {} })
      expect(await sdk.purgeQueue()).toEqual({ removed: 2, status: 'completed' })
      await problem(await jobCall(id, `/status/${a.id}`), 404)
      expect(await sdk.purgeQueue()).toEqual({ removed: 0, status: 'completed' })
    })

    it('reports job and worker counts on /health', async () => {
      const id = await createEndpoint()
      const sdk = sdkFor(id)
      const a = pythonShapedWorker(platform.url, id, TEST_ADMIN_KEY)
      const b = pythonShapedWorker(platform.url, id, TEST_ADMIN_KEY)
      const c = pythonShapedWorker(platform.url, id, TEST_ADMIN_KEY)
      expect(await sdk.health()).toEqual({
        jobs: { completed: 0, failed: 0, inProgress: 0, inQueue: 0, retried: 0 },
        workers: { idle: 0, initializing: 0, ready: 0, running: 0, throttled: 0, unhealthy: 0 },
      })
      const j1 = (await sdk.run({ input: {} })) as Json
      await json(await a.take({ wait: 2000 }))
      await json(await a.done(j1.id as string, { output: 1 }))
      const j2 = (await sdk.run({ input: {} })) as Json
      await json(await a.take({ wait: 2000 }))
      await json(await a.done(j2.id as string, { error: 'bad' }))
      await json(await jobCall(id, `/retry/${j2.id}`, { method: 'POST' }))
      await sdk.run({ input: {} })
      await json(await a.take({ wait: 2000 }))
      await json(await b.ping())
      await json(await c.ping([], '&status=unhealthy&check=memory&reason=too+little'))
      expect(await sdk.health()).toEqual({
        jobs: { completed: 1, failed: 0, inProgress: 1, inQueue: 1, retried: 1 },
        workers: { idle: 1, initializing: 0, ready: 2, running: 1, throttled: 0, unhealthy: 1 },
      })
    })

    it('lists requests newest first, paged', async () => {
      const id = await createEndpoint()
      const sdk = sdkFor(id)
      const ids: string[] = []
      for (let i = 0; i < 3; i++) {
        ids.push(((await sdk.run({ input: { i } })) as Json).id as string)
        await sleep(5)
      }
      const page = await json(await jobCall(id, '/requests?page=1&pageSize=2'))
      expect(page).toMatchObject({ page: 1, pageSize: 2, total: 3 })
      expect((page.requests as Json[]).map((r) => r.id)).toEqual([ids[2], ids[1]])
      expect((page.requests as Json[])[0]).toMatchObject({ status: 'IN_QUEUE', attempts: 0 })
      await problem(await jobCall(id, '/requests?pageSize=0'), 400)
    })

    it('refuses what it must: unknown endpoint or job, another account, bad bodies, keys', async () => {
      const id = await createEndpoint()
      await problem(
        await jobCall('nosuchendpoint', '/run', { method: 'POST', json: { input: {} } }),
        404,
      )
      await problem(await jobCall(id, '/status/nosuchjob'), 404)
      await problem(await jobCall(id, '/stream/nosuchjob'), 404)
      await problem(await jobCall(id, '/cancel/nosuchjob', { method: 'POST' }), 404)
      await problem(
        await jobCall(id, '/run', { method: 'POST', json: { input: {} }, key: strangerKey }),
        404,
      )
      await problem(await jobCall(id, '/health', { key: null }), 401)
      // The raw key (RunPod's curl examples) works like Bearer.
      await json(
        await fetch(`${platform.url}/v2/${id}/health`, {
          headers: { authorization: TEST_ADMIN_KEY },
        }),
      )

      const missing = await problem(await jobCall(id, '/run', { method: 'POST', json: {} }), 400)
      expect(missing.errors).toEqual(['body.input: required'])
      const notObject = await problem(
        await jobCall(id, '/run', { method: 'POST', json: { input: 'text' } }),
        400,
      )
      expect(notObject.errors).toEqual(['body.input: must be a JSON object'])
      const policy = await problem(
        await jobCall(id, '/run', { method: 'POST', json: { input: {}, policy: { ttl: 5 } } }),
        400,
      )
      expect(policy.errors).toEqual(['body.policy.ttl: must be between 10000 and 604800000'])
      await problem(
        await jobCall(id, '/run', {
          method: 'POST',
          body: '{not json',
          headers: { 'content-type': 'application/json' },
        }),
        400,
      )

      const other = await createEndpoint('other')
      const restricted = await json<{ key: string }>(
        await platform.call('/v2/account/api-keys', {
          method: 'POST',
          json: { name: 'only-one', permission: 'RESTRICTED', endpoints: [id] },
        }),
        201,
      )
      await json(
        await jobCall(id, '/run', { method: 'POST', json: { input: {} }, key: restricted.key }),
      )
      const denied = await problem(
        await jobCall(other, '/run', { method: 'POST', json: { input: {} }, key: restricted.key }),
        403,
      )
      expect(denied.detail).toMatch(new RegExp(`not allowed to use endpoint ${other}`))
      // A reserved management segment is never taken for an endpoint id.
      await problem(await platform.call('/v2/pods/purge-queue', { method: 'POST' }), 404)
    })

    it('passes webhook and s3Config to the worker but never shows s3Config', async () => {
      const id = await createEndpoint()
      const worker = pythonShapedWorker(platform.url, id, TEST_ADMIN_KEY)
      const s3Config = {
        accessId: 'AK',
        accessSecret: 'SECRET',
        bucketName: 'b',
        endpointUrl: 'https://s3.example.com',
      }
      const run = await json(
        await jobCall(id, '/run', {
          method: 'POST',
          json: { input: { a: 1 }, webhook: 'https://hooks.example.com/x', s3Config },
        }),
      )
      const status = await jobCall(id, `/status/${run.id}`)
      expect(await status.text()).not.toMatch(/SECRET/)
      expect(await json(await worker.take({ wait: 2000 }))).toEqual({
        id: run.id,
        input: { a: 1 },
        webhook: 'https://hooks.example.com/x',
        s3Config,
      })
    })
  })
})
