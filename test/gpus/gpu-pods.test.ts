import { execFileSync } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import Docker from 'dockerode'
import { json } from '../support/http.js'
import { startTestPlatform, type TestPlatform } from '../support/platform.js'

/**
 * The real GPU path (docs/fleet.md, "Adding a GPU machine"): on a machine with NVIDIA GPUs and
 * the NVIDIA container toolkit, GPU pods on the docker driver run `nvidia-smi` and see exactly
 * the GPUs placement gave them, by UUID. Needs PODYARD_TEST_DOCKER=1, an engine with the
 * `nvidia` runtime and `nvidia-smi` on this machine; skipped otherwise, with the reason printed.
 * The image (default nvidia/cuda base) must be present or pullable: PODYARD_TEST_GPU_IMAGE.
 */
const IMAGE = process.env.PODYARD_TEST_GPU_IMAGE ?? 'nvidia/cuda:12.4.1-base-ubuntu22.04'

/** UUIDs of this machine's GPUs by index, or why GPU pods cannot be tried here. */
async function gpuMachine(): Promise<{ uuids: string[] } | { reason: string }> {
  if (process.env.PODYARD_TEST_DOCKER !== '1') return { reason: 'PODYARD_TEST_DOCKER=1 is not set' }
  let uuids: string[]
  try {
    uuids = execFileSync('nvidia-smi', ['--query-gpu=uuid', '--format=csv,noheader'], {
      encoding: 'utf8',
      timeout: 10_000,
    })
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean)
  } catch (error) {
    return { reason: `no NVIDIA GPU here (nvidia-smi: ${(error as Error).message.split('\n')[0]})` }
  }
  if (uuids.length === 0) return { reason: 'nvidia-smi lists no GPU' }
  try {
    const info = (await new Docker().info()) as { Runtimes?: Record<string, unknown> }
    if (!info.Runtimes?.nvidia)
      return { reason: 'the Docker engine has no nvidia runtime (NVIDIA container toolkit)' }
  } catch (error) {
    return { reason: `the Docker engine does not answer: ${(error as Error).message}` }
  }
  return { uuids }
}

const machine = await gpuMachine()
if ('reason' in machine) console.log(`GPU pod tests skipped: ${machine.reason}`)

describe.runIf('uuids' in machine)('GPU pods on the docker driver', () => {
  const uuids = 'uuids' in machine ? machine.uuids : []
  let platform: TestPlatform
  let gpuType: string

  beforeAll(async () => {
    platform = await startTestPlatform({ fleet: 'none', driver: 'docker' })
    const { gpus } = await json<{ gpus: Array<{ id: string }> }>(
      await platform.call('/v2/catalog/gpus'),
    )
    gpuType = gpus[0]!.id
  }, 60_000)

  afterAll(async () => {
    await platform?.close()
  })

  it('runs nvidia-smi in each pod, which sees exactly the GPUs it was given', async () => {
    const count = Math.min(2, uuids.length)
    const pods: string[] = []
    for (let i = 0; i < count; i++) {
      const pod = await json<{ id: string }>(
        await platform.call('/v2/pods', {
          method: 'POST',
          json: {
            name: `gpu-${i}`,
            image: IMAGE,
            gpu: { id: gpuType, count: 1 },
            args: 'nvidia-smi --query-gpu=uuid --format=csv,noheader; exec sleep infinity',
          },
        }),
        201,
      )
      pods.push(pod.id)
    }
    for (const [i, id] of pods.entries()) {
      // Placement gives each pod the lowest free device: the first GPU 0, the second GPU 1.
      await expect
        .poll(
          async () => {
            const logs = await (
              await platform.call(`/v2/pods/${id}/logs?source=container&follow=false`)
            ).text()
            return uuids.filter((uuid) => logs.includes(uuid))
          },
          { timeout: 120_000, interval: 500 },
        )
        .toEqual([uuids[i]])
    }
  }, 180_000)
})
