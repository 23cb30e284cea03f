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
  StockViewer,
  CpuTypeView,
  DataCenterView,
  GpuTypeView,
} from '../../domain/catalog/catalog-service.js'
import type { Cloud, Host } from '../../domain/catalog/fleet.js'
import { compareCudaVersions, GPU_POOLS } from '../../domain/catalog/gpu-types.js'
import { MIN_CLUSTER_PODS } from '../../domain/clusters/cluster.js'
import { minimumBidFor } from '../../domain/pods/spot.js'

/** Instant clusters take NVIDIA types only (their private network needs NVIDIA GPUs). */
export function isClusterType(type: Pick<GpuTypeView, 'manufacturer'>): boolean {
  return type.manufacturer.toUpperCase() === 'NVIDIA'
}

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
  countryCode?: string | null
  minDisk?: number | null
  minCudaVersion?: string | null
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
async function lowestPrice(
  catalog: CatalogService,
  type: GpuTypeView,
  input: LowestPriceInput,
  viewer: StockViewer,
) {
  const count = Math.max(1, input.gpuCount ?? 1)
  const minVcpu = input.minVcpuCount ?? 0
  const minMemory = input.minMemoryInGb ?? 0
  const cudaVersions = (input.allowedCudaVersions ?? []).filter((v): v is string => !!v)
  const minCudaVersion = input.minCudaVersion || undefined
  const snapshot = await catalog.snapshot()
  const { allocations } = snapshot
  // Stock: the hosts that take new pods now (not DOWN, cordoned or draining) and are open to
  // the caller's account (its pools); the others are offered, with no stock.
  const stock = new Set((await catalog.stockHosts(viewer)).map((h) => h.id))
  const inStockHost = (h: Host) => stock.has(h.id)
  // countryCode: only the hosts of data centers in that country (community offers by country).
  const countryDataCenters = input.countryCode
    ? new Set(
        catalog.fleet.dataCenters
          .filter((dc) => dc.countryCode === input.countryCode)
          .map((dc) => dc.id),
      )
    : undefined
  const hosts = countryDataCenters
    ? snapshot.hosts.filter((h) => countryDataCenters.has(h.dataCenterId))
    : snapshot.hosts
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
      minCudaVersion,
      dataCenterId: input.dataCenterId ?? undefined,
    })
    const eligible = candidates.filter((h) => meetsShare(h, count))
    const open = eligible.filter(inStockHost)
    const availability = gpuAvailability(open, allocations, { typeId: type.id, count })
    const offered = cloud === 'SECURE' ? type.secure : type.community
    const price = offered ? (cloud === 'SECURE' ? type.price.secure : type.price.community) : null
    return { cloud, candidates, eligible, open, availability, price }
  })
  const offered = perCloud.filter((c) => c.eligible.length > 0 && c.price !== null)
  const inStock = offered.filter((c) => c.availability !== 'NONE')
  const cheapest = (inStock.length > 0 ? inStock : offered).sort(
    (a, b) => (a.price ?? 0) - (b.price ?? 0),
  )[0]
  const eligible = perCloud.flatMap((c) => c.eligible)

  const counts = new Set<number>()
  for (const host of perCloud.flatMap((c) => c.candidates).filter(inStockHost)) {
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
      minCudaVersion,
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
        versionHosts.filter((h) => h.gpu?.cudaVersion === cudaVersion && inStockHost(h)),
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
    // Spot pods are community pods: a bid is possible where the community cloud offers the type.
    minimumBidPrice: perCloud.some(
      (c) => c.cloud === 'COMMUNITY' && c.eligible.length > 0 && c.price !== null,
    )
      ? minimumBidFor(type.price.community)
      : null,
    // null: no host of the type where and as asked (RunPod's answer, which gpuhunt reads as "not
    // offered there"); None: there are such hosts, and none can place the pod now.
    stockStatus: perCloud.some((c) => c.candidates.some((h) => (h.gpu?.count ?? 0) >= count))
      ? stockStatusOf(
          gpuAvailability(
            perCloud.flatMap((c) => c.open),
            allocations,
            { typeId: type.id, count },
          ),
        )
      : null,
    availableGpuCounts: [...counts].sort((a, b) => a - b),
    minMemory: shares.length > 0 ? Math.min(...shares.map((s) => s.memoryGb)) : null,
    minVcpu: shares.length > 0 ? Math.min(...shares.map((s) => s.vcpus)) : null,
    gpuTypeCudaVersions,
    compliance: [
      ...new Set(
        catalog.fleet.dataCenters
          .filter((dc) => eligible.some((h) => h.dataCenterId === dc.id))
          .flatMap((dc) => dc.compliance),
      ),
    ].sort(),
    countryCode: input.countryCode ?? null,
  }
}

/**
 * Data centers where a cluster of the type fits: global networking (the cluster's private
 * network), and secure-cloud hosts of the type there that hold two or more whole nodes (pods of
 * maxGpuCount GPUs, as cluster offers are sized), the least a cluster has. AMD types have none.
 */
function nodeGroupDataCenters(catalog: CatalogService, type: GpuTypeView) {
  if (!isClusterType(type)) return []
  return catalog.fleet.dataCenters
    .filter((dc) => {
      if (!dc.globalNetwork) return false
      const perNode = Math.max(type.maxCount.secure, type.maxCount.community)
      const nodes = catalog.fleet.hosts
        .filter(
          (h) => h.dataCenterId === dc.id && h.cloud === 'SECURE' && h.gpu?.typeId === type.id,
        )
        .reduce((sum, h) => sum + Math.floor((h.gpu?.count ?? 0) / perNode), 0)
      return nodes >= MIN_CLUSTER_PODS
    })
    .map((dc) => dataCenterView(dc))
}

export function gpuTypeView(catalog: CatalogService, type: GpuTypeView, viewer: StockViewer) {
  return {
    id: type.id,
    displayName: type.name,
    memoryInGb: type.memory,
    manufacturer: type.manufacturer,
    secureCloud: type.secure,
    communityCloud: type.community,
    securePrice: type.secure ? type.price.secure : null,
    communityPrice: type.community ? type.price.community : null,
    secureSpotPrice: null,
    communitySpotPrice: type.community ? minimumBidFor(type.price.community) : null,
    cudaCores: null,
    oneWeekPrice: null,
    oneMonthPrice: null,
    threeMonthPrice: null,
    sixMonthPrice: null,
    minPodGpuCount: 1,
    clusterPrice: isClusterType(type) ? type.price.secure : null,
    nodeGroupDatacenters: () => nodeGroupDataCenters(catalog, type),
    maxGpuCount: Math.max(type.maxCount.secure, type.maxCount.community),
    maxGpuCountSecureCloud: type.maxCount.secure,
    maxGpuCountCommunityCloud: type.maxCount.community,
    lowestPrice: ({ input }: { input?: LowestPriceInput | null }) =>
      lowestPrice(catalog, type, input ?? {}, viewer),
  }
}

export function dataCenterView(dc: DataCenterView) {
  return {
    id: dc.id,
    name: dc.name,
    location: dc.region,
    globalNetwork: dc.globalNetwork,
    listed: true,
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

/**
 * A CPU flavor as RunPod's `cpuFlavors` lists it (gpuhunt builds dstack's CPU offers from it):
 * instances from `minVcpu` to `maxVcpu` vCPUs with `ramMultiplier` GB each, `specifics` the
 * stock and price of the smallest one in a data center. `diskLimitPerVcpu` is the least disk per
 * vCPU of the hosts offering the flavor: a CPU pod's container disk is taken from its host's.
 */
export function cpuFlavorView(catalog: CatalogService, flavor: CpuTypeView) {
  const hosts = catalog.fleet.hosts.filter((h) => h.cpuFlavors.includes(flavor.id))
  const diskPerVcpu = Math.min(...hosts.map((h) => Math.floor(h.diskGb / Math.max(1, h.vcpus))))
  return {
    id: flavor.id,
    displayName: `${flavor.name} (${flavor.group})`,
    groupId: flavor.name,
    minVcpu: flavor.vcpu.min,
    maxVcpu: flavor.vcpu.max,
    ramMultiplier: flavor.ramGbPerVcpu,
    diskLimitPerVcpu: Number.isFinite(diskPerVcpu) ? diskPerVcpu : 0,
    specifics: ({ input }: { input?: { dataCenterId?: string | null } | null }) => {
      const dataCenterId = input?.dataCenterId ?? undefined
      const offered = (flavor.dataCenters ?? []).filter(
        (dc) => dataCenterId === undefined || dc.id === dataCenterId,
      )
      if (offered.length === 0) return { stockStatus: null, securePrice: null }
      const best = offered.some((dc) => dc.availability !== 'NONE')
        ? (offered.find((dc) => dc.availability === 'HIGH') ??
          offered.find((dc) => dc.availability === 'MEDIUM') ??
          offered.find((dc) => dc.availability === 'LOW')!)
        : offered[0]!
      return {
        stockStatus: stockStatusOf(best.availability),
        securePrice: Math.round(flavor.price.securePerVcpu * flavor.vcpu.min * 10_000) / 10_000,
      }
    },
  }
}
