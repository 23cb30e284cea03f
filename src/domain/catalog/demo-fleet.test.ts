import { describe, expect, it } from 'vitest'
import { BUILT_IN_FLEETS, demoFleet, noneFleet } from './demo-fleet.js'
import { findGpuType } from './gpu-types.js'

describe('demo fleet', () => {
  it('has real data centers with and without global networking', () => {
    expect(demoFleet.dataCenters.map((dc) => dc.id)).toEqual([
      'US-KS-2',
      'EU-RO-1',
      'CA-MTL-1',
      'EUR-IS-1',
    ])
    expect(demoFleet.dataCenters[0]).toMatchObject({
      name: 'US Kansas 2',
      region: 'NORTH_AMERICA',
      globalNetwork: true,
    })
    expect(demoFleet.dataCenters.filter((dc) => dc.globalNetwork).length).toBeGreaterThanOrEqual(1)
    expect(demoFleet.dataCenters.filter((dc) => !dc.globalNetwork).length).toBeGreaterThanOrEqual(1)
    expect(demoFleet.dataCenters.length).toBeGreaterThanOrEqual(3)
  })

  it('has simulated GPU hosts of at least eight types in both clouds', () => {
    const gpuHosts = demoFleet.hosts.filter((h) => h.gpu)
    expect(new Set(gpuHosts.map((h) => h.gpu?.typeId)).size).toBeGreaterThanOrEqual(8)
    expect(new Set(gpuHosts.map((h) => h.cloud))).toEqual(new Set(['SECURE', 'COMMUNITY']))
    expect(demoFleet.hosts.every((h) => h.simulated)).toBe(true)
    for (const host of gpuHosts) {
      const type = findGpuType(host.gpu!.typeId)!
      expect(type, host.id).toBeDefined()
      // AMD hosts carry no CUDA version; NVIDIA hosts always do.
      expect(host.gpu!.cudaVersion === null, host.id).toBe(type.manufacturer === 'AMD')
    }
  })

  it('has CPU-only hosts offering flavors of both generations', () => {
    const cpuHosts = demoFleet.hosts.filter((h) => !h.gpu)
    expect(cpuHosts.length).toBeGreaterThanOrEqual(3)
    expect(new Set(cpuHosts.flatMap((h) => h.cpuFlavors))).toEqual(
      new Set(['cpu3c', 'cpu3g', 'cpu3m', 'cpu5c', 'cpu5g', 'cpu5m']),
    )
  })

  it('puts the local host in US-KS-2', () => {
    expect(demoFleet.localHost).toMatchObject({ dataCenterId: 'US-KS-2', cloud: 'SECURE' })
  })
})

describe('none fleet', () => {
  it('is one local data center with no declared hosts', () => {
    expect(noneFleet.dataCenters).toEqual([
      {
        id: 'LOCAL-1',
        name: 'Local machine',
        region: 'UNKNOWN',
        globalNetwork: false,
        networkVolumeTypes: ['STANDARD'],
        compliance: [],
      },
    ])
    expect(noneFleet.hosts).toEqual([])
    expect(noneFleet.localHost).toMatchObject({ dataCenterId: 'LOCAL-1' })
    expect(BUILT_IN_FLEETS).toEqual({ demo: demoFleet, none: noneFleet })
  })
})
