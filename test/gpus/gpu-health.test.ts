import { rmSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../support/cli.js'
import { fakeNvidiaSmi, type FakeNvidiaSmi } from '../support/fake-nvidia-smi.js'
import { json } from '../support/http.js'
import {
  otherAccountKey,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type TestPlatform,
} from '../support/platform.js'
import { until } from '../support/until.js'

/**
 * GPU readings and health over HTTP on a machine without a GPU: a stand-in nvidia-smi on PATH
 * (test/support/fake-nvidia-smi.ts) prints readings in NVIDIA's documented shapes; everything
 * else is the platform's own: discovery, the long-lived sampler process and its restarts, the
 * health rules, placement, the pod's runtime, /metrics, the admin routes and the CLI. The real
 * GPU suite is test/gpus/gpu.test.ts (PODYARD_TEST_GPU=1).
 */
const H100 = 'NVIDIA H100 80GB HBM3'
const UUID = [
  'GPU-5d9a3f4e-8f1c-2b7d-9a64-0c3e1f2a7b10',
  'GPU-b2c8e0d1-44a9-7c13-e5f2-9d0a6b3c8e21',
]

/** One --query-gpu line of the sampler in its field order (GPU_QUERY_FIELDS). */
function line(
  index: number,
  util: number,
  usedMib: number,
  ecc = 0,
  throttle = '0x0000000000000001',
): string {
  const bus = index === 0 ? '00000000:19:00.0' : '00000000:3B:00.0'
  return `${index}, ${UUID[index]}, ${bus}, ${util}, 20, ${usedMib}, 81559, 50, 300.5, ${throttle}, ${ecc}, No`
}

interface PodJson {
  id: string
  status: string
  statusReason?: string | null
  runtime: { gpus: Array<{ util: number; memoryUtil: number }> } | null
}

interface GpuJson {
  index: number
  health: string
  reason: string | null
  warnings: string[]
  utilPercent: number | null
}

interface HostJson {
  id: string
  state: string
  stateReason: string | null
  gpu: { typeId: string; count: number } | null
  gpus: GpuJson[]
}

describe('GPU readings and health, with a stand-in nvidia-smi', () => {
  let platform: TestPlatform
  let smi: FakeNvidiaSmi
  let member: string
  const savedPath = process.env.PATH

  const host = async () => json<HostJson>(await platform.call('/v2/admin/hosts/local'))
  const pod = async (id: string) =>
    json<PodJson>(await platform.call(`/v2/pods/${id}`, { key: member }))
  const createGpuPod = (name: string) =>
    platform.call('/v2/pods', {
      method: 'POST',
      key: member,
      json: { name, image: 'ubuntu', gpu: { id: H100, count: 1 }, disk: 1, args: 'sleep 600' },
    })

  /** The pod's GPUs as GraphQL names them (`<host>-<index>`), none until it runs. */
  const gpuIdsOf = async (id: string) => {
    const body = await json<{ data: { pod: { runtime: { gpus: Array<{ id: string }> } | null } } }>(
      await platform.call('/graphql', {
        method: 'POST',
        key: member,
        json: { query: `{ pod(input: { podId: "${id}" }) { runtime { gpus { id } } } }` },
      }),
    )
    return body.data.pod.runtime?.gpus.map((g) => g.id) ?? []
  }

  beforeAll(async () => {
    smi = fakeNvidiaSmi([H100, H100])
    smi.setQuery(`${line(0, 97, 40211)}\n${line(1, 0, 1)}\n`)
    // Discovery and the sampler find nvidia-smi on PATH, as on a GPU machine.
    process.env.PATH = smi.path
    platform = await startTestPlatform({ fleet: 'none', sandbox: 'none' })
    member = await otherAccountKey(platform, 'gpu-health@example.com')
  }, 60_000)

  afterAll(async () => {
    process.env.PATH = savedPath
    await platform?.close()
    rmSync(smi.dir, { recursive: true, force: true })
  })

  it('discovers the GPUs and shows each reading on the host', async () => {
    const local = await until('both GPUs read', host, (h) => h.gpus.length === 2)
    expect(local.gpu).toEqual({ typeId: H100, count: 2, cudaVersion: '12.4' })
    expect(local.state).toBe('UP')
    expect(local.gpus[0]).toMatchObject({
      index: 0,
      health: 'HEALTHY',
      utilPercent: 97,
      warnings: [],
    })
  })

  let first: string
  it("shows a pod's GPU use from the sampler in REST, GraphQL and /metrics", async () => {
    first = (await json<PodJson>(await createGpuPod('gpu-a'), 201)).id
    const running = await until(
      'the pod runs with its GPU read',
      () => pod(first),
      (p) => (p.runtime?.gpus[0]?.util ?? 0) > 0,
    )
    // 40211 of 81559 MiB in use: 49 %.
    expect(running.runtime!.gpus).toEqual([{ util: 97, memoryUtil: 49 }])

    const graphql = await json<{ data: { pod: { runtime: { gpus: unknown[] } } } }>(
      await platform.call('/graphql', {
        method: 'POST',
        key: member,
        json: {
          query: `{ pod(input: { podId: "${first}" }) { runtime { gpus { id gpuUtilPercent memoryUtilPercent } } } }`,
        },
      }),
    )
    expect(graphql.data.pod.runtime.gpus).toEqual([
      { id: 'local-0', gpuUtilPercent: 97, memoryUtilPercent: 49 },
    ])

    const metrics = await (await platform.call('/metrics')).text()
    expect(metrics).toContain(
      `podyard_gpu_utilization_percent{host="local",index="0",type="${H100}"} 97`,
    )
    expect(metrics).toContain(
      `podyard_gpu_memory_used_percent{host="local",index="1",type="${H100}"} 0`,
    )
    expect(metrics).toContain(`podyard_gpu_healthy{host="local",index="0",type="${H100}"} 1`)
    expect(metrics).toContain(`podyard_gpu_assigned{host="local",index="0",pod="${first}"} 1`)
    // The pod id is on the assignment only.
    expect(
      metrics.split('\n').filter((l) => l.includes(first) && !l.startsWith('podyard_gpu_assigned')),
    ).toEqual([])
  })

  it('restarts the sampler when it dies', async () => {
    const [pid] = smi.samplerPids()
    expect(pid).toBeGreaterThan(0)
    process.kill(pid!, 'SIGKILL')
    await until(
      'a new sampler',
      async () => smi.samplerPids(),
      (pids) => pids.length >= 2,
      10_000,
    )
  })

  it('withdraws a GPU with uncorrectable ECC errors: pod told, host DEGRADED, no new pod on it', async () => {
    smi.setQuery(`${line(0, 97, 40211, 2)}\n${line(1, 0, 1, 0, '0x0000000000000040')}\n`)
    const degraded = await until('host DEGRADED', host, (h) => h.state === 'DEGRADED')
    expect(degraded.stateReason).toBe('GPU 0 withdrawn: 2 uncorrectable ECC errors')
    expect(degraded.gpus[0]).toMatchObject({
      health: 'WITHDRAWN',
      reason: '2 uncorrectable ECC errors',
    })
    // Thermal throttling is a warning: GPU 1 still takes pods.
    expect(degraded.gpus[1]).toMatchObject({
      health: 'HEALTHY',
      warnings: ['throttling: hardware thermal slowdown'],
    })

    const told = await until(
      'the pod is told',
      () => pod(first),
      (p) => Boolean(p.statusReason),
    )
    expect(told.statusReason).toBe('GPU 0 of host local withdrawn: 2 uncorrectable ECC errors')
    expect(told.status).toBe('RUNNING')
    const log = await (
      await platform.call(`/v2/pods/${first}/logs?follow=false&source=system`, { key: member })
    ).text()
    expect(log).toContain('GPU 0 of host local withdrawn: 2 uncorrectable ECC errors')

    const cli = await runCli([
      'hosts',
      'get',
      'local',
      '--url',
      platform.url,
      '--api-key',
      TEST_ADMIN_KEY,
    ])
    expect(cli.stdout).toMatch(
      /state\s+DEGRADED since .*: GPU 0 withdrawn: 2 uncorrectable ECC errors/,
    )
    expect(cli.stdout).toMatch(/gpu 0\s+WITHDRAWN: 2 uncorrectable ECC errors/)
    expect(cli.stdout).toContain('podyard hosts gpu-reset local <index>')

    const metrics = await (await platform.call('/metrics')).text()
    expect(metrics).toContain(`podyard_gpu_healthy{host="local",index="0",type="${H100}"} 0`)
    expect(metrics).toMatch(/^podyard_hosts\{state="DEGRADED"\} 1$/m)

    // Its pod gone, GPU 0 is free but withdrawn: the next pod gets GPU 1, the one after none.
    expect(
      (await platform.call(`/v2/pods/${first}`, { method: 'DELETE', key: member })).status,
    ).toBe(204)
    const second = (await json<PodJson>(await createGpuPod('gpu-b'), 201)).id
    expect(
      await until(
        'second pod runs',
        () => gpuIdsOf(second),
        (ids) => ids.length > 0,
      ),
    ).toEqual(['local-1'])
    const refused = await json<{ detail: string }>(await createGpuPod('gpu-c'), 409)
    expect(refused.detail).toMatch(/no host has 1 free NVIDIA H100 80GB HBM3/)
    expect(
      (await platform.call(`/v2/pods/${second}`, { method: 'DELETE', key: member })).status,
    ).toBe(204)
  })

  it("puts the GPU back on the operator's reset, from the CLI; members may not", async () => {
    const forbidden = await platform.call('/v2/admin/hosts/local/gpus/0/reset', {
      method: 'POST',
      key: member,
    })
    expect(forbidden.status).toBe(403)
    const missing = await platform.call('/v2/admin/hosts/local/gpus/7/reset', { method: 'POST' })
    expect(missing.status).toBe(404)
    const reset = await runCli([
      'hosts',
      'gpu-reset',
      'local',
      '0',
      '--url',
      platform.url,
      '--api-key',
      TEST_ADMIN_KEY,
    ])
    expect(reset.stderr).toBe('')
    expect(reset.stdout).toMatch(
      /^GPU 0 of host local takes pods again; host is UP\ngpu 0\s+healthy/,
    )
    // Its two ECC errors are accepted; it stays healthy while no new one comes.
    await new Promise((resolve) => setTimeout(resolve, 600))
    expect((await host()).gpus[0]!.health).toBe('HEALTHY')
    expect(
      (await platform.call(`/v2/pods/${first}`, { method: 'DELETE', key: member })).status,
    ).toBe(204)
    await json(await createGpuPod('gpu-d'), 201)
  })
})
