import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadFleet } from '../../src/wiring/fleet-wiring.js'
import { EU_SE_1, fleetYaml, gpuHost } from '../support/fleet-yaml.js'
import { startTestPlatform, type TestPlatform } from '../support/platform.js'

const FLEET = fleetYaml({
  dataCenters: [{ ...EU_SE_1, globalNetwork: true, networkVolumeTypes: ['STANDARD'] }],
  hosts: [gpuHost('se-l4-1', 'NVIDIA L4', 2, { cudaVersion: 12.4, vcpus: 16, memoryGb: 64 })],
})

describe('a fleet file', () => {
  let platform: TestPlatform

  beforeAll(async () => {
    platform = await startTestPlatform({}, { fleetYaml: FLEET })
    const bad = FLEET.replace('NVIDIA L4', 'RTX 9999')
    writeFileSync(path.join(platform.dataDir, 'bad.yaml'), bad)
  })
  afterAll(async () => {
    await platform.close()
  })

  it('is what the catalog serves', async () => {
    const { gpus } = (await (await platform.call('/v2/catalog/gpus')).json()) as {
      gpus: Array<{ id: string }>
    }
    expect(gpus.map((g) => g.id)).toEqual(['NVIDIA L4'])
    const { dataCenters } = (await (await platform.call('/v2/catalog/datacenters')).json()) as {
      dataCenters: Array<{ id: string }>
    }
    expect(dataCenters.map((d) => d.id)).toEqual(['EU-SE-1'])
  })

  it('is refused with the failing path named', async () => {
    await expect(loadFleet(path.join(platform.dataDir, 'bad.yaml'))).rejects.toThrow(
      /hosts\[0\]\.gpu\.typeId: unknown GPU type "RTX 9999"/,
    )
  })
})
