import { execFileSync } from 'node:child_process'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findGpuType } from '../../src/domain/catalog/gpu-types.js'
import { repoRoot } from '../support/cli.js'
import { json } from '../support/http.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'
import { until } from '../support/until.js'

/**
 * The GPU suite (docs/gpus.md, "The GPU suite"): on a machine with an NVIDIA GPU and
 * nvidia-smi, PODYARD_TEST_GPU=1 runs podyard's process driver on the real GPU as a member
 * account: discovery with the catalog type, a pod that sees exactly its GPU, utilisation from
 * the sampler under a PyTorch matmul loop, a serverless endpoint doing 20 GPU jobs, a second
 * GPU pod refused on a one-GPU host, and the /metrics gauges. Elsewhere it is skipped and says
 * why. test/support/gpu-device-run.sh runs it on a machine without Node.js.
 */
function gpuMachine(): { names: string[]; uuids: string[] } | { reason: string } {
  if (process.env.PODYARD_TEST_GPU !== '1') return { reason: 'PODYARD_TEST_GPU=1 is not set' }
  try {
    const rows = execFileSync('nvidia-smi', ['--query-gpu=name,uuid', '--format=csv,noheader'], {
      encoding: 'utf8',
      timeout: 10_000,
    })
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => l.split(',').map((f) => f.trim()))
    if (rows.length === 0) return { reason: 'nvidia-smi lists no GPU' }
    return { names: rows.map((r) => r[0]!), uuids: rows.map((r) => r[1]!) }
  } catch (error) {
    return { reason: `no NVIDIA GPU here (nvidia-smi: ${(error as Error).message.split('\n')[0]})` }
  }
}

function torchWorks(): string | undefined {
  try {
    execFileSync('python3', ['-c', 'import torch; assert torch.cuda.is_available()'], {
      timeout: 120_000,
      stdio: 'pipe',
    })
    return undefined
  } catch (error) {
    return `python3 with CUDA-enabled torch is not usable here: ${(error as Error).message.split('\n')[0]}`
  }
}

const machine = gpuMachine()
if ('reason' in machine) console.log(`GPU suite skipped: ${machine.reason}`)
const noTorch = 'names' in machine ? torchWorks() : 'no GPU'
if ('names' in machine && noTorch)
  console.log(`GPU suite: the PyTorch points are skipped: ${noTorch}`)

interface PodJson {
  id: string
  status: string
  runtime: { gpus: Array<{ util: number; memoryUtil: number }> } | null
}

describe.runIf('names' in machine)('the GPU suite, on a real NVIDIA GPU', () => {
  const names = 'names' in machine ? machine.names : []
  const uuids = 'uuids' in machine ? machine.uuids : []
  let platform: TestPlatform
  let member: string
  let typeId: string

  const pod = async (id: string) =>
    json<PodJson>(await platform.call(`/v2/pods/${id}`, { key: member }))
  const createPod = async (name: string, args: string, expected = 201) =>
    json<PodJson & { detail?: string }>(
      await platform.call('/v2/pods', {
        method: 'POST',
        key: member,
        json: { name, image: 'ubuntu', gpu: { id: typeId, count: 1 }, disk: 1, args },
      }),
      expected,
    )
  const terminate = async (id: string) =>
    expect((await platform.call(`/v2/pods/${id}`, { method: 'DELETE', key: member })).status).toBe(
      204,
    )
  const logs = async (id: string) =>
    (
      await platform.call(`/v2/pods/${id}/logs?follow=false&source=container`, { key: member })
    ).text()

  beforeAll(async () => {
    // The device machine runs as root without bubblewrap or pasta: no sandbox, the host's network.
    platform = await startTestPlatform({
      fleet: 'none',
      sandbox: 'none',
      podNetwork: 'host',
      workers: { intervalMs: 200, startTimeoutMs: 120_000 },
    })
    member = await otherAccountKey(platform, 'gpu-suite@example.com')
  }, 120_000)

  afterAll(async () => {
    await platform?.closeWithWorkloads()
  })

  it('(1) discovers the local GPU with its catalog type, not a raw name', async () => {
    const host = await json<{ gpu: { typeId: string; count: number } | null }>(
      await platform.call('/v2/admin/hosts/local'),
    )
    expect(host.gpu, `nvidia-smi says ${names.join(', ')}`).not.toBeNull()
    typeId = host.gpu!.typeId
    expect(findGpuType(typeId), `${typeId} is a catalog id`).toBeDefined()
    if (/H100/.test(names[0]!)) expect(typeId).toMatch(/^NVIDIA H100/)
    if (/H200/.test(names[0]!)) expect(typeId).toMatch(/^NVIDIA H200/)
    console.log(`GPU suite: ${names[0]} is ${typeId}, ${host.gpu!.count} of them`)
  })

  it('(2) a GPU pod running nvidia-smi -L sees exactly its GPU', async () => {
    const created = await createPod('smi', 'nvidia-smi -L; exec sleep 600')
    const text = await until(
      'nvidia-smi -L output',
      () => logs(created.id),
      (t) => t.includes('UUID'),
      60_000,
    )
    const listed = text.split('\n').filter((l) => /GPU \d+: .*\(UUID: /.test(l))
    expect(listed).toHaveLength(1)
    const host = await json<{ gpus: Array<{ index: number; uuid: string }> }>(
      await platform.call('/v2/admin/hosts/local'),
    )
    // Its one GPU is the one placement gave it (index 0 on a free host).
    expect(listed[0]).toContain(host.gpus.find((g) => g.index === 0)?.uuid ?? uuids[0]!)
    await terminate(created.id)
  })

  it.runIf(!noTorch)(
    '(3) shows util above 50 within 10 s of a matmul loop, near 0 within 10 s after',
    async () => {
      const loop = [
        'import torch, time, sys',
        'a = torch.randn(8192, 8192, device="cuda")',
        '(a @ a).sum().item()',
        'print("matmul started", flush=True)',
        'end = time.time() + 25',
        'while time.time() < end:',
        '    b = a @ a',
        '    torch.cuda.synchronize()',
        'print("matmul stopped", flush=True)',
      ].join('\n')
      const created = await createPod('matmul', `python3 -c '${loop}'; exec sleep 600`)
      await until(
        'the loop runs',
        () => logs(created.id),
        (t) => t.includes('matmul started'),
        120_000,
      )
      const started = Date.now()
      const busy = await until(
        'util above 50',
        () => pod(created.id),
        (p) => (p.runtime?.gpus[0]?.util ?? 0) > 50,
        10_000,
      )
      console.log(
        `GPU suite: util ${busy.runtime!.gpus[0]!.util} % after ${Date.now() - started} ms`,
      )
      await until(
        'the loop ends',
        () => logs(created.id),
        (t) => t.includes('matmul stopped'),
        60_000,
      )
      const stopped = Date.now()
      const idle = await until(
        'util near 0',
        () => pod(created.id),
        (p) => (p.runtime?.gpus[0]?.util ?? 100) < 10,
        10_000,
      )
      console.log(
        `GPU suite: util ${idle.runtime!.gpus[0]!.util} % ${Date.now() - stopped} ms after`,
      )
      await terminate(created.id)
    },
    240_000,
  )

  it.runIf(!noTorch)(
    "(4) a serverless endpoint completes 20 GPU jobs, each on its worker's GPU",
    async () => {
      const pool = findGpuType(typeId)?.pool
      expect(pool, `${typeId} is offered for serverless`).toBeTruthy()
      const worker = path.join(repoRoot, 'test', 'fixtures', 'gpu-matmul-worker.mjs')
      const created = await json<{ id: string }>(
        await platform.call('/v2/serverless', {
          method: 'POST',
          key: member,
          json: {
            name: 'gpu-matmul',
            image: 'podyard/gpu-matmul',
            args: `${process.execPath} ${worker}`,
            disk: 1,
            gpu: { pools: [pool], count: 1 },
            workers: { min: 0, max: 1 },
          },
        }),
        201,
      )
      const jobs: string[] = []
      for (let n = 0; n < 20; n++) {
        const run = await json<{ id: string }>(
          await platform.call(`/v2/${created.id}/run`, {
            method: 'POST',
            key: member,
            json: { input: { n } },
          }),
        )
        jobs.push(run.id)
      }
      for (const jobId of jobs) {
        const done = await until(
          `job ${jobId}`,
          async () =>
            json<{ status: string; output?: Record<string, unknown> }>(
              await platform.call(`/v2/${created.id}/status/${jobId}`, { key: member }),
            ),
          (j) => j.status === 'COMPLETED' || j.status === 'FAILED',
          180_000,
        )
        expect(done.status, JSON.stringify(done)).toBe('COMPLETED')
        // 1024 x 1024 ones squared: every entry 1024, summed.
        expect(done.output).toMatchObject({ devices: 1, sum: 1024 ** 3, cudaVisibleDevices: '0' })
      }
      expect(
        (await platform.call(`/v2/serverless/${created.id}`, { method: 'DELETE', key: member }))
          .status,
      ).toBeLessThan(300)
    },
    600_000,
  )

  it('(5) on a one-GPU host a second GPU pod is refused with 409 while the first runs', async () => {
    if (names.length !== 1)
      return console.log(`GPU suite: (5) needs a one-GPU host, this has ${names.length}`)
    const first = await createPod('first', 'exec sleep 600')
    await until(
      'the first runs',
      () => pod(first.id),
      (p) => p.status === 'RUNNING',
      60_000,
    )
    const refused = await createPod('second', 'exec sleep 600', 409)
    expect(refused.detail).toMatch(new RegExp(`no host has 1 free ${typeId}`))
    await terminate(first.id)
  }, 120_000)

  it('(6) /metrics has the GPU gauges', async () => {
    const metrics = await (await platform.call('/metrics')).text()
    const labels = `host="local",index="0",type="${typeId}"`
    for (const name of [
      'podyard_gpu_utilization_percent',
      'podyard_gpu_memory_used_percent',
      'podyard_gpu_temperature_celsius',
      'podyard_gpu_healthy',
    ])
      expect(metrics).toMatch(
        new RegExp(`^${name}\\{${labels.replace(/[.()]/g, '\\$&')}\\} \\d`, 'm'),
      )
  })
})
