import { rmSync } from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeNvidiaSmi, type FakeNvidiaSmi } from '../support/fake-nvidia-smi.js'
import { EU_SE_1, fleetYaml } from '../support/fleet-yaml.js'
import { json } from '../support/http.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'
import { until } from '../support/until.js'

/**
 * An instant cluster is placed as pods are: a GPU withdrawn for its health (docs/gpus.md) takes
 * no cluster pod either. A stand-in nvidia-smi on PATH plays two GPUs, one with ECC errors; the
 * platform is real, and the cluster is created over HTTP by a member account.
 */
const H100 = 'NVIDIA H100 80GB HBM3'

function line(index: number, ecc: number): string {
  const bus = index === 0 ? '00000000:19:00.0' : '00000000:3B:00.0'
  return `${index}, GPU-${index}, ${bus}, 10, 20, 100, 81559, 50, 300.5, 0x0000000000000001, ${ecc}, No`
}

const FLEET = fleetYaml({
  dataCenters: [{ ...EU_SE_1, globalNetwork: true }],
  localHost: { dataCenterId: EU_SE_1.id },
})

describe('an instant cluster and a withdrawn GPU', () => {
  let smi: FakeNvidiaSmi | undefined
  let platform: TestPlatform | undefined
  const savedPath = process.env.PATH

  afterEach(async () => {
    process.env.PATH = savedPath
    await platform?.close()
    if (smi) rmSync(smi.dir, { recursive: true, force: true })
  })

  it('places no cluster pod on a GPU withdrawn for its health', async () => {
    smi = fakeNvidiaSmi([H100, H100])
    smi.setQuery(`${line(0, 2)}\n${line(1, 0)}\n`)
    process.env.PATH = smi.path
    platform = await startTestPlatform({ sandbox: 'none' }, { fleetYaml: FLEET })
    const member = await otherAccountKey(platform, 'cluster-withdrawn@example.com')
    const call = platform.call
    await until(
      'GPU 0 withdrawn',
      async () => json<{ state: string }>(await call('/v2/admin/hosts/local')),
      (h) => h.state === 'DEGRADED',
    )
    const cluster = {
      method: 'POST',
      key: member,
      json: {
        name: 'on-health',
        type: 'TRAINING',
        image: 'ubuntu',
        args: 'sleep 600',
        disk: 1,
        compute: { gpuTypeId: H100, gpuCountPerPod: 1, podCount: 2 },
      },
    }
    const refused = await json<{ detail: string }>(await call('/v2/clusters', cluster), 409)
    expect(refused.detail).toMatch(/no data center can hold all 2 pods together/)
    expect(
      (
        await json<{ pods: unknown[] }>(
          await call('/v2/pods?includeClusterPods=true', { key: member }),
        )
      ).pods,
    ).toEqual([])

    // Once the operator resets the GPU, the same cluster fits.
    expect((await call('/v2/admin/hosts/local/gpus/0/reset', { method: 'POST' })).status).toBe(200)
    const created = await json<{ id: string }>(await call('/v2/clusters', cluster), 201)
    expect(
      (await call(`/v2/clusters/${created.id}`, { method: 'DELETE', key: member })).status,
    ).toBe(204)
  }, 90_000)
})
