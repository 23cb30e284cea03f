import type { PlacementRequest } from '../catalog/placement.js'
import { GPU_TYPES } from '../catalog/gpu-types.js'
import { labelConstraintsOf } from '../catalog/placement-constraints.js'
import type { Endpoint } from './endpoint.js'

export interface WorkerCandidate {
  request: PlacementRequest
  gpuTypeId: string | null
  cpuFlavorId: string | null
}

/**
 * What a worker of the endpoint may run on, in the order to try: each GPU type of its pools
 * (pool order, then catalog order) less the excluded types, or each CPU flavor it names. The
 * data centers are the endpoint's, narrowed to those of its network volumes (a worker mounts
 * the volume of the data center it runs in). Empty when the constraints leave no data center.
 */
export function workerCandidates(
  endpoint: Endpoint,
  volumeDataCenters: readonly string[],
): WorkerCandidate[] {
  let dataCenterIds = endpoint.dataCenterIds
  if (volumeDataCenters.length > 0) {
    dataCenterIds =
      dataCenterIds.length === 0
        ? [...new Set(volumeDataCenters)]
        : dataCenterIds.filter((id) => volumeDataCenters.includes(id))
    if (dataCenterIds.length === 0) return []
  }
  const common = {
    dataCenterIds,
    globalNetworking: false,
    diskGb: endpoint.disk,
    ...(endpoint.hostLabels?.length ? { labels: labelConstraintsOf(endpoint.hostLabels) } : {}),
  }
  if (endpoint.gpu) {
    const gpu = endpoint.gpu
    return gpu.pools.flatMap((pool) =>
      GPU_TYPES.filter((t) => t.pool === pool && !gpu.excludedTypes.includes(t.id)).map((type) => ({
        request: {
          ...common,
          compute: {
            kind: 'gpu' as const,
            gpuTypeId: type.id,
            gpuCount: gpu.count,
            ...(gpu.allowedCudaVersions.length > 0
              ? { cudaVersions: gpu.allowedCudaVersions }
              : {}),
            ...(gpu.minCudaVersion ? { minCudaVersion: gpu.minCudaVersion } : {}),
          },
        },
        gpuTypeId: type.id,
        cpuFlavorId: null,
      })),
    )
  }
  return (endpoint.cpu ?? []).map((cpu) => ({
    request: {
      ...common,
      compute: { kind: 'cpu' as const, flavorId: cpu.id, vcpuCount: cpu.vcpuCount },
    },
    gpuTypeId: null,
    cpuFlavorId: cpu.id,
  }))
}
