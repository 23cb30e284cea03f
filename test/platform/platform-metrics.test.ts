import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Clock } from '../../src/shared/clock.js'
import { startTestPlatform, type TestPlatform } from '../support/platform.js'
import { platformStores } from '../support/platform-stores.js'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js'

/** The value of one series in Prometheus text, or undefined when it is not there. */
function valueOf(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

describe.each(platformStores())('platform metrics on $name', (store) => {
  let platform: TestPlatform
  let receiver: WebhookReceiver
  let endpointId: string

  const post = (path: string, json: unknown, key?: string) =>
    platform.call(path, { method: 'POST', json, ...(key === undefined ? {} : { key }) })
  const scrape = async () => (await platform.call('/metrics')).text()

  beforeAll(async () => {
    receiver = await startWebhookReceiver()
    platform = await store.start({
      webhooks: { allowInternal: ['127.0.0.1'], retryDelayMs: 10_000, timeoutMs: 2_000 },
    })
    const endpoint = await post('/v2/serverless', {
      name: 'metered',
      image: 'worker:1',
      gpu: { pools: ['ADA_24'] },
    })
    endpointId = ((await endpoint.json()) as { id: string }).id
  })
  afterAll(async () => {
    await platform.close()
    await receiver.close()
  })

  it('counts jobs from submission to their end, with delay and execution times', async () => {
    const { workerKey } = (await (
      await platform.call(`/v2/serverless/${endpointId}/worker-key`)
    ).json()) as { workerKey: string }
    const run = async (body: unknown) =>
      ((await (await post(`/v2/${endpointId}/run`, body)).json()) as { id: string }).id
    const done = await run({ input: { n: 1 }, webhook: receiver.url })
    const cancelled = await run({ input: { n: 2 } })
    expect((await post(`/v2/${endpointId}/cancel/${cancelled}`, {})).status).toBe(200)
    expect((await post(`/v2/${endpointId}/cancel/${cancelled}`, {})).status).toBe(200)

    const take = await platform.call(`/v2/${endpointId}/job-take/metrics-worker?wait=1000`, {
      key: workerKey,
    })
    expect(((await take.json()) as { id: string }).id).toBe(done)
    const report = await platform.call(`/v2/${endpointId}/job-done/metrics-worker/${done}`, {
      method: 'POST',
      key: workerKey,
      json: { output: { ok: true } },
    })
    expect(report.status).toBe(200)
    await receiver.waitFor(1, 10_000)

    await expect
      .poll(async () =>
        valueOf(await scrape(), 'podyard_webhook_attempts_total{outcome="delivered"}'),
      )
      .toBe(1)
    const text = await scrape()
    const own = `endpoint="${endpointId}"`
    expect(valueOf(text, `podyard_jobs_submitted_total{${own}}`)).toBe(2)
    expect(valueOf(text, `podyard_jobs_ended_total{status="COMPLETED",${own}}`)).toBe(1)
    expect(valueOf(text, `podyard_jobs_ended_total{status="CANCELLED",${own}}`)).toBe(1)
    // The `other` series exist from the start, so that alerts have something to read.
    expect(valueOf(text, 'podyard_jobs_ended_total{status="FAILED",endpoint="other"}')).toBe(0)
    expect(valueOf(text, 'podyard_jobs_ended_total{status="TIMED_OUT",endpoint="other"}')).toBe(0)
    expect(valueOf(text, `podyard_job_delay_seconds_count{${own}}`)).toBe(1)
    expect(valueOf(text, `podyard_job_execution_seconds_count{${own}}`)).toBe(1)
    expect(valueOf(text, 'podyard_queue_depth{endpoint="other"}')).toBe(0)
    expect(valueOf(text, 'podyard_queue_oldest_age_seconds{endpoint="other"}')).toBe(0)
    expect(valueOf(text, 'podyard_webhook_attempts_total{outcome="gave_up"}')).toBe(0)
  })

  it('reports the queue, pods, workers, the autoscaler, the database and the meter', async () => {
    await post(`/v2/${endpointId}/run`, { input: { n: 3 } })
    const pod = await post('/v2/pods', {
      name: 'metered-pod',
      image: 'x',
      cpu: { id: 'cpu3c', vcpuCount: 2 },
      args: 'sleep 30',
    })
    expect(pod.status).toBe(201)
    await new Promise((resolve) => setTimeout(resolve, 1_100))
    const text = await scrape()
    expect(valueOf(text, `podyard_queue_depth{endpoint="${endpointId}"}`)).toBe(1)
    expect(
      valueOf(text, `podyard_queue_oldest_age_seconds{endpoint="${endpointId}"}`),
    ).toBeGreaterThanOrEqual(1)
    const pods = ['PROVISIONING', 'STARTING', 'RUNNING'].map(
      (status) => valueOf(text, `podyard_pods{status="${status}"}`) ?? 0,
    )
    expect(pods.reduce((a, b) => a + b, 0)).toBe(1)
    expect(valueOf(text, 'podyard_pods{status="ERROR"}')).toBe(0)
    for (const phase of ['PENDING', 'STARTING', 'READY', 'UNHEALTHY'])
      expect(valueOf(text, `podyard_workers{phase="${phase}"}`)).toBeGreaterThanOrEqual(0)
    for (const series of [
      'podyard_autoscaler_scale_total{direction="up",reason="queue_delay"}',
      'podyard_autoscaler_scale_total{direction="down",reason="idle"}',
      'podyard_hosts{state="UP"}',
      'podyard_billing_meter_lag_seconds',
    ])
      expect(valueOf(text, series), series).toBeGreaterThanOrEqual(0)
    expect(valueOf(text, 'podyard_db_query_duration_seconds_count{outcome="ok"}')).toBeGreaterThan(
      10,
    )
  })

  it('leaves long polls out of the request-duration histogram, and counts them', async () => {
    await platform.call(`/v2/${endpointId}/status-sync/nope?wait=1000`)
    await platform.call('/v2/catalog/gpus')
    const text = await scrape()
    const route = '/v2/:endpointId/status-sync/:jobId'
    expect(text).toContain(
      `podyard_http_requests_total{method="GET",route="${route}",status="404"} 1`,
    )
    expect(text).not.toContain(
      `podyard_http_request_duration_seconds_count{method="GET",route="${route}"}`,
    )
    expect(text).toContain(
      'podyard_http_request_duration_seconds_count{method="GET",route="/v2/catalog/gpus"}',
    )
  })
})

describe('the endpoint label and the workers gauge', () => {
  let platform: TestPlatform
  beforeAll(async () => {
    platform = await startTestPlatform({ telemetry: { traceContext: false, endpointLabels: 2 } })
  })
  afterAll(() => platform.close())

  const createEndpoint = async (name: string) => {
    const created = await platform.call('/v2/serverless', {
      method: 'POST',
      json: { name, image: 'worker:1', gpu: { pools: ['ADA_24'] } },
    })
    expect(created.status).toBe(201)
    return ((await created.json()) as { id: string }).id
  }

  // First: no job anywhere yet, so no worker of the platform's own.
  it('counts a self-started worker as /health does', async () => {
    const id = await createEndpoint('self-started')
    const { workerKey } = (await (
      await platform.call(`/v2/serverless/${id}/worker-key`)
    ).json()) as { workerKey: string }
    // A worker started by its owner, not by the platform: it only calls the worker protocol.
    const take = await platform.call(`/v2/${id}/job-take/own-worker-1?wait=0`, { key: workerKey })
    expect([200, 204]).toContain(take.status)
    const health = (await (await platform.call(`/v2/${id}/health`)).json()) as {
      workers: { idle: number; running: number; unhealthy: number }
    }
    expect(health.workers.idle).toBe(1)
    const text = await (await platform.call('/metrics')).text()
    // No job was submitted, so the platform started no worker: this is the one /health counts.
    expect(valueOf(text, 'podyard_workers{phase="READY"}')).toBe(1)
    for (const phase of ['PENDING', 'STARTING', 'UNHEALTHY'])
      expect(valueOf(text, `podyard_workers{phase="${phase}"}`)).toBe(0)
  })

  it('gives the first endpoints up to telemetry.endpointLabels their id, the rest "other"', async () => {
    const ids = [await createEndpoint('first'), await createEndpoint('second')]
    ids.push(await createEndpoint('third'), await createEndpoint('fourth'))
    for (const [index, id] of ids.entries()) {
      for (let n = 0; n <= index; n++) {
        const run = await platform.call(`/v2/${id}/run`, { method: 'POST', json: { input: { n } } })
        expect(run.status).toBe(200)
      }
    }
    const text = await (await platform.call('/metrics')).text()
    expect(valueOf(text, `podyard_jobs_submitted_total{endpoint="${ids[0]}"}`)).toBe(1)
    expect(valueOf(text, `podyard_jobs_submitted_total{endpoint="${ids[1]}"}`)).toBe(2)
    // The third and fourth (3 + 4 jobs) share one series: the cap holds.
    expect(valueOf(text, 'podyard_jobs_submitted_total{endpoint="other"}')).toBe(7)
    expect(valueOf(text, 'podyard_queue_depth{endpoint="other"}')).toBe(7)
    expect(valueOf(text, `podyard_queue_depth{endpoint="${ids[1]}"}`)).toBe(2)
    for (const family of ['podyard_jobs_submitted_total', 'podyard_queue_depth']) {
      const labels = new Set(
        [...text.matchAll(new RegExp(`^${family}\\{endpoint="([^"]+)"\\}`, 'gm'))].map(
          (match) => match[1],
        ),
      )
      expect(labels, family).toEqual(new Set([ids[0], ids[1], 'other']))
    }
  })
})

describe("the ages on the platform's clock", () => {
  let platform: TestPlatform
  /** A platform whose clock stands at New Year: its jobs are written with that time. */
  const newYear: Clock = { now: () => new Date('2026-01-01T00:00:00.000Z') }
  beforeAll(async () => {
    platform = await startTestPlatform({}, { clock: newYear })
  })
  afterAll(() => platform.close())

  it('measures the oldest job and the meter lag on the clock that wrote them', async () => {
    const created = await platform.call('/v2/serverless', {
      method: 'POST',
      json: { name: 'on-time', image: 'worker:1', gpu: { pools: ['ADA_24'] } },
    })
    const { id } = (await created.json()) as { id: string }
    expect(
      (await platform.call(`/v2/${id}/run`, { method: 'POST', json: { input: {} } })).status,
    ).toBe(200)
    await platform.meter.tick()
    const text = await (await platform.call('/metrics')).text()
    // The system clock says months: the job has waited no time on the platform's.
    expect(valueOf(text, `podyard_queue_oldest_age_seconds{endpoint="${id}"}`)).toBe(0)
    expect(valueOf(text, 'podyard_billing_meter_lag_seconds')).toBe(0)
  })
})
