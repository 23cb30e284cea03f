import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PodSchema } from '../../src/api/rest/pod-schemas.js'
import { ManualClock } from '../../src/shared/clock.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'
import { conformanceTo } from '../support/schema-conformance.js'
import { until } from '../support/until.js'

/** Every pod answer of these tests is checked against the documented schema, field by field. */
const podErrors = conformanceTo(PodSchema)
function conforming<T>(pod: T): T {
  expect(podErrors(pod), JSON.stringify(pod)).toEqual([])
  return pod
}

interface PodJson {
  id: string
  status: string
  actions: string[]
  cost: number
  dataCenterId: string | null
  statusReason: string | null
  startedAt: string | null
  runtime: null | {
    uptime: number
    gpus: unknown[]
    cpu: { util: number }
    memory: { util: number }
    ports: Array<{ private: number; public: number; type: string; ip: string }>
  }
  [key: string]: unknown
}

const RTX_4090 = 'NVIDIA GeForce RTX 4090'
const RTX_5090 = 'NVIDIA GeForce RTX 5090'

describe('REST pods', () => {
  let platform: TestPlatform

  const post = (path: string, json: unknown, key?: string) =>
    platform.call(path, { method: 'POST', json, ...(key ? { key } : {}) })
  const create = (body: Record<string, unknown>) =>
    post('/v2/pods', { name: 'p', image: 'ubuntu', ...body })
  async function created(body: Record<string, unknown>): Promise<PodJson> {
    const response = await create(body)
    expect(response.status, JSON.stringify(await response.clone().json())).toBe(201)
    return conforming((await response.json()) as PodJson)
  }
  const getPod = async (id: string) => {
    const response = await platform.call(`/v2/pods/${id}`)
    const pod = (await response.json()) as PodJson
    return response.status === 200 ? conforming(pod) : pod
  }
  const terminate = (id: string) => platform.call(`/v2/pods/${id}`, { method: 'DELETE' })
  const act = (id: string, action: string) => post(`/v2/pods/${id}/action`, { action })
  async function waitFor(id: string, status: string, timeoutMs = 20_000): Promise<PodJson> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const pod = await getPod(id)
      if (pod.status === status) return pod
      if (Date.now() > deadline)
        throw new Error(`pod ${id} is ${pod.status} (${pod.statusReason}), not ${status}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  async function availability(gpu: string): Promise<string> {
    const response = await platform.call(`/v2/catalog/gpus/${encodeURIComponent(gpu)}`)
    return ((await response.json()) as { availability: string }).availability
  }
  async function problem(response: Response, status: number) {
    const body = (await response.json()) as { detail: string; errors?: string[] }
    expect(response.status, JSON.stringify(body)).toBe(status)
    return body
  }

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

  it('runs a real process through its whole lifecycle', async () => {
    const server = [
      'echo scratch > on-container-disk',
      'test -e "$PODYARD_MOUNT_WORKSPACE/kept" && echo again >> "$PODYARD_MOUNT_WORKSPACE/kept" || echo first > "$PODYARD_MOUNT_WORKSPACE/kept"',
      `exec node -e 'require("http").createServer((q, r) => r.end(JSON.stringify({ env: process.env, kept: require("fs").readFileSync(process.env.PODYARD_MOUNT_WORKSPACE + "/kept", "utf8"), disk: require("fs").readdirSync(".") }))).listen(process.env.RUNPOD_TCP_PORT_8080)'`,
    ].join('\n')
    const pod = await created({
      name: 'web',
      gpu: { id: RTX_5090, count: 2 },
      ports: ['8080/http'],
      env: { GREETING: 'hello' },
      args: server,
      mounts: { persistent: { size: 20, path: '/workspace' } },
    })
    expect(await availability(RTX_5090)).toBe('NONE')
    const running = await waitFor(pod.id, 'RUNNING')
    expect(running.actions).toEqual(['stop', 'restart', 'terminate'])
    expect(running.startedAt).not.toBeNull()
    expect(running.runtime).toMatchObject({
      uptime: expect.any(Number),
      gpus: [
        { util: 0, memoryUtil: 0 },
        { util: 0, memoryUtil: 0 },
      ],
      ports: [{ private: 8080, public: expect.any(Number), type: 'http', ip: '127.0.0.1' }],
    })
    // Its usage is measured in the background from when it runs: on a read soon after.
    const measured = await until(
      'its usage figures',
      async () => (await getPod(pod.id)).runtime,
      (runtime) => runtime?.cpu !== undefined && runtime.memory !== undefined,
      5000,
    )
    expect(measured).toMatchObject({
      cpu: { util: expect.any(Number) },
      memory: { util: expect.any(Number) },
    })
    const publicPort = running.runtime!.ports[0]!.public
    const first = (await (await fetch(`http://127.0.0.1:${publicPort}/`)).json()) as {
      env: Record<string, string>
      kept: string
    }
    expect(first.env).toMatchObject({
      GREETING: 'hello',
      RUNPOD_POD_ID: pod.id,
      RUNPOD_DC_ID: 'EU-RO-1',
      RUNPOD_GPU_COUNT: '2',
      RUNPOD_PUBLIC_IP: '127.0.0.1',
      RUNPOD_TCP_PORT_8080: String(publicPort),
      CUDA_VISIBLE_DEVICES: '0,1',
      NVIDIA_VISIBLE_DEVICES: '0,1',
    })
    expect(Number(first.env.RUNPOD_CPU_COUNT)).toBeGreaterThan(0)
    expect(first.kept).toBe('first\n')

    const stopped = conforming((await (await act(pod.id, 'stop')).json()) as PodJson)
    expect(stopped).toMatchObject({
      status: 'EXITED',
      cost: 0,
      actions: ['start', 'terminate'],
      runtime: null,
    })
    expect(await availability(RTX_5090)).toBe('HIGH')
    await expect
      .poll(
        () =>
          fetch(`http://127.0.0.1:${publicPort}/`).then(
            () => 'up',
            () => 'gone',
          ),
        { timeout: 15_000 },
      )
      .toBe('gone')
    expect((await problem(await act(pod.id, 'restart'), 409)).detail).toMatch(
      /cannot restart pod .* while it is EXITED/,
    )

    const started = conforming((await (await act(pod.id, 'start')).json()) as PodJson)
    expect(started.status).toBe('PROVISIONING')
    const again = await waitFor(pod.id, 'RUNNING')
    const second = (await (
      await fetch(`http://127.0.0.1:${again.runtime!.ports[0]!.public}/`)
    ).json()) as {
      kept: string
      disk: string[]
    }
    expect(second.kept).toBe('first\nagain\n')
    expect(second.disk).toEqual(['on-container-disk'])

    expect((await terminate(pod.id)).status).toBe(204)
    const gone = await getPod(pod.id)
    expect(gone).toMatchObject({ status: 'TERMINATED', actions: [], cost: 0 })
    expect((await problem(await act(pod.id, 'start'), 409)).detail).toMatch(
      /while it is TERMINATED/,
    )
    expect(await availability(RTX_5090)).toBe('HIGH')
  })

  it('starts a stopped pod on its own host, and says what is missing when that host is full', async () => {
    const pinned = await created({
      name: 'pinned',
      gpu: { id: RTX_5090, count: 1 },
      mounts: { persistent: { size: 20, path: '/workspace' } },
    })
    await waitFor(pinned.id, 'RUNNING')
    expect((await act(pinned.id, 'stop')).status).toBe(200)
    const squatter = await created({ name: 'squatter', gpu: { id: RTX_5090, count: 2 } })
    const refused = await problem(await act(pinned.id, 'start'), 409)
    expect(refused.detail).toBe(
      "host eu-ro-1-rtx5090-1 (where the pod's persistent volume lives) has no free NVIDIA GeForce RTX 5090",
    )
    expect((await getPod(pinned.id)).status).toBe('EXITED')
    await terminate(squatter.id)
    const started = (await (await act(pinned.id, 'start')).json()) as PodJson
    expect(started).toMatchObject({ status: 'PROVISIONING', dataCenterId: 'EU-RO-1' })
    await waitFor(pinned.id, 'RUNNING')
    await terminate(pinned.id)
  })

  it('keeps a locked pod from stopping and resetting', async () => {
    const pod = await created({ cpu: { id: 'cpu3c', vcpuCount: 2 } })
    const locked = (await (
      await platform.call(`/v2/pods/${pod.id}`, { method: 'PATCH', json: { locked: true } })
    ).json()) as PodJson
    expect(locked.locked).toBe(true)
    await waitFor(pod.id, 'RUNNING')
    for (const action of ['stop', 'reset']) {
      expect((await problem(await act(pod.id, action), 409)).detail).toBe(
        `pod ${pod.id} is locked: set "locked": false before you ${action} it`,
      )
    }
    expect((await terminate(pod.id)).status).toBe(204)
  })

  it('restarts a crashing process, then leaves it in ERROR with the reason; a clean exit is EXITED', async () => {
    const crashing = await created({
      cpu: { id: 'cpu3c', vcpuCount: 2 },
      args: 'sleep 2.5; exit 3',
    })
    const errored = await waitFor(crashing.id, 'ERROR', 40_000)
    expect(errored.statusReason).toBe('the process exited with code 3 after 3 restarts')
    expect(errored.cost).toBe(0)
    const clean = await created({ cpu: { id: 'cpu3c', vcpuCount: 2 }, args: 'sleep 2.5; exit 0' })
    expect((await waitFor(clean.id, 'EXITED')).statusReason).toBe('the process exited with code 0')
    const quick = await created({ cpu: { id: 'cpu3c', vcpuCount: 2 }, args: 'exit 7' })
    expect((await waitFor(quick.id, 'ERROR')).statusReason).toBe(
      'the process exited with code 7 while starting',
    )
    const restarted = (await (await act(quick.id, 'start')).json()) as PodJson
    expect(restarted).toMatchObject({
      status: 'PROVISIONING',
      statusReason: null,
      actions: ['start', 'terminate'],
    })
    expect(restarted.cost).toBeGreaterThan(0)
    for (const pod of [crashing, clean, quick]) await terminate(pod.id)
  })

  it('PATCH changes names and locks in place, restarts on container changes, and keeps mount rules', async () => {
    const pod = await created({
      gpu: { id: RTX_4090 },
      mounts: { persistent: { size: 20, path: '/workspace' } },
    })
    const first = await waitFor(pod.id, 'RUNNING')
    const renamed = (await (
      await platform.call(`/v2/pods/${pod.id}`, { method: 'PATCH', json: { name: 'renamed' } })
    ).json()) as PodJson
    expect(conforming(renamed)).toMatchObject({ name: 'renamed', status: 'RUNNING' })
    const patch = (json: unknown) => platform.call(`/v2/pods/${pod.id}`, { method: 'PATCH', json })
    expect((await problem(await patch({ mounts: { network: [] } }), 400)).detail).toMatch(
      /cannot be emptied/,
    )
    expect(
      (await problem(await patch({ mounts: { network: [{ volumeId: 'v', path: '/d' }] } }), 400))
        .detail,
    ).toMatch(/network cannot be added/)
    expect(
      (
        await problem(
          await patch({ mounts: { persistent: { size: 10, path: '/workspace' } } }),
          400,
        )
      ).detail,
    ).toMatch(/cannot shrink/)
    expect(
      (await problem(await patch({ mounts: { persistent: { size: 20 } } }), 422)).errors,
    ).toContain('body.mounts.persistent.path: is required')
    const unchanged = (await (await patch({ mounts: {} })).json()) as PodJson
    expect(unchanged.mounts).toEqual({ persistent: { size: 20, path: '/workspace' } })
    const restarted = (await (
      await patch({ env: { MODE: 'new' }, mounts: { persistent: { size: 20, path: '/data' } } })
    ).json()) as PodJson
    expect(restarted.status).toBe('PROVISIONING')
    expect(restarted.mounts).toEqual({ persistent: { size: 20, path: '/data' } })
    const second = await waitFor(pod.id, 'RUNNING')
    expect(second.startedAt).not.toBe(first.startedAt)
    await terminate(pod.id)
  })

  it('streams the container output and lifecycle events as server-sent events', async () => {
    const pod = await created({
      cpu: { id: 'cpu3c', vcpuCount: 2 },
      args: 'for i in 1 2 3 4 5; do echo line-$i; done; echo oops >&2; sleep 300',
    })
    await waitFor(pod.id, 'RUNNING')
    await expect
      .poll(async () =>
        (await (await platform.call(`/v2/pods/${pod.id}/logs?follow=false`)).text()).includes(
          'oops',
        ),
      )
      .toBe(true)
    const response = await platform.call(
      `/v2/pods/${pod.id}/logs?follow=false&tail=3&source=container`,
    )
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/)
    const text = await response.text()
    const events = text
      .trim()
      .split('\n\n')
      .map((block) => {
        const [idLine, dataLine] = block.split('\n')
        return {
          id: idLine!.slice(4),
          data: JSON.parse(dataLine!.slice(6)) as { ts: string; source: string; line: string },
        }
      })
    expect(events.map((e) => e.data.line)).toEqual(['line-4', 'line-5', 'oops'])
    expect(events[0]!.id).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z\/\d+$/)
    expect(events[0]!.data.source).toBe('container')

    const resumed = await platform.call(`/v2/pods/${pod.id}/logs?follow=false&source=container`, {
      headers: { 'last-event-id': events[1]!.id },
    })
    expect(await resumed.text()).toMatch(/^id: .*\ndata: .*"line":"oops"/)

    const system = await (
      await platform.call(`/v2/pods/${pod.id}/logs?follow=false&source=system`)
    ).text()
    expect(system).toContain('"source":"system"')
    expect(system).toMatch(/created; placed on host/)
    expect(system).toMatch(/"line":"RUNNING"/)

    const follow = new AbortController()
    const streaming = await platform.call(`/v2/pods/${pod.id}/logs?tail=0`, {
      signal: follow.signal,
    })
    const reader = streaming.body!.getReader()
    const firstChunk = reader.read()
    await platform.call(`/v2/pods/${pod.id}`, { method: 'DELETE' })
    follow.abort()
    await firstChunk.catch(() => undefined)
    expect(
      (await problem(await platform.call(`/v2/pods/${pod.id}/logs?source=fish`), 422)).errors?.[0],
    ).toMatch(/^querystring\.source/)
  })

  it('follows the container log of a pod that is still being placed, from its first line', async () => {
    const pod = await created({
      cpu: { id: 'cpu3c', vcpuCount: 2 },
      args: 'echo first-line; sleep 300',
    })
    // Right after the create the pod has no workload yet; following waits for it.
    expect((await getPod(pod.id)).status).toBe('PROVISIONING')
    const follow = new AbortController()
    const streaming = await platform.call(`/v2/pods/${pod.id}/logs?source=container`, {
      signal: follow.signal,
    })
    expect(streaming.status).toBe(200)
    const reader = streaming.body!.pipeThrough(new TextDecoderStream()).getReader()
    let text = ''
    try {
      while (!text.includes('first-line')) {
        const { done, value } = await reader.read()
        if (done) break
        text += value
      }
    } finally {
      follow.abort()
    }
    expect(text).toContain('"line":"first-line"')
    await terminate(pod.id)
  })

  it('resumes a following log stream after Last-Event-ID with each later line once', async () => {
    const pod = await created({
      cpu: { id: 'cpu3c', vcpuCount: 2 },
      args: 'for i in 1 2 3 4 5; do echo line-$i; done; sleep 300',
    })
    await waitFor(pod.id, 'RUNNING')
    const ids = async () =>
      [
        ...(
          await (
            await platform.call(`/v2/pods/${pod.id}/logs?follow=false&source=container`)
          ).text()
        ).matchAll(/^id: (.+)$/gm),
      ].map((match) => match[1]!)
    await expect.poll(async () => (await ids()).length).toBe(5)
    const afterSecond = (await ids())[1]!

    // A client that lost its stream after line-2 and reconnects, as EventSource does.
    const follow = new AbortController()
    const resumed = await platform.call(`/v2/pods/${pod.id}/logs?source=container`, {
      headers: { 'last-event-id': afterSecond },
      signal: follow.signal,
    })
    const reader = resumed.body!.pipeThrough(new TextDecoderStream()).getReader()
    let text = ''
    const lines = () => [...text.matchAll(/"line":"([^"]+)"/g)].map((match) => match[1])
    // The process prints nothing more: what comes within a second of line-5 is all there is.
    const deadline = { at: Infinity }
    while (Date.now() < deadline.at) {
      const chunk = await Promise.race([
        reader.read(),
        new Promise<undefined>((resolve) => setTimeout(resolve, 250)),
      ])
      if (chunk?.value) text += chunk.value
      if (deadline.at === Infinity && lines().includes('line-5')) deadline.at = Date.now() + 1000
    }
    follow.abort()
    expect(lines()).toEqual(['line-3', 'line-4', 'line-5'])
    await platform.call(`/v2/pods/${pod.id}`, { method: 'DELETE' })
  })
})

describe('TERMINATED pods', () => {
  it('stay readable for 24 hours, then are forgotten', async () => {
    const clock = new ManualClock('2026-06-01T00:00:00.000Z')
    const platform = await startTestPlatform({}, { clock })
    try {
      const response = await platform.call('/v2/pods', {
        method: 'POST',
        json: { name: 'short', image: 'x', cpu: { id: 'cpu3c', vcpuCount: 2 } },
      })
      const { id } = (await response.json()) as { id: string }
      expect((await platform.call(`/v2/pods/${id}`, { method: 'DELETE' })).status).toBe(204)
      clock.advance(24 * 3600 * 1000 - 1000)
      await platform.lifecycle.tick()
      expect((await platform.call(`/v2/pods/${id}`)).status).toBe(200)
      clock.advance(2000)
      await platform.lifecycle.tick()
      expect((await platform.call(`/v2/pods/${id}`)).status).toBe(404)
    } finally {
      await platform.close()
    }
  })
})
