import {
  canPlaceGpus,
  eligibleGpuHosts,
  freeCapacity,
  gpuAvailability,
  gpuShare,
  type Availability,
} from '../../domain/catalog/capacity.js'
import type {
  CatalogService,
  CpuTypeView,
  DataCenterView,
  GpuTypeView,
} from '../../domain/catalog/catalog-service.js'
import type { Cloud, Host } from '../../domain/catalog/fleet.js'
import { compareCudaVersions, GPU_POOLS } from '../../domain/catalog/gpu-types.js'

/** GraphQL's stockStatus spelling of the catalog's availability. */
export function stockStatusOf(availability: Availability): 'High' | 'Medium' | 'Low' | 'None' {
  switch (availability) {
    case 'HIGH':
      return 'High'
    case 'MEDIUM':
      return 'Medium'
    case 'LOW':
      return 'Low'
    case 'NONE':
      return 'None'
  }
}

export interface LowestPriceInput {
  gpuCount?: number | null
  secureCloud?: boolean | null
  minMemoryInGb?: number | null
  minVcpuCount?: number | null
  totalDisk?: number | null
  dataCenterId?: string | null
  allowedCudaVersions?: Array<string | null> | null
}

function cloudsOf(secureCloud: boolean | null | undefined): Cloud[] {
  if (secureCloud === true) return ['SECURE']
  if (secureCloud === false) return ['COMMUNITY']
  return ['SECURE', 'COMMUNITY']
}

/**
 * `lowestPrice`: the price and live stock of `gpuCount` GPUs of the type in the clouds asked
 * for, counting only hosts whose share of vCPUs and memory for that many GPUs meets the
 * minimums (the same share placement reserves).
 */
async function lowestPrice(catalog: CatalogService, type: GpuTypeView, input: LowestPriceInput) {
  const count = Math.max(1, input.gpuCount ?? 1)
  const minVcpu = input.minVcpuCount ?? 0
  const minMemory = input.minMemoryInGb ?? 0
  const cudaVersions = (input.allowedCudaVersions ?? []).filter((v): v is string => !!v)
  const { hosts, allocations, unavailable } = await catalog.snapshot()
  const meetsShare = (host: Host, n: number) => {
    const share = gpuShare(host, n)
    return share.vcpus >= minVcpu && share.memoryGb >= minMemory
  }
  const perCloud = cloudsOf(input.secureCloud).map((cloud) => {
    const candidates = eligibleGpuHosts(hosts, {
      typeId: type.id,
      count,
      cloud,
      cudaVersions,
      dataCenterId: input.dataCenterId ?? undefined,
    })
    const eligible = candidates.filter((h) => meetsShare(h, count))
    // Hosts that take no new pods (DOWN, cordoned, draining) offer no stock.
    const open = eligible.filter((h) => unavailable[h.id] === undefined)
    const availability = gpuAvailability(open, allocations, { typeId: type.id, count })
    const price = cloud === 'SECURE' ? type.price.secure : type.price.community
    return { cloud, candidates, eligible, availability, price }
  })
  const offered = perCloud.filter((c) => c.eligible.length > 0 && c.price !== null)
  const inStock = offered.filter((c) => c.availability !== 'NONE')
  const cheapest = (inStock.length > 0 ? inStock : offered).sort(
    (a, b) => (a.price ?? 0) - (b.price ?? 0),
  )[0]
  const eligible = perCloud.flatMap((c) => c.eligible)

  const counts = new Set<number>()
  for (const host of perCloud.flatMap((c) => c.candidates)) {
    const free = freeCapacity(host, allocations)
    for (let n = 1; n <= free.gpus; n++) {
      if (canPlaceGpus(host, free, n) && meetsShare(host, n)) counts.add(n)
    }
  }
  const shares = eligible.map((h) => gpuShare(h, count))
  // Per CUDA version of the type's hosts (in the clouds and data center asked for, the minimums
  // met): whether a host with exactly that version can place the GPUs now.
  const versionHosts = cloudsOf(input.secureCloud).flatMap((cloud) =>
    eligibleGpuHosts(hosts, {
      typeId: type.id,
      count,
      cloud,
      dataCenterId: input.dataCenterId ?? undefined,
    }).filter((h) => meetsShare(h, count)),
  )
  const versions = [
    ...new Set(versionHosts.flatMap((h) => (h.gpu?.cudaVersion ? [h.gpu.cudaVersion] : []))),
  ].sort((a, b) => compareCudaVersions(b, a))
  const gpuTypeCudaVersions = versions.map((cudaVersion) => ({
    cudaVersion,
    availability:
      gpuAvailability(
        versionHosts.filter((h) => h.gpu?.cudaVersion === cudaVersion),
        allocations,
        { typeId: type.id, count },
      ) === 'NONE'
        ? 'UNAVAILABLE'
        : 'AVAILABLE',
  }))
  return {
    gpuName: type.name,
    gpuTypeId: type.id,
    uninterruptablePrice: cheapest?.price ?? null,
    minimumBidPrice: null,
    stockStatus: stockStatusOf(gpuAvailability(eligible, allocations, { typeId: type.id, count })),
    availableGpuCounts: [...counts].sort((a, b) => a - b),
    minMemory: shares.length > 0 ? Math.min(...shares.map((s) => s.memoryGb)) : null,
    minVcpu: shares.length > 0 ? Math.min(...shares.map((s) => s.vcpus)) : null,
    gpuTypeCudaVersions,
  }
}

export function gpuTypeView(catalog: CatalogService, type: GpuTypeView) {
  return {
    id: type.id,
    displayName: type.name,
    memoryInGb: type.memory,
    manufacturer: type.manufacturer,
    secureCloud: type.secure,
    communityCloud: type.community,
    securePrice: type.price.secure,
    communityPrice: type.price.community,
    secureSpotPrice: null,
    communitySpotPrice: null,
    cudaCores: null,
    oneWeekPrice: null,
    oneMonthPrice: null,
    threeMonthPrice: null,
    maxGpuCount: Math.max(type.maxCount.secure, type.maxCount.community),
    maxGpuCountSecureCloud: type.maxCount.secure,
    maxGpuCountCommunityCloud: type.maxCount.community,
    lowestPrice: ({ input }: { input?: LowestPriceInput | null }) =>
      lowestPrice(catalog, type, input ?? {}),
  }
}

export function dataCenterView(dc: DataCenterView) {
  return {
    id: dc.id,
    name: dc.name,
    location: dc.region,
    globalNetwork: dc.globalNetwork,
    gpuAvailability: (dc.gpuAvailability ?? []).map((g) => ({
      gpuTypeId: g.id,
      displayName: g.name,
      stockStatus: stockStatusOf(g.availability),
    })),
  }
}

/**
 * A CPU flavor as a `cpuTypes` entry. RunPod lists physical CPU models there; a flavor is not
 * one, so `cores` is the most vCPUs one host offers for it and `threadsPerCore` is 1 (each
 * vCPU counted as a core): the numbers a client can size an instance by.
 */
export function cpuTypeView(flavor: CpuTypeView) {
  return {
    id: flavor.id,
    displayName: `${flavor.name} (${flavor.group})`,
    cores: flavor.vcpu.max,
    threadsPerCore: 1,
    ramGbPerVcpu: flavor.ramGbPerVcpu,
    vcpuCounts: flavor.vcpuCounts,
    stockStatus: stockStatusOf(flavor.availability),
  }
}

/**
 * `serverlessGpuPools`: the serverless pools (wire-compat §8.2) in their table order, each
 * with the GPU types of the fleet that belong to it. Like `gpuTypes`, only types some host has
 * are listed, and a pool none of whose types the fleet has is left out: nothing could run there.
 */
export function serverlessGpuPoolsView(types: readonly GpuTypeView[]) {
  return GPU_POOLS.map((pool) => ({
    id: pool,
    gpuTypeIds: types.filter((type) => type.pool === pool).map((type) => type.id),
  })).filter((pool) => pool.gpuTypeIds.length > 0)
}
