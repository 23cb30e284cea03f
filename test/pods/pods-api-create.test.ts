import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'
import {
  conforming,
  podCalls,
  RTX_4090,
  RTX_5090,
  type PodJson,
} from '../support/pods-api-fixtures.js'

/**
 * REST pods, as they are created: the schema failures (422) and rule conflicts (400) of a create,
 * the pod a create returns, its placement (data centers, clouds, no over-commit), the list and
 * another account's view. The pods' lives (run, stop, start, PATCH, logs) are in
 * pods-api-lifecycle.test.ts.
 */

describe('REST pods', () => {
  let platform: TestPlatform

  const { create, created, getPod, terminate, act, availability, problem } = podCalls(
    () => platform,
  )

  beforeAll(async () => {
    platform = await startTestPlatform()
  })
  afterAll(() => platform.close())

  describe('create: schema failures are 422 with each error listed', () => {
    it.each<[string, Record<string, unknown>, string]>([
      [
        'name missing',
        { name: undefined, cpu: { id: 'cpu3c', vcpuCount: 2 } },
        'body.name: is required',
      ],
      [
        'name empty',
        { name: '', cpu: { id: 'cpu3c', vcpuCount: 2 } },
        'body.name: must NOT have fewer than 1 characters',
      ],
      [
        'image missing',
        { image: undefined, cpu: { id: 'cpu3c', vcpuCount: 2 } },
        'body.image: is required',
      ],
      ['gpu.count 0', { gpu: { id: RTX_4090, count: 0 } }, 'body.gpu.count: must be >= 1'],
      ['vcpuCount 1', { cpu: { id: 'cpu3c', vcpuCount: 1 } }, 'body.cpu.vcpuCount: must be >= 2'],
      [
        'vcpuCount 3',
        { cpu: { id: 'cpu3c', vcpuCount: 3 } },
        'body.cpu.vcpuCount: must be a power of two >= 2',
      ],
      ['disk 0', { disk: 0, cpu: { id: 'cpu3c', vcpuCount: 2 } }, 'body.disk: must be >= 1'],
      [
        'persistent.size 9',
        { gpu: { id: RTX_4090 }, mounts: { persistent: { size: 9, path: '/workspace' } } },
        'body.mounts.persistent.size: must be >= 10',
      ],
      [
        'two network mounts',
        {
          cpu: { id: 'cpu3c', vcpuCount: 2 },
          mounts: {
            network: [
              { volumeId: 'a', path: '/a' },
              { volumeId: 'b', path: '/b' },
            ],
          },
        },
        'body.mounts.network: must NOT have more than 1 items',
      ],
      [
        'a mount entry without its path',
        { gpu: { id: RTX_4090 }, mounts: { persistent: { size: 20 } } },
        'body.mounts.persistent.path: is required',
      ],
      [
        'an extra property',
        { bogus: true, cpu: { id: 'cpu3c', vcpuCount: 2 } },
        'body.bogus: unknown property',
      ],
      [
        'an extra gpu property',
        { gpu: { id: RTX_4090, vram: 24 } },
        'body.gpu.vram: unknown property',
      ],
      [
        'cpu.memory supplied',
        { cpu: { id: 'cpu3c', vcpuCount: 2, memory: 4 } },
        'body.cpu.memory: unknown property',
      ],
      [
        'a bad port',
        { ports: ['http'], cpu: { id: 'cpu3c', vcpuCount: 2 } },
        'body.ports[0]: must be <port>/<protocol> with a port 1-65535 and protocol http, tcp or udp',
      ],
      [
        'a string disk',
        { disk: '10', cpu: { id: 'cpu3c', vcpuCount: 2 } },
        'body.disk: must be integer',
      ],
    ])('%s', async (_case, body, error) => {
      const response = await create(body)
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/)
      expect((await problem(response, 422)).errors).toContain(error)
    })
  })

  describe('create: rule conflicts are 400 naming the rule', () => {
    it.each<[string, Record<string, unknown>, string | RegExp]>([
      ['neither gpu nor cpu', {}, 'give one of gpu or cpu'],
      [
        'both gpu and cpu',
        { gpu: { id: RTX_4090 }, cpu: { id: 'cpu3c', vcpuCount: 2 } },
        'give either gpu or cpu, not both',
      ],
      [
        'persistent on a CPU pod',
        { cpu: { id: 'cpu3c', vcpuCount: 2 }, mounts: { persistent: { size: 20, path: '/w' } } },
        'mounts.persistent is not allowed on CPU pods; use a network mount',
      ],
      [
        'persistent with network',
        {
          gpu: { id: RTX_4090 },
          mounts: {
            persistent: { size: 20, path: '/w' },
            network: [{ volumeId: 'v', path: '/n' }],
          },
        },
        'mounts.persistent and mounts.network are mutually exclusive',
      ],
      [
        'a vCPU count the flavor does not offer',
        { cpu: { id: 'cpu3c', vcpuCount: 1024 } },
        /^CPU flavor cpu3c does not offer 1024 vCPUs; it offers 2, 4/,
      ],
      [
        'an unknown GPU type',
        { gpu: { id: 'RTX 9999' } },
        'unknown GPU type "RTX 9999": see GET /v2/catalog/gpus',
      ],
      [
        'a GPU type by its display name',
        { gpu: { id: 'RTX 4090' } },
        'unknown GPU type "RTX 4090" (did you mean "NVIDIA GeForce RTX 4090"?): see GET /v2/catalog/gpus',
      ],
      [
        'an unknown CPU flavor',
        { cpu: { id: 'cpu9z', vcpuCount: 2 } },
        'unknown CPU flavor "cpu9z": see GET /v2/catalog/cpus',
      ],
      [
        'an unknown data center',
        { gpu: { id: RTX_4090 }, dataCenterIds: ['XX-NONE-1'] },
        /^unknown data center "XX-NONE-1"/,
      ],
      [
        'global networking on a CPU pod',
        { cpu: { id: 'cpu3c', vcpuCount: 2 }, globalNetworking: true },
        'globalNetworking needs an NVIDIA GPU',
      ],
      [
        'global networking on an AMD GPU',
        { gpu: { id: 'AMD Instinct MI300X OAM' }, globalNetworking: true },
        'globalNetworking needs an NVIDIA GPU',
      ],
      [
        'global networking in a data center without it',
        { gpu: { id: RTX_4090 }, globalNetworking: true, dataCenterIds: ['CA-MTL-1'] },
        'globalNetworking needs a data center with global networking; none of CA-MTL-1 has it',
      ],
      [
        'an unknown registry',
        { gpu: { id: RTX_4090 }, registry: 'reg123' },
        'registry "reg123" not found',
      ],
      [
        'a network volume not in the account',
        {
          cpu: { id: 'cpu3c', vcpuCount: 2 },
          mounts: { network: [{ volumeId: 'vol123', path: '/data' }] },
        },
        'network volume "vol123" not found in your account',
      ],
    ])('%s', async (_case, body, detail) => {
      const { detail: got } = await problem(await create(body), 400)
      if (typeof detail === 'string') expect(got).toBe(detail)
      else expect(got).toMatch(detail)
    })
  })

  it('201 returns the pod before it is usable, at the edges of every bound', async () => {
    const pod = await created({
      name: 'x',
      gpu: { id: RTX_4090, count: 1 },
      disk: 1,
      mounts: { persistent: { size: 10, path: '/workspace' } },
    })
    expect(pod).toMatchObject({
      name: 'x',
      status: 'PROVISIONING',
      actions: ['start', 'terminate'],
      startedAt: null,
      runtime: null,
      cloud: 'SECURE',
      template: null,
      locked: false,
      disk: 1,
      args: '',
      ports: [],
      env: {},
      registry: null,
      globalNetworking: { enabled: false },
      mounts: { persistent: { size: 10, path: '/workspace' } },
      gpu: { id: RTX_4090, count: 1 },
    })
    expect(pod.id).toMatch(/^[a-z0-9]{14}$/)
    expect(pod.dataCenterId).toBe('US-KS-2')
    expect(pod.cost).toBeGreaterThan(0)
    expect(pod).not.toHaveProperty('cpu')

    const stillProvisioning = (await (await act(pod.id, 'start')).json()) as PodJson
    expect(stillProvisioning).toMatchObject({ id: pod.id, status: 'PROVISIONING' })
    const longest = await created({ name: 'n'.repeat(191), cpu: { id: 'cpu3c', vcpuCount: 2 } })
    await terminate(longest.id)
    expect(
      (
        await problem(
          await create({ name: 'n'.repeat(192), cpu: { id: 'cpu3c', vcpuCount: 2 } }),
          422,
        )
      ).errors,
    ).toEqual(['body.name: must NOT have more than 191 characters'])

    const cpuPod = await created({ cpu: { id: 'cpu3g', vcpuCount: 2 } })
    expect(cpuPod.cpu).toEqual({ id: 'cpu3g', vcpuCount: 2, memory: 8 })
    expect(cpuPod).not.toHaveProperty('gpu')
    await terminate(pod.id)
    await terminate(cpuPod.id)
  })

  it('honours data-center preferences and the cloud, and names what is missing when nothing fits', async () => {
    const pod = await created({
      gpu: { id: RTX_4090 },
      cloud: 'COMMUNITY',
      dataCenterIds: ['EU-RO-1', 'CA-MTL-1'],
    })
    expect(pod.dataCenterId).toBe('CA-MTL-1')
    await terminate(pod.id)
    const { detail } = await problem(await create({ gpu: { id: RTX_5090, count: 3 } }), 409)
    expect(detail).toMatch(/^no host has 3 free NVIDIA GeForce RTX 5090 in the SECURE cloud/)
    expect(detail).not.toContain('COMMUNITY')
    // The demo fleet has RTX 3090s in the COMMUNITY cloud only: a SECURE create is told so.
    const secure = await problem(await create({ gpu: { id: 'NVIDIA GeForce RTX 3090' } }), 409)
    expect(secure.detail).toMatch(
      /^no host has 1 free NVIDIA GeForce RTX 3090 in the SECURE cloud.*; the COMMUNITY cloud has room for it$/,
    )
    const community = await created({ gpu: { id: 'NVIDIA GeForce RTX 3090' }, cloud: 'COMMUNITY' })
    await terminate(community.id)
    const global = await created({ gpu: { id: 'NVIDIA H100 80GB HBM3' }, globalNetworking: true })
    expect(global.globalNetworking).toEqual({
      enabled: true,
      ip: expect.stringMatching(/^10\.\d+\.\d+\.\d+$/),
      internalDns: `${global.id}.runpod.internal`,
    })
    await terminate(global.id)
  })

  it('never over-commits a host under concurrent creates', async () => {
    const responses = await Promise.all(
      Array.from({ length: 12 }, (_, i) => create({ name: `race-${i}`, gpu: { id: RTX_5090 } })),
    )
    const statuses = responses.map((r) => r.status).sort()
    expect(statuses.filter((s) => s === 201)).toHaveLength(2)
    expect(statuses.filter((s) => s === 409)).toHaveLength(10)
    expect(await availability(RTX_5090)).toBe('NONE')
    for (const response of responses.filter((r) => r.status === 201)) {
      await terminate(((await response.json()) as PodJson).id)
    }
    expect(await availability(RTX_5090)).toBe('HIGH')
  })

  it('lists pods wrapped, filtered by status and name; TERMINATED only on request', async () => {
    const a = await created({ name: 'alpha', cpu: { id: 'cpu3c', vcpuCount: 2 } })
    const b = await created({ name: 'beta', cpu: { id: 'cpu3c', vcpuCount: 2 } })
    await terminate(b.id)
    const list = async (query: string) =>
      ((await (await platform.call(`/v2/pods${query}`)).json()) as { pods: PodJson[] }).pods.map(
        (p) => conforming(p).id,
      )
    expect(await list('')).toContain(a.id)
    expect(await list('')).not.toContain(b.id)
    expect(await list('?name=alpha')).toEqual([a.id])
    expect(await list('?status=TERMINATED')).toContain(b.id)
    expect(await list('?status=TERMINATED,EXITED')).not.toContain(a.id)
    expect((await platform.call('/v2/pods?status=GONE')).status).toBe(422)
    await terminate(a.id)
  })

  it('hides every pod of another account behind 404', async () => {
    const pod = await created({ cpu: { id: 'cpu3c', vcpuCount: 2 } })
    const key = await otherAccountKey(platform, 'stranger@example.com')
    const calls: Array<[string, string, unknown?]> = [
      ['GET', `/v2/pods/${pod.id}`],
      ['PATCH', `/v2/pods/${pod.id}`, { name: 'mine' }],
      ['POST', `/v2/pods/${pod.id}/action`, { action: 'stop' }],
      ['DELETE', `/v2/pods/${pod.id}`],
      ['GET', `/v2/pods/${pod.id}/logs?follow=false`],
    ]
    for (const [method, path, json] of calls) {
      const response = await platform.call(path, { method, key, ...(json ? { json } : {}) })
      expect(response.status, `${method} ${path}`).toBe(404)
      expect(((await response.json()) as { detail: string }).detail).toBe(`pod ${pod.id} not found`)
    }
    const theirs = (await (await platform.call('/v2/pods', { key })).json()) as { pods: unknown[] }
    expect(theirs.pods).toEqual([])
    expect((await getPod(pod.id)).name).toBe('p')
    await terminate(pod.id)
  })
})
