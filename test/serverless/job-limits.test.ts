import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/shared/clock.js'
import { startTestPlatform, TEST_ADMIN_KEY, type TestPlatform } from '../support/platform.js'
import { createTestEndpoint, json } from '../support/http.js'

type Json = Record<string, unknown>
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const MB = 1024 * 1024

async function problem(response: Response, status: number): Promise<Json> {
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/)
  return json(response, status)
}

/** A valid submission body of exactly `bytes` bytes. */
function bodyOfSize(bytes: number): string {
  const frame = JSON.stringify({ input: { s: '' } })
  return JSON.stringify({ input: { s: 'a'.repeat(bytes - frame.length) } })
}

describe('job API limits per endpoint and operation (spec "Limits > Serverless")', () => {
  let platform: TestPlatform
  // Windows are aligned to the clock; a clock that only moves when told keeps them still.
  const clock = new ManualClock('2026-01-01T00:00:03.000Z')

  const createEndpoint = (name: string) => createTestEndpoint(platform, name)
  const call = (endpointId: string, path: string, init: Parameters<TestPlatform['call']>[1] = {}) =>
    platform.call(`/v2/${endpointId}${path}`, init)

  beforeAll(async () => {
    platform = await startTestPlatform(
      {
        jobLimits: {
          perWorkerRate: 5,
          perWorkerConcurrency: 2,
          // Made small for the test: 2 /status (and /status-sync) requests in flight.
          operations: { status: { concurrency: 2 } },
        },
      },
      { clock },
    )
  })
  afterAll(() => platform.close())

  it('answers 429 with Retry-After and a problem naming operation, limit and window', async () => {
    const id = await createEndpoint('purge')
    await json(await call(id, '/purge-queue', { method: 'POST' }))
    await json(await call(id, '/purge-queue', { method: 'POST' }))
    const refused = await call(id, '/purge-queue', { method: 'POST' })
    expect(refused.headers.get('retry-after')).toBe('7')
    const body = await problem(refused, 429)
    expect(body).toMatchObject({ title: 'Too Many Requests', status: 429 })
    expect(body.detail).toBe(
      `rate limit exceeded for /purge-queue of endpoint ${id}: 2 requests per 10 s window; retry in 7 s`,
    )
    // Another endpoint has its own counters; /health and /retry have no limit.
    const other = await createEndpoint('purge-other')
    await json(await call(other, '/purge-queue', { method: 'POST' }))
    for (let i = 0; i < 12; i++) await json(await call(id, '/health'))
    // The next window lets it in again.
    clock.advance(7_000)
    await json(await call(id, '/purge-queue', { method: 'POST' }))
  })

  it('limits requests in flight; /status-sync counts with /status', async () => {
    const id = await createEndpoint('inflight')
    const { id: jobId } = await json<{ id: string }>(
      await call(id, '/run', { method: 'POST', json: { input: {} } }),
    )
    // Two long polls on a job nobody takes hold both slots for a second.
    const polls = [1, 2].map(() => call(id, `/status-sync/${jobId}?wait=1000`))
    let refused: Response | undefined
    for (let i = 0; i < 40 && refused === undefined; i++) {
      const response = await call(id, `/status/${jobId}`)
      if (response.status === 429) refused = response
      else {
        await json(response)
        await sleep(20)
      }
    }
    expect(refused, 'no /status was refused while two long polls ran').toBeDefined()
    expect(refused!.headers.get('retry-after')).toBe('1')
    const body = await problem(refused!, 429)
    expect(body.detail).toBe(
      `concurrency limit exceeded for /status of endpoint ${id}: 2 requests in flight at once; retry in 1 s`,
    )
    for (const poll of polls) expect(await json(await poll)).toMatchObject({ status: 'IN_QUEUE' })
    // The slots are free again once the polls are answered.
    await json(await call(id, `/status/${jobId}`))
  })

  it('raises an endpoint’s limits with its running workers', async () => {
    const id = await createEndpoint('scaled')
    // A worker polls: it counts as running for the limits (max(2, 1 x 5) = 5).
    const take = await fetch(`${platform.url}/v2/${id}/job-take/w1?gpu=x&wait=0`, {
      headers: { authorization: TEST_ADMIN_KEY },
    })
    expect(take.status).toBe(204)
    for (let i = 0; i < 5; i++) await json(await call(id, '/purge-queue', { method: 'POST' }))
    const body = await problem(await call(id, '/purge-queue', { method: 'POST' }), 429)
    expect(body.detail).toMatch(/: 5 requests per 10 s window;/)
  })

  it('never answers 429 to a worker, whatever the job API counters say', async () => {
    const id = await createEndpoint('workers')
    await json(await call(id, '/purge-queue', { method: 'POST' }))
    await json(await call(id, '/purge-queue', { method: 'POST' }))
    await problem(await call(id, '/purge-queue', { method: 'POST' }), 429)
    const base = `${platform.url}/v2/${id}`
    const headers = { authorization: TEST_ADMIN_KEY }
    for (let i = 0; i < 30; i++) {
      const take = await fetch(`${base}/job-take/w1?gpu=x&wait=0&job_in_progress=0`, { headers })
      expect(take.status).toBe(204)
      const batch = await fetch(`${base}/job-take-batch/w1?gpu=x&batch_size=4&wait=0`, { headers })
      expect(batch.status).toBe(204)
    }
    const ping = await fetch(`${base}/ping/w1?runpod_version=1.12.0`, { headers })
    expect(ping.status).toBe(200)
  })
})

describe('job API payload limits (wire-compat §4.1)', () => {
  let platform: TestPlatform
  let id: string

  beforeAll(async () => {
    platform = await startTestPlatform()
    id = (
      await json<{ id: string }>(
        await platform.call('/v2/serverless', {
          method: 'POST',
          json: { name: 'sizes', image: 'worker:1', gpu: { pools: ['ADA_24'] } },
        }),
        201,
      )
    ).id
  })
  afterAll(() => platform.close())

  const post = (path: string, body: string) =>
    platform.call(`/v2/${id}${path}`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json' },
    })

  it('takes 10 MB on /run and refuses a byte more with a 413 naming the limit', async () => {
    await json(await post('/run', bodyOfSize(10 * MB)))
    const body = await problem(await post('/run', bodyOfSize(10 * MB + 1)), 413)
    expect(body).toMatchObject({ title: 'Payload Too Large', status: 413 })
    expect(body.detail).toBe('the request body is larger than the 10 MB limit of /run')
  })

  it('takes 20 MB on /runsync and refuses a byte more with a 413 naming the limit', async () => {
    // Over /run's limit, within /runsync's: accepted (the job waits in the queue).
    expect(await json(await post('/runsync?wait=1000', bodyOfSize(10 * MB + 1)))).toMatchObject({
      status: 'IN_QUEUE',
    })
    const body = await problem(await post('/runsync?wait=1000', bodyOfSize(20 * MB + 1)), 413)
    expect(body.detail).toBe('the request body is larger than the 20 MB limit of /runsync')
  })
})
