import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BASE_OPERATION_LIMITS } from '../../src/domain/serverless/operation-limits.js'
import { ManualClock } from '../../src/shared/clock.js'
import { createTestEndpoint, json } from '../support/http.js'
import { startTestPlatform, TEST_ADMIN_KEY, type TestPlatform } from '../support/platform.js'

/**
 * `/health` is limited per endpoint like the other job API operations (docs/job-api.md,
 * "Limits"; 16 callers of an endpoint with 100 000 stored jobs slowed every route of
 * the server), and its counts stay right: from indexes, retried jobs included.
 */
describe('/health limits and counts', () => {
  let platform: TestPlatform
  // Windows are aligned to the clock; a clock that only moves when told keeps them still.
  const clock = new ManualClock('2026-01-01T00:00:03.000Z')

  beforeAll(async () => {
    platform = await startTestPlatform({}, { clock })
  })
  afterAll(() => platform?.close())

  const health = (endpointId: string) => platform.call(`/v2/${endpointId}/health`)

  it(`answers 429 past ${BASE_OPERATION_LIMITS.health.rate} requests per 10 s of one endpoint`, async () => {
    const id = await createTestEndpoint(platform, 'health-limit')
    expect(BASE_OPERATION_LIMITS.health).toEqual({ rate: 100, concurrency: 10 })
    for (let i = 0; i < 100; i++) await json(await health(id))
    const refused = await health(id)
    expect(refused.status).toBe(429)
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    expect(refused.headers.get('retry-after')).toBe('7')
    const body = (await refused.json()) as { detail: string }
    expect(body.detail).toBe(
      `rate limit exceeded for /health of endpoint ${id}: 100 requests per 10 s window; retry in 7 s`,
    )
    // Another endpoint has its own window, and the next window lets this one in again.
    await json(await health(await createTestEndpoint(platform, 'health-other')))
    clock.advance(7_000)
    await json(await health(id))
  })

  it('counts each status and the retried jobs, right after each change', async () => {
    const id = await createTestEndpoint(platform, 'health-counts')
    const counts = async () => (await json<{ jobs: Record<string, number> }>(await health(id))).jobs
    const run = async () =>
      (
        await json<{ id: string }>(
          await platform.call(`/v2/${id}/run`, { method: 'POST', json: { input: {} } }),
        )
      ).id
    const worker = (path: string, init: RequestInit = {}) =>
      fetch(`${platform.url}/v2/${id}/${path}`, {
        ...init,
        headers: { authorization: TEST_ADMIN_KEY },
      })
    const failing = await run()
    await run()
    expect(await counts()).toEqual({
      completed: 0,
      failed: 0,
      inProgress: 0,
      inQueue: 2,
      retried: 0,
    })
    const [taken] = await json<Array<{ id: string }>>(
      await worker('job-take-batch/w1?batch_size=1&wait=0'),
    )
    expect(taken!.id).toBe(failing)
    expect(await counts()).toMatchObject({ inProgress: 1, inQueue: 1 })
    await json(await worker(`job-done/w1/${failing}`, { method: 'POST', body: '{"error":"no"}' }))
    expect(await counts()).toMatchObject({ failed: 1, inProgress: 0, retried: 0 })
    await json(await platform.call(`/v2/${id}/retry/${failing}`, { method: 'POST' }))
    expect(await counts()).toEqual({
      completed: 0,
      failed: 0,
      inProgress: 0,
      inQueue: 2,
      retried: 1,
    })
  })
})
