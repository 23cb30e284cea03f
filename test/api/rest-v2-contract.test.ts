import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'
import { json, logEvents } from '../support/http.js'

type Json = Record<string, unknown>

/**
 * Points of RunPod's REST v2 contract (its OpenAPI document, "Frontdoor v2.9.0") that clients
 * following it depend on.
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

  describe('pod create flags and placement requirements', () => {
    const KEY =
      'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHn0bGZ0b3J0ZXN0aW5nb25seTAwMDAwMDAwMDAwMDA v2@test'
    const createPod = (body: Json) =>
      call('POST', '/v2/pods', { name: 'flags', image: 'busybox', ...body })
    const logs = async (id: string) =>
      (await platform.call(`/v2/pods/${id}/logs?follow=false&source=container`)).text()
    const podsToDelete: string[] = []
    afterAll(async () => {
      for (const id of podsToDelete) await call('DELETE', `/v2/pods/${id}`)
    })
    const created = async (body: Json) => {
      const pod = await json(await createPod(body), 201)
      podsToDelete.push(String(pod.id))
      return pod
    }

    it('startSsh puts the account keys in PUBLIC_KEY; without it the pod gets none', async () => {
      await json(await call('PUT', '/v2/account/ssh-keys', { keys: [KEY] }))
      const args = 'echo "key=[$PUBLIC_KEY]"; sleep 300'
      const withSsh = await created({ cpu: { id: 'cpu3c', vcpuCount: 2 }, args, startSsh: true })
      const without = await created({ cpu: { id: 'cpu3c', vcpuCount: 2 }, args })
      const own = await created({
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        args,
        startSsh: true,
        env: { PUBLIC_KEY: 'ssh-rsa AAAAB3 mine' },
      })
      // A create-time flag: never returned.
      expect(withSsh).not.toHaveProperty('startSsh')
      expect(withSsh).not.toHaveProperty('startJupyter')
      await expect
        .poll(() => logs(String(withSsh.id)), { timeout: 15_000, interval: 200 })
        .toContain(`key=[${KEY}]`)
      await expect
        .poll(() => logs(String(without.id)), { timeout: 15_000, interval: 200 })
        .toContain('key=[]')
      await expect
        .poll(() => logs(String(own.id)), { timeout: 15_000, interval: 200 })
        .toContain('key=[ssh-rsa AAAAB3 mine]')
      await json(await call('PUT', '/v2/account/ssh-keys', { keys: [] }))
    }, 40_000)

    it('startJupyter puts a generated JUPYTER_PASSWORD in env unless env has one', async () => {
      const generated = await created({ cpu: { id: 'cpu3c', vcpuCount: 2 }, startJupyter: true })
      expect((generated.env as Json).JUPYTER_PASSWORD).toMatch(/^[A-Za-z0-9]{20}$/)
      const kept = await created({
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        startJupyter: true,
        env: { JUPYTER_PASSWORD: 'mine' },
      })
      expect(kept.env).toEqual({ JUPYTER_PASSWORD: 'mine' })
      const none = await created({ cpu: { id: 'cpu3c', vcpuCount: 2 } })
      expect(none.env).toEqual({})
    })

    it('gpu CUDA versions and per-GPU minimums are placement requirements', async () => {
      const a6000 = (gpu: Json) => createPod({ gpu: { id: 'NVIDIA RTX A6000', ...gpu } })
      const both = await problem(
        await a6000({ allowedCudaVersions: ['12.4'], minCudaVersion: '12.1' }),
        400,
      )
      expect(both.detail).toBe('give gpu.allowedCudaVersions or gpu.minCudaVersion, not both')
      // An explicit [] states no constraint, so it may go with a floor.
      const floor = await json(
        await a6000({ allowedCudaVersions: [], minCudaVersion: '12.1' }),
        201,
      )
      podsToDelete.push(String(floor.id))
      expect((await problem(await a6000({ allowedCudaVersions: ['12.8'] }), 409)).detail).toContain(
        'CUDA 12.8',
      )
      expect((await problem(await a6000({ minCudaVersion: '12.9' }), 409)).detail).toContain(
        'CUDA 12.9 or newer',
      )
      // The demo A6000 host gives each GPU 16 vCPUs and 62 GB.
      await problem(await a6000({ minVcpuCountPerGpu: 17 }), 409)
      await problem(await a6000({ minRamPerGpu: 63 }), 409)
      const fits = await json(
        await a6000({ allowedCudaVersions: ['12.4'], minVcpuCountPerGpu: 16, minRamPerGpu: 62 }),
        201,
      )
      podsToDelete.push(String(fits.id))
      expect(fits.gpu).toEqual({ id: 'NVIDIA RTX A6000', count: 1 })
      // cudaVersion is the CUDA version of the host the pod is placed on (the demo A6000's).
      await expect
        .poll(
          async () => (await json(await call('GET', `/v2/pods/${String(fits.id)}`))).cudaVersion,
          {
            timeout: 10_000,
            interval: 100,
          },
        )
        .toBe('12.4')
      await problem(await a6000({ minCudaVersion: '12' }), 422)
    })

    it('the pod view always has an ssh block, with a direct endpoint when 22/tcp is exposed', async () => {
      const plain = await created({ cpu: { id: 'cpu3c', vcpuCount: 2 } })
      // RunPod's schema requires both keys; a CPU pod has no CUDA version.
      expect(plain).toMatchObject({ ssh: { proxy: null, direct: null }, cudaVersion: null })
      const pod = await created({
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        ports: ['22/tcp'],
        args: 'sleep 300',
      })
      expect(pod.ssh).toEqual({ proxy: null, direct: null })
      let running: Json = {}
      await expect
        .poll(
          async () => {
            running = await json(await call('GET', `/v2/pods/${String(pod.id)}`))
            return running.status
          },
          { timeout: 40_000, interval: 200 },
        )
        .toBe('RUNNING')
      const port = (
        running.runtime as { ports: Array<{ private: number; public: number; ip: string }> }
      ).ports[0]!
      expect(running.ssh).toEqual({
        proxy: null,
        direct: {
          host: port.ip,
          port: port.public,
          username: 'root',
          command: `ssh root@${port.ip} -p ${port.public}`,
        },
      })
    }, 50_000)
  })

  describe('logs: source is container, system or both, and both is the default', () => {
    const events = logEvents

    it('pod logs', async () => {
      const pod = await json(
        await call('POST', '/v2/pods', {
          name: 'logs',
          image: 'busybox',
          cpu: { id: 'cpu3c', vcpuCount: 2 },
          args: 'echo hello-logs; sleep 300',
        }),
        201,
      )
      const path = `/v2/pods/${String(pod.id)}/logs?follow=false`
      let both: ReturnType<typeof events> = []
      await expect
        .poll(
          async () => {
            both = events(await (await platform.call(path)).text())
            // The workload may print before its STARTING is written: wait for both sources to
            // be done with the start, RUNNING being the last line of it.
            return (
              both.some((e) => e.line === 'hello-logs') &&
              both.some((e) => e.source === 'system' && e.line === 'RUNNING')
            )
          },
          { timeout: 20_000, interval: 200 },
        )
        .toBe(true)
      expect(new Set(both.map((e) => e.source))).toEqual(new Set(['container', 'system']))
      expect(both.find((e) => e.source === 'system')!.line).toMatch(/^created; placed/)
      // Each id says where the stream is in both sources.
      for (const e of both) expect(e.id).toMatch(/^[^/]+\/\d+\.\d+$/)
      // Resuming after the last event sends nothing already sent.
      const resumed = await platform.call(path, {
        headers: { 'last-event-id': both[both.length - 1]!.id },
      })
      expect(events(await resumed.text())).toEqual([])
      const container = events(await (await platform.call(`${path}&source=container`)).text())
      expect(container.map((e) => e.source)).toEqual(['container'])
      expect(container[0]!.id).toMatch(/^[^/]+\/\d+$/)
      const system = events(await (await platform.call(`${path}&source=system`)).text())
      expect(new Set(system.map((e) => e.source))).toEqual(new Set(['system']))
      await call('DELETE', `/v2/pods/${String(pod.id)}`)
    }, 30_000)

    it('worker logs have a system source too', async () => {
      const endpoint = await json(
        await call('POST', '/v2/serverless', {
          name: 'worker-logs',
          image: 'podyard/idle',
          args: 'echo worker-output; sleep 300',
          cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
          workers: { min: 1, max: 1 },
        }),
        201,
      )
      const id = String(endpoint.id)
      let workerId = ''
      await expect
        .poll(
          async () => {
            const list = await json<{ workers: Array<{ id: string }> }>(
              await call('GET', `/v2/serverless/${id}/workers`),
            )
            workerId = list.workers[0]?.id ?? ''
            return workerId
          },
          { timeout: 20_000, interval: 200 },
        )
        .not.toBe('')
      const path = `/v2/serverless/${id}/workers/${workerId}/logs?follow=false`
      let both: ReturnType<typeof events> = []
      await expect
        .poll(
          async () => {
            both = events(await (await platform.call(path)).text())
            return both.some((e) => e.line === 'worker-output')
          },
          { timeout: 20_000, interval: 200 },
        )
        .toBe(true)
      const system = both.filter((e) => e.source === 'system').map((e) => e.line)
      expect(system[0]).toBe('wanted for endpoint version 1')
      expect(system[1]).toMatch(/^placed on host \S+ in \S+; starting version 1$/)
      const onlySystem = events(await (await platform.call(`${path}&source=system`)).text())
      expect(onlySystem.map((e) => e.line)).toEqual(system)
      await call('DELETE', `/v2/serverless/${id}`)
    }, 50_000)
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
