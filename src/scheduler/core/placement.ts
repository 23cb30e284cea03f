import {
  canPlaceCpu,
  canPlaceGpus,
  cpuSlotMemoryGb,
  eligibleCpuHosts,
  eligibleGpuHosts,
  freeCapacity,
  gpuShare,
  withdrawnGpuAllocations,
  type Allocation,
  type FreeCapacity,
} from '../../domain/catalog/capacity.js'
import { CapacityIndex } from '../../domain/catalog/capacity-index.js'
import { findCpuFlavor } from '../../domain/catalog/cpu-flavors.js'
import type { DataCenter, Host } from '../../domain/catalog/fleet.js'
import { findGpuType } from '../../domain/catalog/gpu-types.js'
import {
  constraintText,
  hostMeets,
  hostOpenTo,
  poolOf,
} from '../../domain/catalog/placement-constraints.js'
import type {
  CpuCompute,
  GpuCompute,
  Placement,
  PlacementRequest,
  PlacementResult,
  PlacementSnapshot,
} from '../../domain/catalog/placement.js'

export type {
  CpuCompute,
  GpuCompute,
  HostRejection,
  Placement,
  PlacementRequest,
  PlacementResult,
  PlacementSnapshot,
} from '../../domain/catalog/placement.js'

/**
 * How far a host got through the checks, in the order they run. The furthest stage any
 * candidate host reached tells which requirement the failure detail must name: a fleet with
 * idle GPUs but full disks is short of disk, not of GPUs.
 */
const Stage = {
  /** Excluded by pinning, data center or global networking: says nothing about the compute. */
  Excluded: 0,
  Kind: 1,
  /** It declares GPUs of the type that it does not offer (not reported: offered-host.ts). */
  Withheld: 2,
  Cloud: 3,
  Cuda: 4,
  /** It lacks a label the request asks for. */
  Label: 5,
  /**
   * It is in a pool the account is not bound to. After the labels, so that a request asking
   * for `pool=X` is told that pool X is closed to it, not that other hosts lack the label.
   */
  Pool: 6,
  /** The vCPUs and memory that come with the GPUs are below the request's minimums. */
  Size: 7,
  Units: 8,
  Share: 9,
  Disk: 10,
  /** Everything fits, but the host takes no new placements (DOWN, cordoned, draining). */
  Unavailable: 11,
} as const
type Stage = (typeof Stage)[keyof typeof Stage]

type Evaluation =
  | { fits: true; host: Host; free: FreeCapacity; leftover: number }
  | { fits: false; host: Host; stage: Stage; reason: string }

interface Context {
  request: PlacementRequest
  /** Data centers a host may be in, in preference order. */
  allowed: readonly DataCenter[]
  dataCenterById: ReadonlyMap<string, DataCenter>
  /** Set when the requested GPU type is known and not NVIDIA while global networking is on. */
  needsNvidia: boolean
  unavailable: Readonly<Record<string, string>>
}

const list = (ids: readonly string[]) => ids.join(', ')
const plural = (n: number, one: string, many: string) => (n === 1 ? one : many)

function describeCuda(compute: GpuCompute): string {
  if (compute.cudaVersions && compute.cudaVersions.length > 0) {
    return ` with CUDA ${compute.cudaVersions.join(' or ')}`
  }
  if (compute.minCudaVersion !== undefined) return ` with CUDA ${compute.minCudaVersion} or newer`
  return ''
}

function describeSize(ctx: Context): string {
  const { minVcpus = 0, minMemoryGb = 0 } = ctx.request
  const parts = [
    ...(minVcpus > 0 ? [`${minVcpus} vCPUs`] : []),
    ...(minMemoryGb > 0 ? [`${minMemoryGb} GB of memory`] : []),
  ]
  return parts.length > 0 ? ` with at least ${parts.join(' and ')}` : ''
}

function describeWhere(ctx: Context): string {
  const cloud = ctx.request.cloud ? ` in the ${ctx.request.cloud} cloud` : ''
  const certified =
    ctx.request.compliance && ctx.request.compliance.length > 0
      ? ` certified ${list(ctx.request.compliance)}`
      : ''
  if (ctx.request.dataCenterIds.length > 0)
    return `${cloud} in ${list(ctx.allowed.map((d) => d.id))}${certified}`
  if (certified) return `${cloud} in a data center${certified}`
  if (ctx.request.globalNetworking) return `${cloud} in a data center with global networking`
  return cloud
}

/** A malformed request is a bug upstream (validation lives in the API); say so, do not throw. */
function malformed(request: PlacementRequest): string | undefined {
  const c = request.compute
  if (c.kind === 'gpu') {
    if (!findGpuType(c.gpuTypeId)) return `unknown GPU type "${c.gpuTypeId}"`
    if (!Number.isSafeInteger(c.gpuCount) || c.gpuCount < 1) {
      return `invalid request: gpuCount must be a positive integer, got ${c.gpuCount}`
    }
  } else {
    if (!findCpuFlavor(c.flavorId)) return `unknown CPU flavor "${c.flavorId}"`
    if (!Number.isSafeInteger(c.vcpuCount) || c.vcpuCount < 1) {
      return `invalid request: vcpuCount must be a positive integer, got ${c.vcpuCount}`
    }
  }
  if (!Number.isFinite(request.diskGb) || request.diskGb < 0) {
    return `invalid request: diskGb must be a number >= 0, got ${request.diskGb}`
  }
  return undefined
}

/** A pool the account is not bound to, or an asked label the host lacks; undefined: neither. */
function constraintRejection(
  host: Host,
  request: PlacementRequest,
): { stage: Stage; reason: string } | undefined {
  const unmet = (request.labels ?? []).filter((c) => !hostMeets(host, c))
  if (unmet.length > 0) {
    const has = Object.entries(host.labels ?? {}).map(([k, v]) => `${k}=${v}`)
    return {
      stage: Stage.Label,
      reason: `does not have ${unmet.map(constraintText).join(' and ')} (${has.length > 0 ? `its labels: ${has.join(', ')}` : 'it has no labels'})`,
    }
  }
  if (!hostOpenTo(host, request.accountPools)) {
    return {
      stage: Stage.Pool,
      reason: `is in pool ${poolOf(host)}, which this account is not bound to`,
    }
  }
  return undefined
}

function diskReason(free: FreeCapacity, diskGb: number): string | undefined {
  if (free.diskGb >= diskGb) return undefined
  return `has only ${free.diskGb} GB of free disk, needs ${diskGb} GB`
}

function evaluateGpu(
  host: Host,
  compute: GpuCompute,
  ctx: Context,
  free: FreeCapacity,
): Evaluation {
  const type = compute.gpuTypeId
  const reject = (stage: Stage, reason: string): Evaluation => ({
    fits: false,
    host,
    stage,
    reason,
  })
  const withheld =
    host.withheldGpu?.typeId === type &&
    (!ctx.request.cloud || host.cloud === ctx.request.cloud) &&
    (host.gpu?.count ?? 0) < compute.gpuCount
  if (withheld) return reject(Stage.Withheld, host.withheldGpu!.reason)
  if (!host.gpu) return reject(Stage.Kind, `has no GPUs, not ${type}`)
  if (host.gpu.typeId !== type) return reject(Stage.Kind, `has ${host.gpu.typeId}, not ${type}`)
  if (ctx.needsNvidia) {
    return reject(
      Stage.Kind,
      `has ${type}, which is not NVIDIA: global networking needs an NVIDIA GPU`,
    )
  }
  if (ctx.request.cloud && host.cloud !== ctx.request.cloud) {
    return reject(Stage.Cloud, `is in the ${host.cloud} cloud, not ${ctx.request.cloud}`)
  }
  // Only the CUDA filter is left to check; eligibleGpuHosts owns its numeric comparison.
  const cudaQuery = {
    typeId: type,
    count: compute.gpuCount,
    cudaVersions: compute.cudaVersions,
    minCudaVersion: compute.minCudaVersion,
  }
  if (eligibleGpuHosts([host], cudaQuery).length === 0) {
    const has = host.gpu.cudaVersion === null ? 'has no CUDA' : `has CUDA ${host.gpu.cudaVersion}`
    const wanted =
      compute.cudaVersions && compute.cudaVersions.length > 0
        ? `not ${compute.cudaVersions.join(' or ')}`
        : `below the minimum ${compute.minCudaVersion}`
    return reject(Stage.Cuda, `${has}, ${wanted}`)
  }
  const constrained = constraintRejection(host, ctx.request)
  if (constrained) return reject(constrained.stage, constrained.reason)
  const count = compute.gpuCount
  const size = gpuShare(host, count)
  const { minVcpus = 0, minMemoryGb = 0 } = ctx.request
  if (size.vcpus < minVcpus || size.memoryGb < minMemoryGb) {
    return reject(
      Stage.Size,
      `gives ${count} ${type} only ${size.vcpus} vCPUs and ${size.memoryGb} GB of memory`,
    )
  }
  if (host.gpu.count < count) {
    return reject(Stage.Units, `has only ${host.gpu.count} ${type} in all`)
  }
  if (free.gpus < count) {
    return reject(
      Stage.Units,
      free.gpus === 0 ? `has no free ${type}` : `has only ${free.gpus} free ${type}`,
    )
  }
  if (!canPlaceGpus(host, free, count)) {
    const share = gpuShare(host, count)
    const gpus = `${count} free ${type}`
    return reject(
      Stage.Share,
      free.vcpus < share.vcpus
        ? `has ${gpus} but not their share of vCPUs: needs ${share.vcpus}, ${free.vcpus} free`
        : `has ${gpus} but not their share of memory: needs ${share.memoryGb} GB, ${free.memoryGb} GB free`,
    )
  }
  const disk = diskReason(free, ctx.request.diskGb)
  if (disk) return reject(Stage.Disk, disk)
  return { fits: true, host, free, leftover: free.gpus - count }
}

function evaluateCpu(
  host: Host,
  compute: CpuCompute,
  ctx: Context,
  free: FreeCapacity,
): Evaluation {
  const reject = (stage: Stage, reason: string): Evaluation => ({
    fits: false,
    host,
    stage,
    reason,
  })
  const flavor = compute.flavorId
  // GPU hosts usually list no flavor: their CPUs are the GPUs' share and stay with them.
  if (eligibleCpuHosts([host], { flavorId: flavor }).length === 0) {
    return reject(
      Stage.Kind,
      host.gpu
        ? `is a GPU host that does not offer CPU flavor ${flavor}`
        : `does not offer CPU flavor ${flavor}`,
    )
  }
  if (ctx.request.cloud && host.cloud !== ctx.request.cloud) {
    return reject(Stage.Cloud, `is in the ${host.cloud} cloud, not ${ctx.request.cloud}`)
  }
  const constrained = constraintRejection(host, ctx.request)
  if (constrained) return reject(constrained.stage, constrained.reason)
  const n = compute.vcpuCount
  if (!canPlaceCpu(free, flavor, n)) {
    const memoryGb = cpuSlotMemoryGb(flavor, n)
    return reject(
      Stage.Units,
      free.vcpus < n
        ? `has only ${free.vcpus} free ${plural(free.vcpus, 'vCPU', 'vCPUs')}, needs ${n}`
        : `has only ${free.memoryGb} GB of free memory, needs ${memoryGb} GB`,
    )
  }
  const disk = diskReason(free, ctx.request.diskGb)
  if (disk) return reject(Stage.Disk, disk)
  return { fits: true, host, free, leftover: free.vcpus - n }
}

type FreeOf = (host: Host) => FreeCapacity

function evaluate(host: Host, ctx: Context, freeOf: FreeOf): Evaluation {
  const { request } = ctx
  const excluded = (reason: string): Evaluation => ({
    fits: false,
    host,
    stage: Stage.Excluded,
    reason,
  })
  if (request.pinnedHostId !== undefined && host.id !== request.pinnedHostId) {
    return excluded(`is not host ${request.pinnedHostId}, where the pod's persistent volume lives`)
  }
  const dataCenter = ctx.dataCenterById.get(host.dataCenterId)
  if (!dataCenter) return excluded(`is in data center ${host.dataCenterId}, which is not known`)
  if (request.dataCenterIds.length > 0 && !request.dataCenterIds.includes(dataCenter.id)) {
    return excluded(`is in ${dataCenter.id}, not among ${list(request.dataCenterIds)}`)
  }
  if (request.globalNetworking && !dataCenter.globalNetwork) {
    return excluded(`is in ${dataCenter.id}, which has no global networking`)
  }
  const missing = (request.compliance ?? []).filter((c) => !dataCenter.compliance.includes(c))
  if (missing.length > 0) {
    return excluded(`is in ${dataCenter.id}, which is not certified ${list(missing)}`)
  }
  const free = freeOf(host)
  const evaluation =
    request.compute.kind === 'gpu'
      ? evaluateGpu(host, request.compute, ctx, free)
      : evaluateCpu(host, request.compute, ctx, free)
  const unavailable = ctx.unavailable[host.id]
  if (evaluation.fits && unavailable !== undefined)
    return { fits: false, host, stage: Stage.Unavailable, reason: unavailable }
  return evaluation
}

/** Fewest units left after placement first, so that large blocks stay whole; then host id. */
function bestFit<T extends { host: Host; leftover: number }>(fits: readonly T[]): T | undefined {
  let best: T | undefined
  for (const fit of fits) {
    if (
      best === undefined ||
      fit.leftover < best.leftover ||
      (fit.leftover === best.leftover && fit.host.id < best.host.id)
    ) {
      best = fit
    }
  }
  return best
}

function toPlacement(host: Host, free: FreeCapacity, request: PlacementRequest): Placement {
  const c = request.compute
  if (c.kind === 'gpu') {
    const share = gpuShare(host, c.gpuCount)
    return {
      hostId: host.id,
      dataCenterId: host.dataCenterId,
      gpuIndices: free.gpuIndices.slice(0, c.gpuCount),
      vcpus: share.vcpus,
      memoryGb: share.memoryGb,
      diskGb: request.diskGb,
    }
  }
  return {
    hostId: host.id,
    dataCenterId: host.dataCenterId,
    gpuIndices: [],
    vcpus: c.vcpuCount,
    memoryGb: cpuSlotMemoryGb(c.flavorId, c.vcpuCount),
    diskGb: request.diskGb,
  }
}

/** The sentence for a request no candidate host could take, naming the first unmet need. */
function shortage(ctx: Context, furthest: Stage): string {
  const c = ctx.request.compute
  const disk = furthest === Stage.Disk ? ` and ${ctx.request.diskGb} GB of free disk` : ''
  if (c.kind === 'gpu') {
    const share = furthest === Stage.Share ? ' and their share of vCPUs and memory' : ''
    return `no host${describeLabels(ctx)} has ${c.gpuCount} free ${c.gpuTypeId}${describeCuda(c)}${describeSize(ctx)}${share}${disk}${describeWhere(ctx)}`
  }
  const memoryGb = cpuSlotMemoryGb(c.flavorId, c.vcpuCount)
  const vcpus = `${c.vcpuCount} free ${plural(c.vcpuCount, 'vCPU', 'vCPUs')}`
  return `no host${describeLabels(ctx)} has ${vcpus} of ${c.flavorId} (${memoryGb} GB memory)${disk}${describeWhere(ctx)}`
}

/** ` with ib=true and driver>=550` for a request that asks labels. */
function describeLabels(ctx: Context): string {
  const labels = ctx.request.labels ?? []
  return labels.length > 0 ? ` with ${labels.map(constraintText).join(' and ')}` : ''
}

/** What the request needs of a host's kind, for the pool and label sentences. */
function describeOffer(ctx: Context): string {
  const c = ctx.request.compute
  const kind = c.kind === 'gpu' ? `${c.gpuTypeId}${describeCuda(c)}` : `CPU flavor ${c.flavorId}`
  return `${kind}${describeWhere(ctx)}`
}

/**
 * The sentence when a pool or an asked label is what no host could meet: the pools closed to
 * the account, or the labels no host offering the compute has.
 */
function constraintShortage(
  ctx: Context,
  furthest: Stage,
  evaluations: readonly Evaluation[],
): string | undefined {
  const at = (stage: Stage) =>
    evaluations.flatMap((e) => (!e.fits && e.stage === stage ? [e.host] : []))
  const closedPools = [...new Set(at(Stage.Pool).map((h) => poolOf(h)!))].sort()
  const bound = ctx.request.accountPools ?? []
  const boundText =
    bound.length > 0 ? `it is bound to ${list([...bound])}` : 'it is bound to no pool'
  if (furthest === Stage.Pool) {
    return `no host in pool ${closedPools.join(' or ')} is open to this account (${boundText}), and no other host${describeLabels(ctx)} offers ${describeOffer(ctx)}`
  }
  if (furthest === Stage.Label) {
    const unmet = new Set<string>()
    for (const host of at(Stage.Label))
      for (const c of ctx.request.labels ?? [])
        if (!hostMeets(host, c)) unmet.add(constraintText(c))
    return `no host has ${[...unmet].join(' and ')} among the hosts offering ${describeOffer(ctx)}`
  }
  if (closedPools.length > 0)
    return `${shortage(ctx, furthest)} (the hosts in pool ${closedPools.join(', ')} are not open to this account: ${boundText})`
  return undefined
}

/**
 * Chooses the host for a pod or worker, or says why none can take it. Pure: the same snapshot
 * and request always give the same answer.
 */
export function place(snapshot: PlacementSnapshot, request: PlacementRequest): PlacementResult {
  const invalid = malformed(request)
  if (invalid !== undefined) return { ok: false, detail: invalid, rejections: [] }

  const dataCenterById = new Map(snapshot.dataCenters.map((d) => [d.id, d]))
  const requested = [...new Set(request.dataCenterIds)]
  const known =
    requested.length > 0
      ? requested.flatMap((id) => dataCenterById.get(id) ?? [])
      : [...snapshot.dataCenters]
  const allowed = request.globalNetworking ? known.filter((d) => d.globalNetwork) : known
  const gpuType =
    request.compute.kind === 'gpu' ? findGpuType(request.compute.gpuTypeId) : undefined
  const ctx: Context = {
    request,
    allowed,
    dataCenterById,
    needsNvidia:
      request.globalNetworking && gpuType !== undefined && gpuType.manufacturer !== 'NVIDIA',
    unavailable: snapshot.unavailable ?? {},
  }

  const held = snapshot.allocations
  const index = held instanceof CapacityIndex ? held : undefined
  // Withdrawn GPUs are rare: while any is, every host is looked at without the index.
  const withdrawn = withdrawnGpuAllocations(snapshot.withdrawnGpus)
  const freeOf: FreeOf =
    withdrawn.length > 0
      ? (host) =>
          freeCapacity(host, [
            ...(index ? index.allocations() : (held as readonly Allocation[])),
            ...withdrawn,
          ])
      : index
        ? (host) => index.free(host.id) ?? freeCapacity(host, index.allocations())
        : (host) => freeCapacity(host, held as readonly Allocation[])
  if (index && index.hosts === snapshot.hosts && withdrawn.length === 0) {
    const fit = indexedFit(index, ctx, requested.length > 0, freeOf)
    if (fit) return { ok: true, placement: toPlacement(fit.host, fit.free, request) }
    // Nothing fits: the scan below says why, host by host.
  }

  const evaluations = snapshot.hosts.map((host) => evaluate(host, ctx, freeOf))
  const fits = evaluations.flatMap((e) => (e.fits ? [e] : []))

  const preferred = fits.find((e) => e.host.id === request.preferredHostId)
  let chosen = preferred
  if (!chosen && requested.length > 0) {
    for (const dataCenter of allowed) {
      chosen = bestFit(fits.filter((e) => e.host.dataCenterId === dataCenter.id))
      if (chosen) break
    }
  } else if (!chosen) {
    chosen = bestFit(fits)
  }
  if (chosen) return { ok: true, placement: toPlacement(chosen.host, chosen.free, request) }

  const rejections = evaluations.flatMap((e) =>
    e.fits ? [] : [{ hostId: e.host.id, reason: e.reason }],
  )
  return { ok: false, detail: failureDetail(ctx, requested, known, evaluations), rejections }
}

type Fit = Extract<Evaluation, { fits: true }>

/**
 * The choice the scan in place() makes when something fits, found from the index: the pinned
 * or preferred host, else the hosts with room for the request in best fit's order (fewest free
 * units, then id), per allowed data center in order when the request names some. The first of
 * them that passes every check is the scan's best fit. Costs the hosts looked at until then,
 * not the fleet.
 */
function indexedFit(
  index: CapacityIndex,
  ctx: Context,
  dataCentersNamed: boolean,
  freeOf: FreeOf,
): Fit | undefined {
  const { request } = ctx
  if (ctx.needsNvidia) return undefined
  const fitOf = (host: Host | undefined): Fit | undefined => {
    if (!host) return undefined
    const evaluation = evaluate(host, ctx, freeOf)
    return evaluation.fits ? evaluation : undefined
  }
  if (request.pinnedHostId !== undefined) return fitOf(index.host(request.pinnedHostId))
  if (request.preferredHostId !== undefined) {
    const preferred = fitOf(index.host(request.preferredHostId))
    if (preferred) return preferred
  }
  const c = request.compute
  const candidates = (dataCenterId?: string) =>
    c.kind === 'gpu'
      ? index.gpuCandidates(c.gpuTypeId, c.gpuCount, dataCenterId)
      : index.cpuCandidates(c.flavorId, c.vcpuCount, dataCenterId)
  for (const dataCenterId of dataCentersNamed ? ctx.allowed.map((d) => d.id) : [undefined]) {
    for (const host of candidates(dataCenterId)) {
      const fit = fitOf(host)
      if (fit) return fit
    }
  }
  return undefined
}

function failureDetail(
  ctx: Context,
  requested: readonly string[],
  known: readonly DataCenter[],
  evaluations: readonly Evaluation[],
): string {
  const { request } = ctx
  if (ctx.needsNvidia && request.compute.kind === 'gpu') {
    return `GPU type ${request.compute.gpuTypeId} is not NVIDIA: global networking needs an NVIDIA GPU`
  }
  if (requested.length > 0 && known.length === 0) {
    return `no known data center among ${list(requested)}`
  }
  if (ctx.allowed.length === 0 && request.globalNetworking) {
    return requested.length > 0
      ? `no data center with global networking among ${list(requested)}`
      : 'no data center has global networking'
  }
  const pinned = request.pinnedHostId
  if (pinned !== undefined) {
    const lives = `host ${pinned} (where the pod's persistent volume lives)`
    const own = evaluations.find((e) => e.host.id === pinned)
    if (!own) return `${lives} is not in the fleet`
    if (!own.fits) return `${lives} ${own.reason}`
  }
  let furthest: Stage = Stage.Excluded
  for (const e of evaluations) if (!e.fits && e.stage > furthest) furthest = e.stage
  if (furthest === Stage.Unavailable) {
    const why = evaluations
      .flatMap((e) =>
        !e.fits && e.stage === Stage.Unavailable ? [`${e.host.id} ${e.reason}`] : [],
      )
      .join('; ')
    return `${shortage(ctx, Stage.Units)}: the hosts that would take it take no new pods now (${why})`
  }
  const constrained = constraintShortage(ctx, furthest, evaluations)
  if (constrained !== undefined) return constrained
  // Declared GPUs that are not offered are named: the operator's fleet file says they exist.
  const withheld = evaluations.flatMap((e) =>
    !e.fits && e.stage === Stage.Withheld ? [`${e.host.id} ${e.reason}`] : [],
  )
  if (withheld.length > 0) return `${shortage(ctx, furthest)} (${withheld.join('; ')})`
  return shortage(ctx, furthest)
}
