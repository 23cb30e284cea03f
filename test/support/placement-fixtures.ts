import { expect } from 'vitest'
import { gpuShare, type Allocation } from '../../src/domain/catalog/capacity.js'
import { CapacityIndex } from '../../src/domain/catalog/capacity-index.js'
import type { DataCenter, Host } from '../../src/domain/catalog/fleet.js'
import {
  place,
  type PlacementRequest,
  type PlacementResult,
  type PlacementSnapshot,
} from '../../src/scheduler/core/placement.js'

/** Hosts, data centers, allocations and requests for the placement tests (scheduler/core). */
export const H100 = 'NVIDIA H100 80GB HBM3'
export const A40 = 'NVIDIA A40'
export const RTX4090 = 'NVIDIA GeForce RTX 4090'
export const MI300X = 'AMD Instinct MI300X OAM'

export function dc(id: string, globalNetwork: boolean): DataCenter {
  return {
    id,
    name: id,
    region: 'UNKNOWN',
    globalNetwork,
    networkVolumeTypes: ['STANDARD'],
    compliance: [],
  }
}

export const DATA_CENTERS: DataCenter[] = [
  dc('US-KS-2', true),
  dc('EU-RO-1', true),
  dc('CA-MTL-1', false),
  dc('EUR-IS-1', false),
]

export function gpuHost(
  id: string,
  dataCenterId: string,
  typeId: string,
  count: number,
  extra: Partial<Host> = {},
): Host {
  return {
    id,
    dataCenterId,
    cloud: 'SECURE',
    gpu: { typeId, count, cudaVersion: typeId === MI300X ? null : '12.8' },
    vcpus: 16 * count,
    memoryGb: 64 * count,
    diskGb: 1000,
    driver: 'process',
    cpuFlavors: [],
    simulated: true,
    ...extra,
  }
}

export function cpuHost(
  id: string,
  dataCenterId: string,
  cpuFlavors: string[],
  vcpus: number,
  memoryGb: number,
  extra: Partial<Host> = {},
): Host {
  return {
    id,
    dataCenterId,
    cloud: 'SECURE',
    gpu: null,
    vcpus,
    memoryGb,
    diskGb: 1000,
    driver: 'process',
    cpuFlavors,
    simulated: true,
    ...extra,
  }
}

let seq = 0
export function alloc(
  host: Host,
  gpuIndices: number[],
  rest: Partial<Allocation> = {},
): Allocation {
  const share = gpuShare(host, gpuIndices.length)
  seq++
  return {
    id: `a${seq}`,
    hostId: host.id,
    ownerKind: 'pod',
    ownerId: `pod${seq}`,
    gpuCount: gpuIndices.length,
    gpuIndices,
    vcpus: share.vcpus,
    memoryGb: share.memoryGb,
    diskGb: 0,
    createdAt: '2026-01-01T00:00:00.000Z',
    ...rest,
  }
}

export function gpu(
  gpuTypeId: string,
  gpuCount: number,
  extra: Partial<PlacementRequest> & {
    cudaVersions?: string[]
    minCudaVersion?: string
  } = {},
): PlacementRequest {
  const { cudaVersions, minCudaVersion, ...rest } = extra
  return {
    compute: {
      kind: 'gpu',
      gpuTypeId,
      gpuCount,
      ...(cudaVersions ? { cudaVersions } : {}),
      ...(minCudaVersion !== undefined ? { minCudaVersion } : {}),
    },
    dataCenterIds: [],
    globalNetworking: false,
    diskGb: 50,
    ...rest,
  }
}

export function cpu(
  flavorId: string,
  vcpuCount: number,
  extra: Partial<PlacementRequest> = {},
): PlacementRequest {
  return {
    compute: { kind: 'cpu', flavorId, vcpuCount },
    dataCenterIds: [],
    globalNetworking: false,
    diskGb: 20,
    ...extra,
  }
}

/** Placed from the allocations and from an index of them: both must say exactly the same. */
export function placeChecked(
  snapshot: PlacementSnapshot & { allocations: readonly Allocation[] },
  request: PlacementRequest,
): PlacementResult {
  const scanned = place(snapshot, request)
  const index = new CapacityIndex(snapshot.hosts, snapshot.allocations)
  expect(place({ ...snapshot, allocations: index }, request), 'indexed').toEqual(scanned)
  return scanned
}

export function run(
  hosts: Host[],
  request: PlacementRequest,
  allocations: Allocation[] = [],
  dataCenters: DataCenter[] = DATA_CENTERS,
): PlacementResult {
  return placeChecked({ hosts, dataCenters, allocations }, request)
}

export function placed(result: PlacementResult) {
  if (!result.ok) throw new Error(`expected a placement, got: ${result.detail}`)
  return result.placement
}

export function failed(result: PlacementResult) {
  if (result.ok) throw new Error(`expected no placement, got host ${result.placement.hostId}`)
  return result
}

export const reasonOf = (result: PlacementResult, hostId: string) =>
  failed(result).rejections.find((r) => r.hostId === hostId)?.reason
