import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'
import { json } from '../support/http.js'
import { contractCalls, type Json } from '../support/rest-v2-contract-fixtures.js'

/**
 * Points of RunPod's REST v2 contract (its OpenAPI document, "Frontdoor v2.9.0") that clients
 * following it depend on: templates on create, registries, endpoint workers and GPU selection,
 * the catalog, the routes this platform cannot serve, and releases. Pod create flags and logs:
 * rest-v2-contract-pods-and-logs.test.ts.
 */
describe('REST v2 contract points', () => {
  let platform: TestPlatform
  let otherKey: string

  const { call, problem } = contractCalls(() => platform)
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

    it('a pod created from a template names it, keeps its copied settings, and keeps it from being deleted', async () => {
      const t = await template({ name: 'linked', image: 'busybox', env: { A: '1' } })
      const pod = await json(
        await call('POST', '/v2/pods', {
          name: 'linked',
          templateId: t.id,
          cpu: { id: 'cpu3c', vcpuCount: 2 },
        }),
        201,
      )
      expect(pod).toMatchObject({ template: t.id, image: 'busybox', env: { A: '1' } })
      // The settings were copied at create: a later edit of the template does not reach the pod.
      await json(await call('PATCH', `/v2/templates/${t.id}`, { env: { A: '2' } }))
      const again = await json(await call('GET', `/v2/pods/${String(pod.id)}`))
      expect(again).toMatchObject({ template: t.id, env: { A: '1' } })
      const refused = await problem(await call('DELETE', `/v2/templates/${t.id}`), 400)
      expect(refused.detail).toContain(String(pod.id))
      expect((await call('DELETE', `/v2/pods/${String(pod.id)}`)).status).toBe(204)
      expect((await call('DELETE', `/v2/templates/${t.id}`)).status).toBe(204)
    })
  })

  describe('registries', () => {
    it('deleting a registry only templates name succeeds and clears their registry', async () => {
      const registry = await json<{ id: string }>(
        await call('POST', '/v2/registries', { name: 'r-tpl', username: 'u', password: 'p' }),
        201,
      )
      const t = await template({ name: 'with-registry', registry: registry.id })
      expect(t.registry).toBe(registry.id)
      expect((await call('DELETE', `/v2/registries/${registry.id}`)).status).toBe(204)
      expect((await json(await call('GET', `/v2/templates/${t.id}`))).registry).toBeNull()
    })

    it('pods and endpoints still keep a registry from being deleted', async () => {
      const registry = await json<{ id: string }>(
        await call('POST', '/v2/registries', { name: 'r-ep', username: 'u', password: 'p' }),
        201,
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

  describe('catalog', () => {
    it('cudaVersions also narrows the returned cudaVersions array', async () => {
      const all = await json<{ cudaVersions: Array<{ version: string }> }>(
        await call('GET', '/v2/catalog/gpus/NVIDIA%20GeForce%20RTX%204090?include=AVAILABILITY'),
      )
      expect(all.cudaVersions.map((v) => v.version)).toEqual(['12.8', '12.6'])
      const narrowed = await json<{ cudaVersions: Array<{ version: string }> }>(
        await call(
          'GET',
          '/v2/catalog/gpus/NVIDIA%20GeForce%20RTX%204090?include=AVAILABILITY&cudaVersions=12.6',
        ),
      )
      expect(narrowed.cudaVersions.map((v) => v.version)).toEqual(['12.6'])
      const floor = await json<{ cudaVersions: Array<{ version: string }> }>(
        await call(
          'GET',
          '/v2/catalog/gpus/NVIDIA%20GeForce%20RTX%204090?include=AVAILABILITY&minCudaVersion=12.7',
        ),
      )
      expect(floor.cudaVersions.map((v) => v.version)).toEqual(['12.8'])
    })

    it('data centers carry a country code, and countryCodes filters them', async () => {
      const { dataCenters } = await json<{
        dataCenters: Array<{ id: string; countryCode: string }>
      }>(await call('GET', '/v2/catalog/datacenters'))
      expect(Object.fromEntries(dataCenters.map((dc) => [dc.id, dc.countryCode]))).toEqual({
        'US-KS-2': 'US',
        'EU-RO-1': 'RO',
        'CA-MTL-1': 'CA',
        'EUR-IS-1': 'IS',
      })
      const filtered = await json<{ dataCenters: Array<{ id: string }> }>(
        await call('GET', '/v2/catalog/datacenters?countryCodes=RO,IS'),
      )
      expect(filtered.dataCenters.map((dc) => dc.id)).toEqual(['EU-RO-1', 'EUR-IS-1'])
      await problem(await call('GET', '/v2/catalog/datacenters?countryCodes=ro'), 422)
    })

    it('countryCodes scopes GPU availability and data centers to those countries', async () => {
      type Gpu = { id: string; availability: string; dataCenters?: Array<{ id: string }> }
      const inCanada = await json<{ gpus: Gpu[] }>(
        await call('GET', '/v2/catalog/gpus?include=AVAILABILITY&countryCodes=CA'),
      )
      // The 4090 is in US-KS-2 and CA-MTL-1: only the Canadian one counts.
      const rtx4090 = inCanada.gpus.find((g) => g.id === 'NVIDIA GeForce RTX 4090')!
      expect(rtx4090.dataCenters!.map((dc) => dc.id)).toEqual(['CA-MTL-1'])
      // A type with no data center in Canada drops out of the list.
      expect(inCanada.gpus.some((g) => g.id === 'NVIDIA H200')).toBe(false)
      // One type asked for by id is still answered, with no stock and no data centers.
      const h200 = await json<Gpu>(
        await call('GET', '/v2/catalog/gpus/NVIDIA%20H200?include=AVAILABILITY&countryCodes=CA'),
      )
      expect(h200.availability).toBe('NONE')
      expect(h200).not.toHaveProperty('dataCenters')
      await problem(await call('GET', '/v2/catalog/gpus?countryCodes=CAN'), 422)
    })
  })

  describe('routes of the contract this platform cannot serve', () => {
    it('/v2/registries/delegations is not taken for a registry id, and answers 501', async () => {
      for (const [method, path] of [
        ['GET', '/v2/registries/delegations'],
        ['POST', '/v2/registries/delegations'],
        ['DELETE', '/v2/registries/delegations/abc'],
      ] as const) {
        const body = await problem(
          await call(method, path, method === 'POST' ? { name: 'x' } : undefined),
          501,
        )
        expect(body.detail).toContain('not offered by this platform')
      }
    })

    it('/v2/serverless/{id}/builds answers 501 for an endpoint of the account, 404 otherwise', async () => {
      const endpoint = await json(
        await call('POST', '/v2/serverless', {
          name: 'builds',
          image: 'worker:1',
          gpu: { pools: ['ADA_24'] },
        }),
        201,
      )
      const id = String(endpoint.id)
      for (const [method, path] of [
        ['GET', `/v2/serverless/${id}/builds`],
        ['POST', `/v2/serverless/${id}/builds`],
        ['GET', `/v2/serverless/${id}/builds/b1`],
      ] as const) {
        const body = await problem(
          await call(method, path, method === 'POST' ? {} : undefined),
          501,
        )
        expect(body).toMatchObject({ title: 'Not Implemented', status: 501 })
        expect(body.detail).toContain('not offered by this platform')
      }
      await problem(await call('GET', `/v2/serverless/${id}/builds`, undefined, otherKey), 404)
    })
  })

  describe('releases: /v2/serverless/{id}/releases', () => {
    it("lists the endpoint's versions with what changed, newest first, and the rollout", async () => {
      const endpoint = await json(
        await call('POST', '/v2/serverless', {
          name: 'releases',
          image: 'worker:1',
          gpu: { pools: ['ADA_24'] },
        }),
        201,
      )
      const id = String(endpoint.id)
      await json(await call('PATCH', `/v2/serverless/${id}`, { env: { MODE: 'two' } }))
      // A change of nothing workers run is no release.
      await json(await call('PATCH', `/v2/serverless/${id}`, { name: 'renamed' }))
      await json(await call('PATCH', `/v2/serverless/${id}`, { image: 'worker:3' }))
      const list = await json<Json & { releases: Json[] }>(
        await call('GET', `/v2/serverless/${id}/releases`),
      )
      expect(list.endpointVersion).toBe(3)
      expect(list.rollout).toEqual({
        inProgress: false,
        workersOnLatest: 0,
        workersTotal: 0,
        percentOnLatest: 0,
      })
      expect(list.releases.map((r) => r.version)).toEqual([3, 2, 1])
      expect(list.releases[0]).toMatchObject({
        id: expect.stringMatching(/^rel_/),
        source: 'MANUAL',
        buildId: null,
        createdByUserId: expect.stringMatching(/^user_/),
        workerCount: 0,
        diff: [{ field: 'image', old: 'worker:1', new: 'worker:3' }],
      })
      expect(list.releases[1]!.diff).toEqual([{ field: 'env', old: {}, new: { MODE: 'two' } }])
      expect(list.releases[2]!.diff).toContainEqual({ field: 'image', old: null, new: 'worker:1' })
      await problem(await call('GET', `/v2/serverless/${id}/releases`, undefined, otherKey), 404)
    })
  })
})
