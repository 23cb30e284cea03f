import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestPlatform, type TestPlatform } from '../support/platform.js'

describe('operations endpoints', () => {
  let platform: TestPlatform

  beforeAll(async () => {
    platform = await startTestPlatform()
  })
  afterAll(() => platform.close())

  it('answers liveness and readiness without a key', async () => {
    const health = await platform.call('/healthz', { key: null })
    expect(health.status).toBe(200)
    expect(await health.json()).toMatchObject({ status: 'ok' })
    const ready = await platform.call('/readyz', { key: null })
    expect(ready.status).toBe(200)
    expect(await ready.json()).toEqual({ status: 'ready' })
  })

  it("exposes Prometheus metrics to the admin's key, labelled by route pattern", async () => {
    await platform.call('/v2/catalog/gpus')
    // Who else may read them: test/platform/metrics-access.test.ts.
    const response = await platform.call('/metrics')
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/)
    const text = await response.text()
    expect(text).toMatch(
      /podyard_http_requests_total\{method="GET",route="\/v2\/catalog\/gpus",status="200"\} \d+/,
    )
    expect(text).toMatch(/# TYPE podyard_http_request_duration_seconds histogram/)
    // Process and runtime metrics under their standard names, as stock dashboards read them.
    expect(text).toMatch(/^process_cpu_seconds_total \d/m)
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds \d/m)
    expect(text).not.toMatch(/^podyard_(process|nodejs)_/m)
  })

  it('serves an OpenAPI 3.1 document generated from the route schemas, and a docs page', async () => {
    const response = await platform.call('/v2/openapi.json', { key: null })
    expect(response.status).toBe(200)
    const doc = (await response.json()) as {
      openapi: string
      info: { version: string }
      paths: Record<
        string,
        Record<
          string,
          { operationId?: string; parameters?: Array<{ name?: string; $ref?: string }> }
        >
      >
      components: { parameters: Record<string, { name: string }> }
    }
    // A parameter several operations share is a reference to components.parameters.
    const named = (p: { name?: string; $ref?: string }) =>
      p.$ref === undefined ? p.name : doc.components.parameters[p.$ref.split('/').pop()!]?.name
    expect(doc.openapi).toBe('3.1.0')
    expect(doc.info.version).toBe('2.0.0')
    expect(doc.paths['/v2/catalog/gpus']?.get?.operationId).toBe('listGpuTypes')
    expect(doc.paths['/v2/catalog/gpus']?.get?.parameters?.map(named)).toEqual(
      expect.arrayContaining(['count', 'cloud', 'include']),
    )
    expect(doc.paths['/v2/catalog/datacenters/{id}']?.get?.operationId).toBe('getDataCenter')
    expect(doc.paths['/v2/account/api-keys']?.post?.operationId).toBe('createApiKey')
    expect(doc.paths['/healthz']).toBeUndefined()

    const docs = await platform.call('/v2/docs', { key: null, redirect: 'follow' })
    expect(docs.status).toBe(200)
    expect(await docs.text()).toMatch(/<html/i)
  })

  it('is not ready once the store is gone', async () => {
    const other = await startTestPlatform()
    await other.store.close()
    const response = await other.call('/readyz', { key: null })
    expect(response.status).toBe(503)
    const problem = (await response.json()) as { title: string; detail: string }
    expect(problem.title).toBe('Service Unavailable')
    // The driver's own error (which can name the database's host and user) stays in the log.
    expect(problem.detail).toBe('not ready: the database does not answer')
    await other.app.close()
  })
})
