import { findCpuFlavor } from './cpu-flavors.js'
import type { Cloud, Host } from './fleet.js'
import { compareCudaVersions } from './gpu-types.js'

export type AllocationOwnerKind = 'pod' | 'worker'

/** Resources held on one host by one pod or serverless worker. */
export interface Allocation {
  id: string
  hostId: string
  ownerKind: AllocationOwnerKind
  ownerId: string
  gpuCount: number
  /** Device indices on the host (0-based), what CUDA_VISIBLE_DEVICES will name. */
  gpuIndices: number[]
  vcpus: number
  memoryGb: number
  diskGb: number
  createdAt: string
}

export interface FreeCapacity {
  gpus: number
  gpuIndices: number[]
  vcpus: number
  memoryGb: number
  diskGb: number
}

/**
 * GPUs withdrawn from placement (docs/gpus.md, "Health rules") as allocations that hold only
 * the GPU: every capacity computation then leaves them out, while their share of CPU and memory
 * stays free for CPU pods.
 */
export function withdrawnGpuAllocations(
  withdrawn: Readonly<Record<string, readonly number[]>> | undefined,
): Allocation[] {
  if (!withdrawn) return []
  return Object.entries(withdrawn).flatMap(([hostId, indices]) =>
    indices.map((index) => ({
      id: `withdrawn-gpu-${hostId}-${index}`,
      hostId,
      ownerKind: 'pod' as const,
      ownerId: `withdrawn-gpu-${index}`,
      gpuCount: 1,
      gpuIndices: [index],
      vcpus: 0,
      memoryGb: 0,
      diskGb: 0,
      createdAt: '',
    })),
  )
}

/** What is left on a host after its allocations; allocations of other hosts are ignored. */
export function freeCapacity(host: Host, allocations: readonly Allocation[]): FreeCapacity {
  const mine = allocations.filter((a) => a.hostId === host.id)
  const taken = new Set(mine.flatMap((a) => a.gpuIndices))
  const gpuIndices: number[] = []
  for (let i = 0; i < (host.gpu?.count ?? 0); i++) if (!taken.has(i)) gpuIndices.push(i)
  const sum = (pick: (a: Allocation) => number) => mine.reduce((n, a) => n + pick(a), 0)
  return {
    gpus: gpuIndices.length,
    gpuIndices,
    // Never negative: a fleet file shrunk under running pods leaves the host over-committed.
    vcpus: Math.max(0, host.vcpus - sum((a) => a.vcpus)),
    memoryGb: Math.max(0, host.memoryGb - sum((a) => a.memoryGb)),
    diskGb: Math.max(0, host.diskGb - sum((a) => a.diskGb)),
  }
}

/**
 * The vCPUs and memory that come with `count` GPUs of a host: its share, proportional to the
 * GPUs taken, rounded down so that shares of every GPU never exceed the host, and at least one
 * vCPU and 1 GB per GPU taken: a host offering fewer vCPUs than GPUs (its engine has fewer CPUs
 * than its declaration) runs as many GPU pods as it has vCPUs, never a pod of 0 vCPUs, which a
 * container would run unlimited.
 */
export function gpuShare(host: Host, count: number): { vcpus: number; memoryGb: number } {
  const gpus = host.gpu?.count ?? 0
  if (gpus === 0) return { vcpus: 0, memoryGb: 0 }
  return {
    vcpus: Math.max(count, Math.floor((host.vcpus * count) / gpus)),
    memoryGb: Math.max(count, Math.floor((host.memoryGb * count) / gpus)),
  }
}

/**
 * True when `count` GPUs and their share of CPU and memory fit in `free`. The share is checked
 * too: a host whose CPUs went to CPU pods cannot start a GPU pod even with idle GPUs.
 */
export function canPlaceGpus(host: Host, free: FreeCapacity, count: number): boolean {
  if (count < 1 || free.gpus < count) return false
  const share = gpuShare(host, count)
  return free.vcpus >= share.vcpus && free.memoryGb >= share.memoryGb
}

export type Availability = 'NONE' | 'LOW' | 'MEDIUM' | 'HIGH'

/** Below this share of free stock (free / total over eligible hosts) availability is LOW. */
export const LOW_AVAILABILITY_BELOW = 0.25
/** Below this share, and at or above LOW_AVAILABILITY_BELOW, availability is MEDIUM; else HIGH. */
export const MEDIUM_AVAILABILITY_BELOW = 0.6

/**
 * NONE when the request cannot be placed on any single host now, whatever the ratio: a pod
 * never spans hosts, so 8 free GPUs spread over 8 hosts do not make an 8-GPU pod possible.
 */
export function availabilityLevel(placeable: boolean, free: number, total: number): Availability {
  if (!placeable || total <= 0) return 'NONE'
  const ratio = free / total
  if (ratio < LOW_AVAILABILITY_BELOW) return 'LOW'
  if (ratio < MEDIUM_AVAILABILITY_BELOW) return 'MEDIUM'
  return 'HIGH'
}

export interface GpuStockQuery {
  typeId: string
  /** GPUs one pod wants. */
  count: number
  cloud?: Cloud | undefined
  /** Only hosts whose CUDA version is one of these. */
  cudaVersions?: readonly string[] | undefined
  /** Only hosts whose CUDA version is at least this (compared numerically). */
  minCudaVersion?: string | undefined
  dataCenterId?: string | undefined
}

function matchesCuda(cudaVersion: string | null, q: GpuStockQuery): boolean {
  if (q.cudaVersions && q.cudaVersions.length > 0) {
    if (cudaVersion === null) return false
    return q.cudaVersions.some((v) => compareCudaVersions(v, cudaVersion) === 0)
  }
  if (q.minCudaVersion !== undefined) {
    return cudaVersion !== null && compareCudaVersions(cudaVersion, q.minCudaVersion) >= 0
  }
  return true
}

/** Hosts of the GPU type that satisfy the query's cloud, CUDA and data center filters. */
export function eligibleGpuHosts(hosts: readonly Host[], q: GpuStockQuery): Host[] {
  return hosts.filter(
    (h) =>
      h.gpu !== null &&
      h.gpu.typeId === q.typeId &&
      (q.cloud === undefined || h.cloud === q.cloud) &&
      (q.dataCenterId === undefined || h.dataCenterId === q.dataCenterId) &&
      matchesCuda(h.gpu.cudaVersion, q),
  )
}

export function gpuAvailability(
  hosts: readonly Host[],
  allocations: readonly Allocation[],
  q: GpuStockQuery,
): Availability {
  let free = 0
  let total = 0
  let placeable = false
  for (const host of eligibleGpuHosts(hosts, q)) {
    const capacity = freeCapacity(host, allocations)
    free += capacity.gpus
    total += host.gpu?.count ?? 0
    if (canPlaceGpus(host, capacity, q.count)) placeable = true
  }
  return availabilityLevel(placeable, free, total)
}

/** The most GPUs of the type one pod could get on a single host now (0 when none). */
export function maxPlaceableGpus(
  hosts: readonly Host[],
  allocations: readonly Allocation[],
  q: Omit<GpuStockQuery, 'count'>,
): number {
  let best = 0
  for (const host of eligibleGpuHosts(hosts, { ...q, count: 1 })) {
    const capacity = freeCapacity(host, allocations)
    for (let n = capacity.gpus; n > best; n--) {
      if (canPlaceGpus(host, capacity, n)) {
        best = n
        break
      }
    }
  }
  return best
}

/**
 * GPU counts a pod of the type can ask for and be placed now: 1..max over hosts, since a host
 * that fits n GPUs (and their share) also fits fewer.
 */
export function availableGpuCounts(
  hosts: readonly Host[],
  allocations: readonly Allocation[],
  typeId: string,
  cloud?: Cloud,
): number[] {
  const max = maxPlaceableGpus(hosts, allocations, { typeId, cloud })
  return Array.from({ length: max }, (_, i) => i + 1)
}

export interface CpuStockQuery {
  flavorId: string
  vcpuCount: number
  dataCenterId?: string | undefined
}

/** Memory a CPU slot of the flavor holds; 0 for an unknown flavor. */
export function cpuSlotMemoryGb(flavorId: string, vcpuCount: number): number {
  return vcpuCount * (findCpuFlavor(flavorId)?.ramGbPerVcpu ?? 0)
}

export function eligibleCpuHosts(
  hosts: readonly Host[],
  q: Omit<CpuStockQuery, 'vcpuCount'>,
): Host[] {
  return hosts.filter(
    (h) =>
      h.cpuFlavors.includes(q.flavorId) &&
      (q.dataCenterId === undefined || h.dataCenterId === q.dataCenterId),
  )
}

/** A CPU slot needs vcpuCount vCPUs and vcpuCount * ramGbPerVcpu GB on a host offering the flavor. */
export function canPlaceCpu(free: FreeCapacity, flavorId: string, vcpuCount: number): boolean {
  return free.vcpus >= vcpuCount && free.memoryGb >= cpuSlotMemoryGb(flavorId, vcpuCount)
}

/** Stock ratio is free vCPUs over all vCPUs of the hosts offering the flavor. */
export function cpuAvailability(
  hosts: readonly Host[],
  allocations: readonly Allocation[],
  q: CpuStockQuery,
): Availability {
  if (!findCpuFlavor(q.flavorId)) return 'NONE'
  let free = 0
  let total = 0
  let placeable = false
  for (const host of eligibleCpuHosts(hosts, q)) {
    const capacity = freeCapacity(host, allocations)
    free += capacity.vcpus
    total += host.vcpus
    if (canPlaceCpu(capacity, q.flavorId, q.vcpuCount)) placeable = true
  }
  return availabilityLevel(placeable, free, total)
}
