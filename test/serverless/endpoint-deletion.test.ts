import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestPlatform, TEST_ADMIN_KEY, type TestPlatform } from '../support/platform.js'
import { createTestEndpoint, json } from '../support/http.js'

type Json = Record<string, unknown>

describe('deleting an endpoint', () => {
  let platform: TestPlatform

  const createEndpoint = (name: string) => createTestEndpoint(platform, name)
  const run = async (endpointId: string, input: Json = {}) =>
    (
      await json<{ id: string }>(
        await platform.call(`/v2/${endpointId}/run`, { method: 'POST', json: { input } }),
      )
    ).id
  const worker = (endpointId: string, key: string, path: string, body?: unknown) =>
    fetch(`${platform.url}/v2/${endpointId}/${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: key, 'content-type': 'application/x-www-form-urlencoded' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
  const take = async (endpointId: string, key: string, workerId: string) =>
    json<{ id: string }>(
      await worker(endpointId, key, `job-take/${workerId}?gpu=any&wait=0&job_in_progress=0`),
    )
  const rowsOf = async (
    table: 'jobs' | 'job_stream' | 'job_stops',
    column: string,
    ids: string[],
  ) =>
    Number(
      (
        await sql<{ n: number }>`select count(*) as n from ${sql.table(table)} where ${sql.ref(
          column,
        )} in (${sql.join(ids)})`.execute(platform.store.db)
      ).rows[0]!.n,
    )

  beforeAll(async () => {
    platform = await startTestPlatform()
  })
  afterAll(() => platform.close())

  it('drops its queued, running and finished jobs with their streams; other endpoints keep theirs', async () => {
    const doomed = await createEndpoint('doomed')
    const kept = await createEndpoint('kept')
    const { workerKey } = await json<{ workerKey: string }>(
      await platform.call(`/v2/serverless/${doomed}/worker-key`),
    )

    const finished = await run(doomed, { n: 1 })
    expect((await take(doomed, workerKey, 'w1')).id).toBe(finished)
    await json(await worker(doomed, workerKey, `job-stream/w1/${finished}?gpu=any`, { output: 1 }))
    await json(await worker(doomed, workerKey, `job-done/w1/${finished}?gpu=any`, { output: 2 }))
    const running = await run(doomed, { n: 2 })
    expect((await take(doomed, workerKey, 'w2')).id).toBe(running)
    await json(await worker(doomed, workerKey, `job-stream/w2/${running}?gpu=any`, { output: 3 }))
    // A cancelled running job leaves a stop notice for its worker.
    const cancelled = await run(doomed, { n: 3 })
    expect((await take(doomed, TEST_ADMIN_KEY, 'w3')).id).toBe(cancelled)
    await json(await platform.call(`/v2/${doomed}/cancel/${cancelled}`, { method: 'POST' }))
    const queued = await run(doomed, { n: 4 })
    const other = await run(kept, { n: 5 })
    const doomedJobs = [finished, running, cancelled, queued]
    expect(await rowsOf('jobs', 'id', doomedJobs)).toBe(4)
    expect(await rowsOf('job_stream', 'job_id', doomedJobs)).toBe(2)
    expect(await rowsOf('job_stops', 'job_id', doomedJobs)).toBe(1)

    // A client waiting on a job of the endpoint hears at once that it is gone.
    const waiting = platform.call(`/v2/${doomed}/status-sync/${queued}?wait=30000`)
    const startedWaiting = Date.now()
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect((await platform.call(`/v2/serverless/${doomed}`, { method: 'DELETE' })).status).toBe(204)
    const gone = await json(await waiting, 404)
    expect(gone.detail).toMatch(/not found/)
    expect(Date.now() - startedWaiting).toBeLessThan(5_000)

    expect(await rowsOf('jobs', 'id', doomedJobs)).toBe(0)
    expect(await rowsOf('job_stream', 'job_id', doomedJobs)).toBe(0)
    expect(await rowsOf('job_stops', 'job_id', doomedJobs)).toBe(0)
    for (const id of doomedJobs) {
      const body = await json(await platform.call(`/v2/${doomed}/status/${id}`), 404)
      expect(body.detail).toBe(`endpoint ${doomed} not found`)
    }
    expect(await json(await platform.call(`/v2/${kept}/status/${other}`))).toMatchObject({
      id: other,
      status: 'IN_QUEUE',
    })

    // The worker of the running job reports after the deletion: a clear answer, never a 500.
    const withKey = await json(
      await worker(doomed, workerKey, `job-done/w2/${running}?gpu=any&isStream=false`, {
        output: 4,
      }),
      401,
    )
    expect(withKey.detail).toMatch(/^the worker key is not valid: .*its endpoint was deleted/)
    const withApiKey = await json(
      await worker(doomed, TEST_ADMIN_KEY, `job-done/w2/${running}?gpu=any&isStream=false`, {
        output: 4,
      }),
      404,
    )
    expect(withApiKey.detail).toBe(`endpoint ${doomed} not found`)
    await json(await worker(doomed, TEST_ADMIN_KEY, 'job-stop/w3?gpu=any&wait=0'), 404)
  })
})
