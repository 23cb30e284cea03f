import type { Allocation } from './capacity.js'
import type { CapacityIndex } from './capacity-index.js'
import type { Cloud, DataCenter, Host } from './fleet.js'
import type { LabelConstraint } from './placement-constraints.js'

export interface GpuCompute {
  kind: 'gpu'
  gpuTypeId: string
  gpuCount: number
  /** Only hosts whose CUDA version is one of these; when non-empty, minCudaVersion is ignored. */
  cudaVersions?: string[]
  /** Only hosts whose CUDA version is at least this, compared numerically. */
  minCudaVersion?: string
}

export interface CpuCompute {
  kind: 'cpu'
  flavorId: string
  vcpuCount: number
}

/** What a workload needs of a host. The scheduler (scheduler/core) decides; the domain asks. */
export interface PlacementRequest {
  compute: GpuCompute | CpuCompute
  /** undefined: either cloud (GraphQL cloudType ALL). */
  cloud?: Cloud
  /** Allowed data centers in order of preference; empty: any. */
  dataCenterIds: string[]
  /** Only data centers with global networking, and only NVIDIA GPUs. */
  globalNetworking: boolean
  /** Container disk plus persistent mount, GB. */
  diskGb: number
  /** GPU workloads: the vCPUs that come with the GPUs (the host's share) must be at least this. */
  minVcpus?: number
  /** GPU workloads: the memory that comes with the GPUs must be at least this, GB. */
  minMemoryGb?: number
  /** Only data centers holding every one of these compliance certifications. */
  compliance?: string[]
  /** Must land on this host (a pod with a persistent mount restarts where its data is). */
  pinnedHostId?: string
  /** Try this host first (a restarting pod prefers its previous host). */
  preferredHostId?: string
  /**
   * The pools the placing account is bound to: a host labelled `pool=X` takes the workload only
   * when X is among them; a host in no pool takes every account's. Absent: bound to none.
   */
  accountPools?: readonly string[]
  /** Labels the host must have (a pod's or endpoint's hostLabels, a podyard extension). */
  labels?: readonly LabelConstraint[]
}

export interface Placement {
  hostId: string
  dataCenterId: string
  gpuIndices: number[]
  vcpus: number
  memoryGb: number
  diskGb: number
}

export interface HostRejection {
  hostId: string
  /** A predicate of the host: `host ${hostId} ${reason}` reads as a sentence. */
  reason: string
}

export type PlacementResult =
  { ok: true; placement: Placement } | { ok: false; detail: string; rejections: HostRejection[] }

export interface PlacementSnapshot {
  hosts: readonly Host[]
  dataCenters: readonly DataCenter[]
  /**
   * What the hosts hold: every allocation (each host's free capacity is summed from them, and
   * every host is looked at), or an index of them built over `hosts`, from which a placement
   * looks only at hosts with room for the request.
   */
  allocations: readonly Allocation[] | CapacityIndex
  /**
   * Hosts that take no new placements now, each with why as a predicate (`is DOWN since ...`,
   * `is cordoned`): they are considered, and named when they alone could have taken it.
   */
  unavailable?: Readonly<Record<string, string>>
  /** GPU indices per host withdrawn from placement for their health (docs/gpus.md). */
  withdrawnGpus?: Readonly<Record<string, readonly number[]>>
}

/** The scheduler's pure decision, injected where capacity is taken. */
export type PlacementPolicy = (
  snapshot: PlacementSnapshot,
  request: PlacementRequest,
) => PlacementResult
