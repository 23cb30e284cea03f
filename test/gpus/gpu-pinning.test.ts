import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fleetYaml, gpuHost } from '../support/fleet-yaml.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'

/**
 * Pinning stays exact (docs/fleet.md, "GPUs: declared and reported"): on a simulated host of
 * four GPUs under the process driver, each pod of a member account is told exactly the GPUs
 * placement gave it, CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES alike, no two pods share
 * one, and a pod asking for more than is free is refused.
 */
const FLEET = fleetYaml({
  hosts: [gpuHost('sim-a6000-4', 'NVIDIA RTX A6000', 4, { vcpus: 8, memoryGb: 8 })],
})

interface PodJson {
  id: string
  status: string
  statusReason: string | null
}

describe('GPU pinning on a simulated multi-GPU host', () => {
  let platform: TestPlatform
  let key: string
  const member = (p: string, init: Parameters<TestPlatform['call']>[1] = {}) =>
    platform.call(p, { ...init, key })

  beforeAll(async () => {
    platform = await startTestPlatform({}, { fleetYaml: FLEET })
    key = await otherAccountKey(platform, `pinning-${path.basename(platform.dataDir)}@example.com`)
  }, 60_000)

  afterAll(async () => {
    await platform?.close()
  })

  async function create(name: string, count: number): Promise<Response> {
    return member('/v2/pods', {
      method: 'POST',
      json: {
        name,
        image: 'ubuntu',
        gpu: { id: 'NVIDIA RTX A6000', count },
        args: 'echo "gpus=$CUDA_VISIBLE_DEVICES/$NVIDIA_VISIBLE_DEVICES"; exec sleep 600',
      },
    })
  }

  /** The GPU indices the pod's own process was told, both variables checked equal. */
  async function seen(id: string): Promise<number[]> {
    let line: string | undefined
    const deadline = Date.now() + 20_000
    while (line === undefined && Date.now() < deadline) {
      const text = await (await member(`/v2/pods/${id}/logs?follow=false`)).text()
      line = /gpus=([^"\\\n]*)/.exec(text)?.[1]
      if (line === undefined) await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(line, `pod ${id} printed its GPUs`).toBeDefined()
    const [cuda, nvidia] = line!.split('/')
    expect(cuda).toBe(nvidia)
    return cuda!.split(',').map(Number)
  }

  it('tells each pod exactly its GPUs, never one of another pod', async () => {
    const counts = [1, 2, 1]
    const pods: Array<{ id: string; count: number }> = []
    for (const [i, count] of counts.entries()) {
      const response = await create(`pinned-${i}`, count)
      expect(response.status, await response.clone().text()).toBe(201)
      pods.push({ id: ((await response.json()) as PodJson).id, count })
    }
    const assigned = new Map<string, number[]>()
    for (const pod of pods) {
      const gpus = await seen(pod.id)
      expect(gpus).toHaveLength(pod.count)
      assigned.set(pod.id, gpus)
    }
    const all = [...assigned.values()].flat().sort()
    expect(all).toEqual([0, 1, 2, 3])

    // The host is full: a fifth GPU is refused, not shared.
    const refused = await create('one-too-many', 1)
    expect(refused.status).toBe(409)

    // The two GPUs a terminated pod held go to the next pod, and only those.
    const twoGpuPod = pods[1]!
    expect((await member(`/v2/pods/${twoGpuPod.id}`, { method: 'DELETE' })).status).toBe(204)
    const next = await create('takes-the-freed', 2)
    expect(next.status).toBe(201)
    const freed = await seen(((await next.json()) as PodJson).id)
    expect(freed.sort()).toEqual([...assigned.get(twoGpuPod.id)!].sort())
  })
})
