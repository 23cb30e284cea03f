import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { otherAccountKey, startTestPlatform, type TestPlatform } from './support/platform.js'
import { json } from './support/http.js'

type Json = Record<string, unknown>

/**
 * Points of RunPod's REST v2 contract (its OpenAPI document, "Frontdoor v2.9.0") that clients
 * following it depend on (issue 18, "REST v2 contract points").
 */
describe('REST v2 contract points', () => {
  let platform: TestPlatform
  let otherKey: string

  const call = (method: string, path: string, body?: unknown, key?: string) =>
    platform.call(path, {
      method,
      ...(body === undefined ? {} : { json: body }),
      ...(key ? { key } : {}),
    })
  const problem = async (response: Response, status: number) => {
    const body = (await response.json()) as { detail: string; errors?: string[] }
    expect(response.status, JSON.stringify(body)).toBe(status)
    return body
  }
  const template = async (body: Json, key?: string) =>
    json<Json & { id: string }>(
      await call('POST', '/v2/templates', { image: 'worker:1', ...body }, key),
      201,
    )

  beforeAll(async () => {
    platform = await startTestPlatform()
    otherKey = await otherAccountKey(platform, 'other-v2@example.com')
  })
  afterAll(() => platform.close())

  describe('templates on create', () => {
    it('an endpoint from a template merges env per key, the body winning', async () => {
      const t = await template({
        name: 'sls-env',
        serverless: true,
        env: { FROM_TEMPLATE: 't', SHARED: 'template' },
      })
      const endpoint = await json(
        await call('POST', '/v2/serverless', {
          name: 'merged',
          templateId: t.id,
          gpu: { pools: ['ADA_24'] },
          env: { SHARED: 'body', FROM_BODY: 'b' },
        }),
        201,
      )
      expect(endpoint.env).toEqual({ FROM_TEMPLATE: 't', SHARED: 'body', FROM_BODY: 'b' })
      const patched = await json(
        await call('PATCH', `/v2/serverless/${String(endpoint.id)}`, {
          templateId: t.id,
          env: { FROM_PATCH: 'p' },
        }),
      )
      expect(patched.env).toEqual({ FROM_TEMPLATE: 't', SHARED: 'template', FROM_PATCH: 'p' })
    })

    it('an endpoint from a pod template, and a pod from a serverless template, are 422', async () => {
      const podTemplate = await template({ name: 'pod-only', serverless: false })
      const endpoint = await problem(
        await call('POST', '/v2/serverless', {
          name: 'wrong-kind',
          templateId: podTemplate.id,
          gpu: { pools: ['ADA_24'] },
        }),
        422,
      )
      expect(endpoint.errors?.[0]).toMatch(/^body\.templateId: .*pod template/)
      const builtin = await problem(
        await call('POST', '/v2/serverless', {
          name: 'wrong-kind',
          templateId: 'runpod-ubuntu',
          cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
        }),
        422,
      )
      expect(builtin.detail).toContain('serverless template')
      const serverless = await template({ name: 'sls-only', serverless: true })
      const pod = await problem(
        await call('POST', '/v2/pods', {
          name: 'wrong-kind',
          templateId: serverless.id,
          cpu: { id: 'cpu3c', vcpuCount: 2 },
        }),
        422,
      )
      expect(pod.errors?.[0]).toMatch(/^body\.templateId: .*serverless template/)
    })

    it('an unknown or inaccessible templateId is 404', async () => {
      const theirs = await template({ name: 'private', serverless: true }, otherKey)
      for (const id of ['nope', theirs.id]) {
        await problem(
          await call('POST', '/v2/pods', {
            name: 'x',
            templateId: id,
            cpu: { id: 'cpu3c', vcpuCount: 2 },
          }),
          404,
        )
        await problem(
          await call('POST', '/v2/serverless', {
            name: 'x',
            templateId: id,
            gpu: { pools: ['ADA_24'] },
          }),
          404,
        )
      }
    })

    it('a pod created from a template keeps no link to it', async () => {
      const t = await template({ name: 'one-time', image: 'busybox', env: { A: '1' } })
      const pod = await json(
        await call('POST', '/v2/pods', {
          name: 'unlinked',
          templateId: t.id,
          cpu: { id: 'cpu3c', vcpuCount: 2 },
        }),
        201,
      )
      expect(pod).toMatchObject({ template: null, image: 'busybox', env: { A: '1' } })
      // Nothing links them, so the template may go while the pod lives on.
      expect((await call('DELETE', `/v2/templates/${t.id}`)).status).toBe(204)
      expect((await call('DELETE', `/v2/pods/${String(pod.id)}`)).status).toBe(204)
    })
  })

  describe('registries', () => {
    it('deleting a registry only templates name succeeds and clears their registry', async () => {
      const registry = await json<{ id: string }>(
        await call('POST', '/v2/registries', { name: 'r-tpl', username: 'u', password: 'p' }),
      )
      const t = await template({ name: 'with-registry', registry: registry.id })
      expect(t.registry).toBe(registry.id)
      expect((await call('DELETE', `/v2/registries/${registry.id}`)).status).toBe(204)
      expect((await json(await call('GET', `/v2/templates/${t.id}`))).registry).toBeNull()
    })

    it('pods and endpoints still keep a registry from being deleted', async () => {
      const registry = await json<{ id: string }>(
        await call('POST', '/v2/registries', { name: 'r-ep', username: 'u', password: 'p' }),
      )
      const endpoint = await json(
        await call('POST', '/v2/serverless', {
          name: 'uses-registry',
          image: 'worker:1',
          registry: registry.id,
          gpu: { pools: ['ADA_24'] },
        }),
        201,
      )
      const refused = await problem(await call('DELETE', `/v2/registries/${registry.id}`), 400)
      expect(refused.detail).toContain(`endpoint ${String(endpoint.id)}`)
    })
  })

  describe('endpoint workers and GPU selection', () => {
    const createEndpoint = async (body: Json) =>
      call('POST', '/v2/serverless', { name: 'ep', image: 'worker:1', ...body })

    it('workers.idleTimeout defaults to 10 s and is refused with REQUEST_COUNT scaling', async () => {
      const queued = await json(await createEndpoint({ gpu: { pools: ['ADA_24'] } }), 201)
      expect(queued.workers).toEqual({ min: 0, max: 3, idleTimeout: 10 })
      const refused = await problem(
        await createEndpoint({
          gpu: { pools: ['ADA_24'] },
          workers: { idleTimeout: 30 },
          scaling: { type: 'REQUEST_COUNT', requestCount: 2 },
        }),
        400,
      )
      expect(refused.detail).toContain('workers.idleTimeout')
      // Without it, REQUEST_COUNT is fine, and the idle timeout is left out of the answer.
      const counted = await json(
        await createEndpoint({
          gpu: { pools: ['ADA_24'] },
          scaling: { type: 'REQUEST_COUNT', requestCount: 2 },
        }),
        201,
      )
      expect(counted.workers).toEqual({ min: 0, max: 3 })
      // PATCH: the scaling the endpoint ends with decides.
      await problem(
        await call('PATCH', `/v2/serverless/${String(counted.id)}`, {
          workers: { idleTimeout: 30 },
        }),
        400,
      )
      await problem(
        await call('PATCH', `/v2/serverless/${String(queued.id)}`, {
          workers: { idleTimeout: 30 },
          scaling: { type: 'REQUEST_COUNT', requestCount: 2 },
        }),
        400,
      )
      const back = await json(
        await call('PATCH', `/v2/serverless/${String(counted.id)}`, {
          scaling: { type: 'QUEUE_DELAY', queueDelay: 2 },
          workers: { idleTimeout: 30 },
        }),
      )
      expect(back.workers).toEqual({ min: 0, max: 3, idleTimeout: 30 })
    })

    it('PATCH with gpu.pools and without excludedTypes clears the exclusions', async () => {
      const endpoint = await json(
        await createEndpoint({
          gpu: { pools: ['AMPERE_24'], excludedTypes: ['NVIDIA RTX A5000'] },
        }),
        201,
      )
      expect((endpoint.gpu as Json).excludedTypes).toEqual(['NVIDIA RTX A5000'])
      const countOnly = await json(
        await call('PATCH', `/v2/serverless/${String(endpoint.id)}`, { gpu: { count: 2 } }),
      )
      expect((countOnly.gpu as Json).excludedTypes).toEqual(['NVIDIA RTX A5000'])
      const repooled = await json(
        await call('PATCH', `/v2/serverless/${String(endpoint.id)}`, {
          gpu: { pools: ['AMPERE_24', 'ADA_24'] },
        }),
      )
      expect(repooled.gpu).toMatchObject({ pools: ['AMPERE_24', 'ADA_24'], excludedTypes: [] })
    })

    it('an excluded type that is not a GPU type of one of the pools is 400', async () => {
      const refused = await problem(
        await createEndpoint({
          gpu: { pools: ['ADA_24'], excludedTypes: ['NVIDIA RTX A5000'] },
        }),
        400,
      )
      expect(refused.detail).toContain('"NVIDIA RTX A5000" is not a GPU type of the pools ADA_24')
      // Surrounding whitespace is trimmed.
      const trimmed = await json(
        await createEndpoint({
          gpu: { pools: ['AMPERE_24'], excludedTypes: [' NVIDIA RTX A5000'] },
        }),
        201,
      )
      expect((trimmed.gpu as Json).excludedTypes).toEqual(['NVIDIA RTX A5000'])
    })
  })
})
