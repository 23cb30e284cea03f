import { describe, expect, it } from 'vitest'
import {
  availabilityLevel,
  availableGpuCounts,
  canPlaceGpus,
  cpuAvailability,
  freeCapacity,
  gpuAvailability,
  gpuShare,
  LOW_AVAILABILITY_BELOW,
  MEDIUM_AVAILABILITY_BELOW,
  type Allocation,
} from './capacity.js'
import type { Host } from './fleet.js'

const H100 = 'NVIDIA H100 80GB HBM3'
const RTX4090 = 'NVIDIA GeForce RTX 4090'

function gpuHost(id: string, typeId: string, count: number, extra: Partial<Host> = {}): Host {
  return {
    id,
    dataCenterId: 'US-KS-2',
    cloud: 'SECURE',
    gpu: { typeId, count, cudaVersion: '12.8' },
    vcpus: 16 * count,
    memoryGb: 64 * count,
    diskGb: 500,
    driver: 'process',
    cpuFlavors: [],
    simulated: true,
    ...extra,
  }
}

function cpuHost(
  id: string,
  flavors: string[],
  vcpus: number,
  memoryGb: number,
  extra: Partial<Host> = {},
): Host {
  return {
    id,
    dataCenterId: 'US-KS-2',
    cloud: 'SECURE',
    gpu: null,
    vcpus,
    memoryGb,
    diskGb: 1000,
    driver: 'process',
    cpuFlavors: flavors,
    simulated: true,
    ...extra,
  }
}

let seq = 0
function alloc(host: Host, gpuIndices: number[], rest: Partial<Allocation> = {}): Allocation {
  const share = gpuShare(host, gpuIndices.length)
  seq++
  return {
    id: `alloc_${seq}`,
    hostId: host.id,
    ownerKind: 'pod',
    ownerId: `pod${seq}`,
    gpuCount: gpuIndices.length,
    gpuIndices,
    vcpus: share.vcpus,
    memoryGb: share.memoryGb,
    diskGb: 20,
    createdAt: '2026-01-01T00:00:00.000Z',
    ...rest,
  }
}

describe('freeCapacity', () => {
  it('subtracts the allocations of the host and ignores other hosts', () => {
    const host = gpuHost('a', H100, 8)
    const other = gpuHost('b', H100, 8)
    const free = freeCapacity(host, [alloc(host, [0, 2]), alloc(other, [1])])
    expect(free).toEqual({
      gpus: 6,
      gpuIndices: [1, 3, 4, 5, 6, 7],
      vcpus: 96,
      memoryGb: 384,
      diskGb: 480,
    })
  })

  it('is everything on an empty host and never negative on an over-committed one', () => {
    const host = cpuHost('c', ['cpu3c'], 8, 16)
    expect(freeCapacity(host, [])).toEqual({
      gpus: 0,
      gpuIndices: [],
      vcpus: 8,
      memoryGb: 16,
      diskGb: 1000,
    })
    const over = alloc(host, [], { vcpus: 12, memoryGb: 40, diskGb: 2000 })
    expect(freeCapacity(host, [over])).toMatchObject({ vcpus: 0, memoryGb: 0, diskGb: 0 })
  })
})

describe('gpu share', () => {
  it('gives each GPU its proportional part of CPU and memory, rounded down', () => {
    const host = gpuHost('a', RTX4090, 3, { vcpus: 32, memoryGb: 100 })
    expect(gpuShare(host, 1)).toEqual({ vcpus: 10, memoryGb: 33 })
    expect(gpuShare(host, 3)).toEqual({ vcpus: 32, memoryGb: 100 })
  })

  it('gives each GPU at least one vCPU and 1 GB, so a host with fewer vCPUs runs fewer GPU pods', () => {
    // Four GPUs declared, the engine has two CPUs: never a pod of 0 vCPUs.
    const host = gpuHost('a', RTX4090, 4, { vcpus: 2, memoryGb: 3 })
    expect(gpuShare(host, 1)).toEqual({ vcpus: 1, memoryGb: 1 })
    const two = [alloc(host, [0]), alloc(host, [1])]
    expect(freeCapacity(host, two).gpus).toBe(2)
    expect(canPlaceGpus(host, freeCapacity(host, two), 1)).toBe(false)
    expect(canPlaceGpus(host, freeCapacity(host, two.slice(1)), 1)).toBe(true)
  })

  it('refuses GPUs whose share of CPU went to other pods', () => {
    const host = gpuHost('a', RTX4090, 2, { vcpus: 32, memoryGb: 128, cpuFlavors: ['cpu3c'] })
    const cpuPod = alloc(host, [], { vcpus: 20, memoryGb: 40 })
    const free = freeCapacity(host, [cpuPod])
    expect(free.gpus).toBe(2)
    expect(canPlaceGpus(host, free, 1)).toBe(false)
    expect(canPlaceGpus(host, freeCapacity(host, []), 2)).toBe(true)
    expect(canPlaceGpus(host, freeCapacity(host, []), 3)).toBe(false)
    expect(canPlaceGpus(host, freeCapacity(host, []), 0)).toBe(false)
  })
})

describe('availabilityLevel', () => {
  it('uses the documented thresholds, each edge on its upper side', () => {
    expect(LOW_AVAILABILITY_BELOW).toBe(0.25)
    expect(MEDIUM_AVAILABILITY_BELOW).toBe(0.6)
    expect(availabilityLevel(true, 1, 100)).toBe('LOW')
    expect(availabilityLevel(true, 24, 100)).toBe('LOW')
    expect(availabilityLevel(true, 25, 100)).toBe('MEDIUM')
    expect(availabilityLevel(true, 59, 100)).toBe('MEDIUM')
    expect(availabilityLevel(true, 60, 100)).toBe('HIGH')
    expect(availabilityLevel(true, 100, 100)).toBe('HIGH')
  })

  it('is NONE when nothing can be placed, whatever the ratio, and on an empty fleet', () => {
    expect(availabilityLevel(false, 100, 100)).toBe('NONE')
    expect(availabilityLevel(true, 0, 0)).toBe('NONE')
  })
})

describe('gpuAvailability', () => {
  it('goes HIGH -> MEDIUM -> LOW -> NONE as allocations are added', () => {
    const host = gpuHost('a', H100, 8)
    const q = { typeId: H100, count: 1 }
    const allocations: Allocation[] = []
    expect(gpuAvailability([host], allocations, q)).toBe('HIGH')
    allocations.push(alloc(host, [0, 1, 2, 3]))
    expect(gpuAvailability([host], allocations, q)).toBe('MEDIUM')
    allocations.push(alloc(host, [4, 5, 6]))
    expect(gpuAvailability([host], allocations, q)).toBe('LOW')
    allocations.push(alloc(host, [7]))
    expect(gpuAvailability([host], allocations, q)).toBe('NONE')
  })

  it('is NONE when no single host fits the count even though the fleet has enough in total', () => {
    const hosts = [gpuHost('a', H100, 4), gpuHost('b', H100, 4)]
    expect(gpuAvailability(hosts, [], { typeId: H100, count: 4 })).toBe('HIGH')
    expect(gpuAvailability(hosts, [], { typeId: H100, count: 5 })).toBe('NONE')
    const allocations = [alloc(hosts[0]!, [0]), alloc(hosts[1]!, [0])]
    expect(gpuAvailability(hosts, allocations, { typeId: H100, count: 4 })).toBe('NONE')
    expect(gpuAvailability(hosts, allocations, { typeId: H100, count: 3 })).toBe('HIGH')
  })

  it('filters by type, cloud, data center and CUDA version', () => {
    const hosts = [
      gpuHost('s', H100, 8, { gpu: { typeId: H100, count: 8, cudaVersion: '12.4' } }),
      gpuHost('c', H100, 8, { cloud: 'COMMUNITY', dataCenterId: 'EU-RO-1' }),
    ]
    const allocations = [alloc(hosts[0]!, [0, 1, 2, 3, 4, 5, 6])]
    expect(gpuAvailability(hosts, allocations, { typeId: H100, count: 1, cloud: 'SECURE' })).toBe(
      'LOW',
    )
    expect(
      gpuAvailability(hosts, allocations, { typeId: H100, count: 1, cloud: 'COMMUNITY' }),
    ).toBe('HIGH')
    expect(gpuAvailability(hosts, allocations, { typeId: H100, count: 1 })).toBe('MEDIUM')
    expect(
      gpuAvailability(hosts, allocations, { typeId: H100, count: 1, dataCenterId: 'EU-RO-1' }),
    ).toBe('HIGH')
    expect(
      gpuAvailability(hosts, allocations, { typeId: H100, count: 2, cudaVersions: ['12.4'] }),
    ).toBe('NONE')
    expect(
      gpuAvailability(hosts, allocations, {
        typeId: H100,
        count: 2,
        cudaVersions: ['12.4', '12.8'],
      }),
    ).toBe('MEDIUM')
    expect(
      gpuAvailability(hosts, allocations, { typeId: H100, count: 1, minCudaVersion: '12.5' }),
    ).toBe('HIGH')
    expect(
      gpuAvailability(hosts, allocations, { typeId: H100, count: 1, minCudaVersion: '13' }),
    ).toBe('NONE')
    expect(gpuAvailability(hosts, allocations, { typeId: RTX4090, count: 1 })).toBe('NONE')
  })

  it('compares CUDA versions numerically: a 12.10 host satisfies minCudaVersion 12.9', () => {
    const host = gpuHost('a', H100, 1, { gpu: { typeId: H100, count: 1, cudaVersion: '12.10' } })
    expect(gpuAvailability([host], [], { typeId: H100, count: 1, minCudaVersion: '12.9' })).toBe(
      'HIGH',
    )
    expect(gpuAvailability([host], [], { typeId: H100, count: 1, minCudaVersion: '12.11' })).toBe(
      'NONE',
    )
    expect(gpuAvailability([host], [], { typeId: H100, count: 1, minCudaVersion: '12' })).toBe(
      'HIGH',
    )
  })

  it('never matches a CUDA filter on a GPU without CUDA', () => {
    const amd = gpuHost('m', 'AMD Instinct MI300X OAM', 8, {
      gpu: { typeId: 'AMD Instinct MI300X OAM', count: 8, cudaVersion: null },
    })
    const q = { typeId: 'AMD Instinct MI300X OAM', count: 1 }
    expect(gpuAvailability([amd], [], q)).toBe('HIGH')
    expect(gpuAvailability([amd], [], { ...q, minCudaVersion: '11.8' })).toBe('NONE')
    expect(gpuAvailability([amd], [], { ...q, cudaVersions: ['12.8'] })).toBe('NONE')
  })
})

describe('availableGpuCounts', () => {
  it('lists 1..the most GPUs one host can take now', () => {
    const hosts = [
      gpuHost('a', RTX4090, 4),
      gpuHost('b', RTX4090, 2),
      gpuHost('c', RTX4090, 8, { cloud: 'COMMUNITY' }),
    ]
    expect(availableGpuCounts(hosts, [], RTX4090, 'SECURE')).toEqual([1, 2, 3, 4])
    expect(availableGpuCounts(hosts, [], RTX4090)).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    const allocations = [alloc(hosts[0]!, [0, 1])]
    expect(availableGpuCounts(hosts, allocations, RTX4090, 'SECURE')).toEqual([1, 2])
    allocations.push(alloc(hosts[0]!, [2, 3]), alloc(hosts[1]!, [0, 1]))
    expect(availableGpuCounts(hosts, allocations, RTX4090, 'SECURE')).toEqual([])
    expect(availableGpuCounts(hosts, [], H100)).toEqual([])
  })

  it('stops where a host runs out of CPU for the GPUs it still has', () => {
    const host = gpuHost('a', RTX4090, 4, { vcpus: 64, memoryGb: 256, cpuFlavors: ['cpu3c'] })
    const cpuPod = alloc(host, [], { vcpus: 40, memoryGb: 80 })
    expect(availableGpuCounts([host], [cpuPod], RTX4090)).toEqual([1])
  })
})

describe('cpuAvailability', () => {
  it('needs vcpuCount vCPUs and vcpuCount * ramGbPerVcpu GB on a host offering the flavor', () => {
    const host = cpuHost('c', ['cpu3c', 'cpu3m'], 16, 64)
    expect(cpuAvailability([host], [], { flavorId: 'cpu3c', vcpuCount: 16 })).toBe('HIGH')
    expect(cpuAvailability([host], [], { flavorId: 'cpu3c', vcpuCount: 32 })).toBe('NONE')
    expect(cpuAvailability([host], [], { flavorId: 'cpu3m', vcpuCount: 8 })).toBe('HIGH')
    expect(cpuAvailability([host], [], { flavorId: 'cpu3m', vcpuCount: 16 })).toBe('NONE')
    expect(cpuAvailability([host], [], { flavorId: 'cpu3g', vcpuCount: 2 })).toBe('NONE')
    expect(cpuAvailability([host], [], { flavorId: 'cpu9x', vcpuCount: 2 })).toBe('NONE')
  })

  it('goes HIGH -> MEDIUM -> LOW -> NONE by free vCPUs', () => {
    const host = cpuHost('c', ['cpu3c'], 64, 512)
    const q = { flavorId: 'cpu3c', vcpuCount: 2 }
    const allocations: Allocation[] = []
    expect(cpuAvailability([host], allocations, q)).toBe('HIGH')
    allocations.push(alloc(host, [], { vcpus: 32, memoryGb: 64 }))
    expect(cpuAvailability([host], allocations, q)).toBe('MEDIUM')
    allocations.push(alloc(host, [], { vcpus: 16, memoryGb: 32 }))
    expect(cpuAvailability([host], allocations, q)).toBe('MEDIUM')
    allocations.push(alloc(host, [], { vcpus: 14, memoryGb: 28 }))
    expect(cpuAvailability([host], allocations, q)).toBe('LOW')
    allocations.push(alloc(host, [], { vcpus: 2, memoryGb: 4 }))
    expect(cpuAvailability([host], allocations, q)).toBe('NONE')
  })

  it('is NONE when memory, not CPU, has run out', () => {
    const host = cpuHost('c', ['cpu3g'], 16, 64)
    const memoryHog = alloc(host, [], { vcpus: 2, memoryGb: 60 })
    expect(cpuAvailability([host], [memoryHog], { flavorId: 'cpu3g', vcpuCount: 2 })).toBe('NONE')
  })

  it('limits to a data center', () => {
    const hosts = [
      cpuHost('a', ['cpu3c'], 8, 16),
      cpuHost('b', ['cpu3c'], 8, 16, { dataCenterId: 'EU-RO-1' }),
    ]
    const full = alloc(hosts[0]!, [], { vcpus: 8, memoryGb: 16 })
    expect(cpuAvailability(hosts, [full], { flavorId: 'cpu3c', vcpuCount: 2 })).toBe('MEDIUM')
    expect(
      cpuAvailability(hosts, [full], { flavorId: 'cpu3c', vcpuCount: 2, dataCenterId: 'US-KS-2' }),
    ).toBe('NONE')
    expect(
      cpuAvailability(hosts, [full], { flavorId: 'cpu3c', vcpuCount: 2, dataCenterId: 'EU-RO-1' }),
    ).toBe('HIGH')
  })
})
