import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  otherAccountKey,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type TestPlatform,
} from '../support/platform.js'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js'
import { json } from '../support/http.js'

type Json = Record<string, unknown>
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Deliveries {
  jobId: string
  deliveries: Array<{
    status: string
    url: string
    jobStatus: string
    attempts: Array<{ attempt: number; httpStatus?: number; outcome: string }>
  }>
}

describe('webhooks through the platform (real HTTP, configured retry delay)', () => {
  let platform: TestPlatform
  let receiver: WebhookReceiver
  let strangerKey: string
  let endpointId: string

  beforeAll(async () => {
    // The receiver listens on loopback: the operator's allow-list lets it through.
    platform = await startTestPlatform({
      webhooks: { retryDelayMs: 50, timeoutMs: 2_000, allowInternal: ['127.0.0.1'] },
    })
    receiver = await startWebhookReceiver()
    strangerKey = await otherAccountKey(platform, 'webhook-stranger@example.com')
    const created = await json<{ id: string }>(
      await platform.call('/v2/serverless', {
        method: 'POST',
        json: { name: 'hooks', image: 'worker:1', gpu: { pools: ['ADA_24'] } },
      }),
      201,
    )
    endpointId = created.id
  })
  afterAll(async () => {
    await receiver.close()
    await platform.close()
  })

  const v2 = () => `${platform.url}/v2/${endpointId}`
  const run = async (body: Json) =>
    (
      await json<{ id: string }>(
        await platform.call(`/v2/${endpointId}/run`, { method: 'POST', json: body }),
      )
    ).id
  /** Takes the next job as a worker and reports `output` for it; returns the job-done answer. */
  const work = async (output: unknown) => {
    const taken = await json<{ id: string }>(
      await fetch(`${v2()}/job-take/w1?gpu=x&wait=2000&job_in_progress=0`, {
        headers: { authorization: TEST_ADMIN_KEY },
      }),
    )
    const done = await fetch(`${v2()}/job-done/w1/${taken.id}?gpu=x&isStream=false`, {
      method: 'POST',
      headers: {
        authorization: TEST_ADMIN_KEY,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: JSON.stringify({ output }),
    })
    return { id: taken.id, done }
  }
  const deliveriesOf = (jobId: string, key = TEST_ADMIN_KEY) =>
    platform.call(`/v2/serverless/${endpointId}/jobs/${jobId}/webhook`, { key })
  /** The job's deliveries once the first has left `pending` (recording follows the POST). */
  const settled = async (jobId: string): Promise<Deliveries> => {
    for (let i = 0; i < 100; i++) {
      const body = await json<Deliveries>(await deliveriesOf(jobId))
      if (body.deliveries[0] && body.deliveries[0].status !== 'pending') return body
      await sleep(20)
    }
    throw new Error(`the delivery of ${jobId} stayed pending`)
  }

  it('POSTs the /status JSON once the job finishes and shows the attempt to the owner only', async () => {
    const before = receiver.received.length
    const id = await run({ input: { n: 1 }, webhook: receiver.url })
    await work({ text: 'hello' })
    await receiver.waitFor(before + 1)
    const hit = receiver.received[before]!
    expect(hit.method).toBe('POST')
    expect(hit.path).toBe('/hook')
    expect(hit.headers['content-type']).toBe('application/json')
    const status = await json(await platform.call(`/v2/${endpointId}/status/${id}`))
    expect(JSON.parse(hit.body)).toEqual(status)
    expect(status).toMatchObject({ id, status: 'COMPLETED', output: { text: 'hello' } })

    const shown = await settled(id)
    expect(shown).toMatchObject({
      jobId: id,
      deliveries: [
        {
          status: 'delivered',
          url: receiver.url,
          jobStatus: 'COMPLETED',
          attempts: [{ attempt: 1, httpStatus: 200, outcome: 'delivered' }],
        },
      ],
    })
    const problem = await deliveriesOf(id, strangerKey)
    expect(problem.status).toBe(404)
    expect(problem.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    expect((await deliveriesOf('no-such-job')).status).toBe(404)
    // A job without a webhook has none to show.
    const quiet = await run({ input: { n: 2 } })
    expect(await json(await deliveriesOf(quiet))).toEqual({ jobId: quiet, deliveries: [] })
    await work(null)
  })

  it('retries a receiver that fails twice and records all three attempts', async () => {
    const before = receiver.received.length
    receiver.script(500, 502)
    const id = await run({ input: { n: 3 }, webhook: receiver.url })
    await work('ok')
    await receiver.waitFor(before + 3)
    const shown = await settled(id)
    expect(shown.deliveries[0]!.status).toBe('delivered')
    expect(shown.deliveries[0]!.attempts.map((a) => a.httpStatus)).toEqual([500, 502, 200])
  })

  it('never holds up the job while the receiver is slow to answer', async () => {
    const before = receiver.received.length
    receiver.script('hang')
    const id = await run({ input: { n: 4 }, webhook: receiver.url })
    const started = Date.now()
    const { done } = await work('fast')
    expect(done.status).toBe(200)
    await receiver.waitFor(before + 1)
    // The receiver holds the POST; the job is already COMPLETED for every reader.
    expect(await json(await platform.call(`/v2/${endpointId}/status/${id}`))).toMatchObject({
      status: 'COMPLETED',
      output: 'fast',
    })
    expect(Date.now() - started).toBeLessThan(1_500)
    expect(await json<Deliveries>(await deliveriesOf(id))).toMatchObject({
      deliveries: [{ status: 'pending', attempts: [] }],
    })
    receiver.releaseHeld()
    expect((await settled(id)).deliveries[0]!.status).toBe('delivered')
  })
})
