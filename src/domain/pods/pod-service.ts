import { AppError } from '../../shared/app-error.js'
import { checkMountPaths } from './mount-paths.js'
import type { Clock } from '../../shared/clock.js'
import { newId } from '../../shared/ids.js'
import type { TraceOrigin, Tracing } from '../../shared/tracing.js'
import { tracePodCreated, tracePodStatus } from './pod-tracing.js'
import type { CatalogService } from '../catalog/catalog-service.js'
import type { Cloud, Fleet, Host } from '../catalog/fleet.js'
import { findGpuType } from '../catalog/gpu-types.js'
import type {
  Placement,
  PlacementPolicy,
  PlacementRequest,
  PlacementSnapshot,
} from '../catalog/placement.js'
import type { Allocation } from '../catalog/capacity.js'
import type { Template } from '../templates/template.js'
import { hasQuota, type AccountQuotas, type QuotaUse } from '../quotas/quota.js'
import type { QuotaService } from '../quotas/quota-service.js'
import type {
  Pod,
  PodRequirements,
  PodActionRequest,
  PodCompute,
  PodMounts,
  PodRuntime,
  PodStatus,
} from './pod.js'
import {
  checkAction,
  checkMountsOnCreate,
  DEFAULT_CLOUD,
  DEFAULT_CONTAINER_DISK_GB,
  holdsResources,
  hourlyPriceOf,
  patchMounts,
  RESTARTING_FIELDS,
} from './pod-rules.js'
import { followEvents } from './event-follow.js'
import { placeByPreempting, PREEMPTED_REASON, spotHourlyPrice } from './spot.js'
import type {
  CapacityUnit,
  LogSource,
  PodLogLine,
  PodLogQuery,
  PodRuntimeReader,
  PodStore,
} from './ports.js'

export interface CreatePodInput {
  name: string
  /** Required unless a template gives it. */
  image?: string
  args?: string
  disk?: number
  ports?: string[]
  env?: Record<string, string>
  registry?: string | null
  gpu?: GpuRequest
  cpu?: { id: string; vcpuCount: number }
  mounts?: PodMounts
  cloud?: Cloud
  dataCenterIds?: string[]
  globalNetworking?: boolean
  templateId?: string
  requirements?: PodRequirements
  /** The account's SSH keys as PUBLIC_KEY at each start (default: the template's, else false). */
  startSsh?: boolean
  /** A generated JUPYTER_PASSWORD unless env has one (default: the template's, else false). */
  startJupyter?: boolean
  /** A spot pod bidding this many USD per GPU-hour (GPU pods in the COMMUNITY cloud only). */
  bidPerGpu?: number
  /** The most USD per hour the pod may cost (GraphQL's deployCost); a dearer pod is refused. */
  maxHourlyCost?: number
}

/** The GPU part of a create (RunPod v2 CreateGpuConfig): the type, and what its host must offer. */
export interface GpuRequest {
  id: string
  count?: number
  /** Only hosts with exactly one of these CUDA versions. */
  allowedCudaVersions?: string[]
  /** Only hosts with at least this CUDA version. */
  minCudaVersion?: string
  /** GB of host memory per GPU that must come with the GPUs. */
  minRamPerGpu?: number
  /** vCPUs per GPU that must come with the GPUs. */
  minVcpuCountPerGpu?: number
}

export interface UpdatePodInput {
  name?: string
  locked?: boolean
  image?: string
  args?: string
  disk?: number
  ports?: string[]
  env?: Record<string, string>
  registry?: string | null
  mounts?: PodMounts
  globalNetworking?: boolean
}

/** Other resources a pod may name; each lookup sees only what the account may use. */
export interface PodReferences {
  template(accountId: string, id: string): Promise<Template | undefined>
  registryExists(accountId: string, id: string): Promise<boolean>
  networkVolume(accountId: string, id: string): Promise<{ dataCenterId: string } | undefined>
}

export interface PodServiceDeps {
  store: PodStore
  catalog: CatalogService
  place: PlacementPolicy
  runtime: PodRuntimeReader
  references: PodReferences
  clock: Clock
  /** Tells the lifecycle loop a pod changed, so that it acts on it now. */
  nudge: (podId: string) => void
  /** The spend-limit policy (docs/billing.md); without it nothing is refused for money. */
  spendGuard?: {
    assertWithinSpendLimit(accountId: string, addedUsdPerHour: number, what: string): Promise<void>
  }
  /** The admin's quotas (docs/billing.md, "Quotas"); without it nothing is refused for them. */
  quotas?: QuotaService
  /** Writes the pods' spans (docs/production.md, "Tracing"); none when tracing is off. */
  tracing?: Tracing
}

const ALLOCATION_KIND = 'pod'
/** Length of a generated JUPYTER_PASSWORD (letters and digits: about 119 bits). */
export const JUPYTER_PASSWORD_LENGTH = 20
/** How long a TERMINATED pod stays readable by id (docs/pods.md). */
export const TERMINATED_RETENTION_MS = 24 * 3600 * 1000

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b)
}

/** The pod with its CUDA requirement replaced, when versions are given (GPU pods only). */
function withCudaVersions(pod: Pod, cudaVersions: string[] | undefined): Pod {
  if (!cudaVersions?.length || pod.compute.kind !== 'gpu') return pod
  const { minCudaVersion: _replaced, ...requirements } = pod.requirements ?? {}
  return { ...pod, requirements: { ...requirements, cudaVersions } }
}

/** A spot pod with a new bid (GraphQL podBidResume); an on-demand pod cannot take one. */
function withBid(fleet: Fleet, pod: Pod, bidPerGpu: number | undefined): Pod {
  if (bidPerGpu === undefined) return pod
  if (!pod.spot || pod.compute.kind !== 'gpu') {
    throw new AppError(
      'RULE_CONFLICT',
      `pod ${pod.id} is an on-demand pod: start it without a bid (podResume)`,
    )
  }
  const { gpuTypeId, gpuCount } = pod.compute
  const hourlyPrice = spotHourlyPrice(fleet, gpuTypeId, gpuCount, bidPerGpu)
  return { ...pod, spot: { bidPerGpu }, hourlyPrice }
}

/** What a pod counts for in its account's quotas while it holds its GPUs. */
function quotaUseOf(pod: Pod, { asNewPod }: { asNewPod: boolean }): Partial<QuotaUse> {
  return {
    pods: asNewPod ? 1 : 0,
    gpus: pod.compute.kind === 'gpu' ? pod.compute.gpuCount : 0,
  }
}

/** Pods: creation with placement, reads, updates and actions. The lifecycle loop runs them. */
export class PodService {
  constructor(private readonly deps: PodServiceDeps) {}

  /**
   * The account's quotas, read before a capacity unit (which must not wait for other reads);
   * null when it has none.
   */
  private async quotasOf(accountId: string): Promise<AccountQuotas | null> {
    const limits = await this.deps.quotas?.limits(accountId)
    return limits && hasQuota(limits) ? limits : null
  }

  /** Inside the capacity unit, so that concurrent creates cannot both take the last slot. */
  private async checkQuota(
    unit: CapacityUnit,
    accountId: string,
    limits: AccountQuotas | null,
    adding: Partial<QuotaUse>,
    what: string,
  ): Promise<void> {
    if (!limits || !this.deps.quotas) return
    this.deps.quotas.assertWithin(limits, await unit.quotaUse(accountId), adding, what)
  }

  private get now(): string {
    return this.deps.clock.now().toISOString()
  }

  /** Resolves the compute part of a create body against the catalog; 400 naming the rule broken. */
  private async computeOf(
    input: CreatePodInput,
    template: Template | undefined,
  ): Promise<PodCompute> {
    if (input.gpu && input.cpu)
      throw new AppError('RULE_CONFLICT', 'give either gpu or cpu, not both')
    if (!input.gpu && !input.cpu) throw new AppError('RULE_CONFLICT', 'give one of gpu or cpu')
    if (input.gpu) {
      if (!this.deps.catalog.offersGpuType(input.gpu.id)) {
        throw new AppError(
          'RULE_CONFLICT',
          `unknown GPU type "${input.gpu.id}": see GET /v2/catalog/gpus`,
        )
      }
      // Either CUDA field of the body replaces the template's constraint entirely (v2).
      const ownCuda =
        input.gpu.allowedCudaVersions !== undefined || input.gpu.minCudaVersion !== undefined
      const allowedCudaVersions = ownCuda ? [] : (template?.allowedCudaVersions ?? [])
      return {
        kind: 'gpu',
        gpuTypeId: input.gpu.id,
        gpuCount: input.gpu.count ?? 1,
        ...(allowedCudaVersions.length > 0 ? { allowedCudaVersions } : {}),
      }
    }
    const { id, vcpuCount } = input.cpu!
    const offer = this.deps.catalog.cpuFlavorOffer(id)
    if (!offer)
      throw new AppError('RULE_CONFLICT', `unknown CPU flavor "${id}": see GET /v2/catalog/cpus`)
    if (!offer.vcpuCounts.includes(vcpuCount)) {
      throw new AppError(
        'RULE_CONFLICT',
        `CPU flavor ${id} does not offer ${vcpuCount} vCPUs; it offers ${offer.vcpuCounts.join(', ')}`,
      )
    }
    return {
      kind: 'cpu',
      flavorId: id,
      vcpuCount,
      memoryGb: Math.round(vcpuCount * offer.flavor.ramGbPerVcpu),
    }
  }

  private checkDataCenters(ids: string[], globalNetworking: boolean, compute: PodCompute): void {
    const fleet = this.deps.catalog.fleet
    for (const id of ids) {
      if (!fleet.dataCenters.some((dc) => dc.id === id)) {
        throw new AppError(
          'RULE_CONFLICT',
          `unknown data center "${id}": see GET /v2/catalog/datacenters`,
        )
      }
    }
    if (!globalNetworking) return
    const manufacturer =
      compute.kind === 'gpu' ? findGpuType(compute.gpuTypeId)?.manufacturer : undefined
    if (manufacturer !== 'NVIDIA') {
      throw new AppError('RULE_CONFLICT', 'globalNetworking needs an NVIDIA GPU')
    }
    if (
      ids.length > 0 &&
      !ids.some((id) => fleet.dataCenters.find((dc) => dc.id === id)?.globalNetwork)
    ) {
      throw new AppError(
        'RULE_CONFLICT',
        `globalNetworking needs a data center with global networking; none of ${ids.join(', ')} has it`,
      )
    }
  }

  private async checkRegistry(
    accountId: string,
    registry: string | null | undefined,
  ): Promise<void> {
    if (registry && !(await this.deps.references.registryExists(accountId, registry))) {
      throw new AppError('RULE_CONFLICT', `registry "${registry}" not found`)
    }
  }

  /**
   * A network mount names a volume of the account; the pod can only run in the volume's data
   * center, so that becomes the only data center allowed.
   */
  private async networkDataCenters(
    accountId: string,
    mounts: PodMounts,
    preferred: string[],
  ): Promise<string[]> {
    const volumeId = mounts.network?.[0]?.volumeId
    if (volumeId === undefined) return preferred
    const volume = await this.deps.references.networkVolume(accountId, volumeId)
    if (!volume)
      throw new AppError('RULE_CONFLICT', `network volume "${volumeId}" not found in your account`)
    if (preferred.length > 0 && !preferred.includes(volume.dataCenterId)) {
      throw new AppError(
        'RULE_CONFLICT',
        `network volume ${volumeId} is in ${volume.dataCenterId}, which is not among the pod's data centers (${preferred.join(', ')})`,
      )
    }
    return [volume.dataCenterId]
  }

  private async templateOf(
    accountId: string,
    templateId: string | undefined,
  ): Promise<Template | undefined> {
    if (templateId === undefined) return undefined
    const template = await this.deps.references.template(accountId, templateId)
    if (!template) throw new AppError('NOT_FOUND', `template "${templateId}" not found`)
    if (template.serverless) {
      const problem = `body.templateId: template ${template.id} is a serverless template; a pod needs a pod template (serverless: false)`
      throw new AppError('VALIDATION_FAILED', `the request failed validation: ${problem}`, {
        errors: [problem],
      })
    }
    return template
  }

  private placementRequest(
    pod: Pod,
    hosts: { pinned?: string; preferred?: string } = {},
  ): PlacementRequest {
    return {
      compute:
        pod.compute.kind === 'gpu'
          ? {
              kind: 'gpu',
              gpuTypeId: pod.compute.gpuTypeId,
              gpuCount: pod.compute.gpuCount,
              // The creator's CUDA versions win over the template's.
              ...(pod.requirements?.cudaVersions?.length
                ? { cudaVersions: pod.requirements.cudaVersions }
                : pod.compute.allowedCudaVersions
                  ? { cudaVersions: pod.compute.allowedCudaVersions }
                  : {}),
              ...(pod.requirements?.minCudaVersion
                ? { minCudaVersion: pod.requirements.minCudaVersion }
                : {}),
            }
          : { kind: 'cpu', flavorId: pod.compute.flavorId, vcpuCount: pod.compute.vcpuCount },
      cloud: pod.cloud,
      dataCenterIds: pod.dataCenterIds,
      globalNetworking: pod.globalNetworking,
      diskGb: pod.disk + (pod.mounts.persistent?.size ?? 0),
      ...(pod.requirements?.minVcpus ? { minVcpus: pod.requirements.minVcpus } : {}),
      ...(pod.requirements?.minMemoryGb ? { minMemoryGb: pod.requirements.minMemoryGb } : {}),
      ...(pod.requirements?.compliance?.length ? { compliance: pod.requirements.compliance } : {}),
      ...(hosts.pinned ? { pinnedHostId: hosts.pinned } : {}),
      ...(hosts.preferred ? { preferredHostId: hosts.preferred } : {}),
    }
  }

  private allocationOf(pod: Pod, placement: Placement): Allocation {
    return {
      id: newId.allocation(),
      hostId: placement.hostId,
      ownerKind: ALLOCATION_KIND,
      ownerId: pod.id,
      gpuCount: placement.gpuIndices.length,
      gpuIndices: placement.gpuIndices,
      vcpus: placement.vcpus,
      memoryGb: placement.memoryGb,
      diskGb: placement.diskGb,
      createdAt: this.now,
    }
  }

  /**
   * Places the pod and records its allocation, inside the exclusive unit. With
   * `suggestOtherCloud` (a create), a SECURE request that finds no room says so when the
   * COMMUNITY cloud has it: the caller chose the cloud and may choose again.
   */
  private async reserve(
    unit: CapacityUnit,
    pod: Pod,
    request: PlacementRequest,
    { suggestOtherCloud = false, preempted = [] as Pod[] } = {},
  ): Promise<Pod> {
    const fleet = this.deps.catalog.fleet
    const snapshot = {
      hosts: this.deps.catalog.hosts(),
      dataCenters: fleet.dataCenters,
      allocations: await unit.holdings(),
      unavailable: this.deps.catalog.unavailable(),
      withdrawnGpus: this.deps.catalog.withdrawnGpus(),
    }
    const result = this.deps.place(snapshot, request)
    let placement: Placement
    if (result.ok) {
      placement = result.placement
    } else {
      // Free GPUs first; only then does an on-demand pod take the GPUs of spot pods.
      const freed = pod.spot ? undefined : await this.preempting(unit, snapshot, request, pod)
      if (!freed) {
        const community =
          suggestOtherCloud &&
          request.cloud === 'SECURE' &&
          this.deps.place(snapshot, { ...request, cloud: 'COMMUNITY' }).ok
        throw new AppError(
          'NO_CAPACITY',
          community ? `${result.detail}; the COMMUNITY cloud has room for it` : result.detail,
        )
      }
      for (const spot of freed.preempted) preempted.push(await this.preempt(unit, spot))
      placement = freed.placement
    }
    const allocation = this.allocationOf(pod, placement)
    await unit.allocations.remove(ALLOCATION_KIND, pod.id)
    await unit.allocations.insert(allocation)
    return {
      ...pod,
      hostId: placement.hostId,
      dataCenterId: placement.dataCenterId,
      gpuIndices: placement.gpuIndices,
    }
  }

  /** A placement once spot pods give up their GPUs (spot.ts chooses which), or undefined. */
  private async preempting(
    unit: CapacityUnit,
    snapshot: Omit<PlacementSnapshot, 'allocations'>,
    request: PlacementRequest,
    pod: Pod,
  ) {
    if (request.compute.kind !== 'gpu') return undefined
    const holding = await unit.pods.list({ statuses: ['PROVISIONING', 'STARTING', 'RUNNING'] })
    const spots = holding.filter((p) => p.spot && p.id !== pod.id)
    if (spots.length === 0) return undefined
    const allocations = await unit.allocations.list()
    return placeByPreempting(this.deps.place, snapshot, allocations, request, spots)
  }

  /**
   * Stops a spot pod for an on-demand pod: it keeps its volumes, as any stopped pod does. The
   * lifecycle loop writes pods outside the capacity lock, so a write it made meanwhile is read
   * again rather than failing the on-demand pod's request.
   */
  private async preempt(unit: CapacityUnit, pod: Pod): Promise<Pod> {
    await unit.allocations.remove(ALLOCATION_KIND, pod.id)
    let current: Pod | undefined = pod
    for (let attempt = 0; attempt < 5 && current; attempt++) {
      // It stopped by itself meanwhile (its process exited): nothing is left to take.
      if (!holdsResources(current.status)) return current
      const stopped: Pod = {
        ...this.withStatus(current, 'EXITED', PREEMPTED_REASON),
        gpuIndices: [],
        version: current.version + 1,
      }
      if (await unit.pods.update(stopped)) return stopped
      current = await unit.pods.findById(pod.id)
    }
    throw new AppError(
      'INVALID_STATE',
      `spot pod ${pod.id} changed while it was preempted; try again`,
    )
  }

  /** After the unit that preempted them: their events, and the lifecycle stops their workloads. */
  private async announcePreempted(preempted: Pod[], forPodId: string): Promise<void> {
    for (const pod of preempted) {
      if (pod.statusReason !== PREEMPTED_REASON) continue
      await this.deps.store.events.append(
        pod.id,
        this.now,
        `stopped: preempted (on-demand pod ${forPodId} needed its GPUs)`,
      )
      this.deps.nudge(pod.id)
    }
  }

  private async nextGlobalIp(
    unit: CapacityUnit,
    accountId: string,
    excludePodId: string,
  ): Promise<string> {
    const used = new Set(
      (await unit.pods.list({ accountId }))
        .filter((p) => p.id !== excludePodId && p.status !== 'TERMINATED' && p.globalIp)
        .map((p) => p.globalIp),
    )
    // Each account has its own private network, so ranges may repeat across accounts.
    for (let n = 2; n < 1 << 24; n++) {
      const ip = `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`
      if (!used.has(ip)) return ip
    }
    throw new AppError('NO_CAPACITY', 'the account has used every address of its private network')
  }

  /** What the host must offer: GraphQL's requirements and the REST gpu block's. */
  private requirementsOf(input: CreatePodInput): PodRequirements | undefined {
    const gpu = input.gpu
    const given: PodRequirements = { ...input.requirements }
    if (gpu) {
      if (gpu.allowedCudaVersions?.length && gpu.minCudaVersion !== undefined) {
        throw new AppError(
          'RULE_CONFLICT',
          'give gpu.allowedCudaVersions or gpu.minCudaVersion, not both',
        )
      }
      const count = gpu.count ?? 1
      if (gpu.allowedCudaVersions?.length) given.cudaVersions = gpu.allowedCudaVersions
      if (gpu.minCudaVersion !== undefined) given.minCudaVersion = gpu.minCudaVersion
      if (gpu.minVcpuCountPerGpu !== undefined) {
        given.minVcpus = Math.max(given.minVcpus ?? 0, gpu.minVcpuCountPerGpu * count)
      }
      if (gpu.minRamPerGpu !== undefined) {
        given.minMemoryGb = Math.max(given.minMemoryGb ?? 0, gpu.minRamPerGpu * count)
      }
    }
    return Object.keys(given).length > 0 ? given : undefined
  }

  /** On-demand: the catalog's price; spot: the bid. Checks both against deployCost's cap. */
  private hourlyPriceOf(input: CreatePodInput, compute: PodCompute, cloud: Cloud): number {
    const fleet = this.deps.catalog.fleet
    let price: number
    if (input.bidPerGpu === undefined) {
      price = hourlyPriceOf(fleet, compute, cloud)
    } else {
      if (compute.kind !== 'gpu') {
        throw new AppError('RULE_CONFLICT', 'spot pods are GPU pods: give a GPU type')
      }
      if (cloud !== 'COMMUNITY') {
        throw new AppError('RULE_CONFLICT', 'spot pods run in the COMMUNITY cloud only')
      }
      price = spotHourlyPrice(fleet, compute.gpuTypeId, compute.gpuCount, input.bidPerGpu)
    }
    // To the catalog's 4 decimals: a cap copied from a listed price is never a hair below it.
    const cap = input.maxHourlyCost
    if (cap !== undefined && price > Math.round(cap * 10_000) / 10_000) {
      throw new AppError(
        'RULE_CONFLICT',
        `the pod would cost ${price} USD per hour, more than the deployCost of ${cap} it was given`,
      )
    }
    return price
  }

  /** `options.trace`: the request that creates it, kept with the pod for its spans. */
  async create(
    accountId: string,
    input: CreatePodInput,
    options: { trace?: TraceOrigin } = {},
  ): Promise<Pod> {
    const began = this.deps.clock.now().getTime()
    const draft = await this.draft(accountId, input)
    if (options.trace) draft.trace = options.trace
    await this.deps.spendGuard?.assertWithinSpendLimit(
      accountId,
      draft.hourlyPrice,
      `create pod "${draft.name}"`,
    )
    const limits = await this.quotasOf(accountId)
    const preempted: Pod[] = []
    const pod = await this.deps.store.exclusive(async (unit) => {
      preempted.length = 0
      await this.checkQuota(
        unit,
        accountId,
        limits,
        quotaUseOf(draft, { asNewPod: true }),
        `create pod "${draft.name}"`,
      )
      const placed = await this.reserve(unit, draft, this.placementRequest(draft), {
        suggestOtherCloud: true,
        preempted,
      })
      if (draft.globalNetworking) {
        placed.globalIp = await this.nextGlobalIp(unit, accountId, draft.id)
      }
      await unit.pods.insert(placed)
      return placed
    })
    await this.deps.store.events.append(
      pod.id,
      pod.createdAt,
      `created; placed on host ${pod.hostId} in ${pod.dataCenterId}`,
    )
    await this.announcePreempted(preempted, pod.id)
    if (this.deps.tracing) tracePodCreated(this.deps.tracing, pod, began)
    this.deps.nudge(pod.id)
    return pod
  }

  /**
   * The pod a create would make, checked and with its template applied, neither placed nor
   * stored.
   */
  async draft(accountId: string, input: CreatePodInput): Promise<Pod> {
    const requirements = this.requirementsOf(input)
    const template = await this.templateOf(accountId, input.templateId)
    const image = input.image ?? template?.image
    if (image === undefined) {
      throw new AppError(
        'VALIDATION_FAILED',
        'the request failed validation: body.image: is required',
        {
          errors: ['body.image: is required'],
        },
      )
    }
    const compute = await this.computeOf(input, template)
    // Body fields override the template's; env is merged, the body's variables winning. A
    // template's persistent mount is left out of CPU pods, which cannot have one.
    const templateMounts = compute.kind === 'gpu' ? (template?.mounts ?? {}) : {}
    const mounts: PodMounts = input.mounts ?? templateMounts
    checkMountsOnCreate(mounts, compute)
    // Also the template's, which may predate the rules of mount paths.
    checkMountPaths(mounts, 'mounts')
    const globalNetworking = input.globalNetworking ?? false
    this.checkDataCenters(input.dataCenterIds ?? [], globalNetworking, compute)
    const registry = input.registry !== undefined ? input.registry : (template?.registry ?? null)
    await this.checkRegistry(accountId, registry)
    const dataCenterIds = await this.networkDataCenters(
      accountId,
      mounts,
      input.dataCenterIds ?? [],
    )

    const now = this.now
    const cloud = input.cloud ?? DEFAULT_CLOUD
    const id = newId.pod()
    const env = { ...template?.env, ...input.env }
    // startJupyter: RunPod's images start Jupyter with this password; the owner reads it in env.
    if ((input.startJupyter ?? template?.startJupyter ?? false) && !env.JUPYTER_PASSWORD) {
      env.JUPYTER_PASSWORD = newId.secret(JUPYTER_PASSWORD_LENGTH)
    }
    const draft: Pod = {
      id,
      accountId,
      name: input.name,
      image,
      args: input.args ?? template?.args ?? '',
      disk: input.disk ?? template?.disk ?? DEFAULT_CONTAINER_DISK_GB,
      ports: input.ports ?? template?.ports ?? [],
      env,
      registry,
      compute,
      mounts,
      ...(requirements ? { requirements } : {}),
      startSsh: input.startSsh ?? template?.startSsh ?? false,
      ...(input.bidPerGpu !== undefined ? { spot: { bidPerGpu: input.bidPerGpu } } : {}),
      cloud,
      dataCenterIds,
      dataCenterId: null,
      hostId: null,
      // The pod names its template (the seed specification's Pod table), but its settings were
      // copied above: later edits of the template do not reach the pod.
      templateId: template?.id ?? null,
      locked: false,
      globalNetworking,
      globalIp: null,
      status: 'PROVISIONING',
      statusReason: null,
      hourlyPrice: this.hourlyPriceOf(input, compute, cloud),
      gpuIndices: [],
      portMappings: [],
      generation: 1,
      crashRestarts: 0,
      createdAt: now,
      startedAt: null,
      lastStatusChange: now,
      terminatedAt: null,
      version: 1,
    }
    return draft
  }

  /**
   * Creates the pods together in one data center, or none of them (an instant cluster): each
   * data center the first draft allows (any, in the fleet's order, when it names none) is tried
   * with every pod placed against what the earlier ones took; the first that holds them all
   * wins. `complete` finishes each pod once placed (its address known), before it is stored.
   * 409 naming each data center's shortfall when none can hold them all.
   */
  async createTogether(
    accountId: string,
    drafts: Pod[],
    complete: (pod: Pod, index: number, earlier: Pod[]) => Pod,
  ): Promise<Pod[]> {
    const began = this.deps.clock.now().getTime()
    const first = drafts[0]
    if (!first) return []
    await this.deps.spendGuard?.assertWithinSpendLimit(
      accountId,
      drafts.reduce((sum, pod) => sum + pod.hourlyPrice, 0),
      `create ${drafts.length} pods together`,
    )
    const fleet = this.deps.catalog.fleet
    const candidates =
      first.dataCenterIds.length > 0 ? first.dataCenterIds : fleet.dataCenters.map((dc) => dc.id)
    const limits = await this.quotasOf(accountId)
    const pods = await this.deps.store.exclusive(async (unit) => {
      await this.checkQuota(
        unit,
        accountId,
        limits,
        drafts
          .map((draft) => quotaUseOf(draft, { asNewPod: true }))
          .reduce((sum, one) => ({
            pods: (sum.pods ?? 0) + (one.pods ?? 0),
            gpus: (sum.gpus ?? 0) + (one.gpus ?? 0),
          })),
        `create ${drafts.length} pods together`,
      )
      const taken = await unit.allocations.list()
      const shortfalls: string[] = []
      for (const dataCenterId of candidates) {
        const tentative: Allocation[] = []
        let shortfall: string | undefined
        for (const draft of drafts) {
          const result = this.deps.place(
            {
              hosts: this.deps.catalog.hosts(),
              dataCenters: fleet.dataCenters,
              allocations: [...taken, ...tentative],
              unavailable: this.deps.catalog.unavailable(),
              // As for one pod: a GPU withdrawn for its health takes no cluster pod either.
              withdrawnGpus: this.deps.catalog.withdrawnGpus(),
            },
            { ...this.placementRequest(draft), dataCenterIds: [dataCenterId] },
          )
          if (!result.ok) {
            shortfall = result.detail
            break
          }
          tentative.push(this.allocationOf(draft, result.placement))
        }
        if (shortfall !== undefined) {
          shortfalls.push(`${dataCenterId}: ${shortfall}`)
          continue
        }
        const stored: Pod[] = []
        for (const [index, draft] of drafts.entries()) {
          const allocation = tentative[index]!
          await unit.allocations.insert(allocation)
          let pod: Pod = {
            ...draft,
            hostId: allocation.hostId,
            dataCenterId,
            gpuIndices: allocation.gpuIndices,
          }
          if (pod.globalNetworking) pod.globalIp = await this.nextGlobalIp(unit, accountId, pod.id)
          pod = complete(pod, index, stored)
          await unit.pods.insert(pod)
          stored.push(pod)
        }
        return stored
      }
      throw new AppError(
        'NO_CAPACITY',
        `no data center can hold all ${drafts.length} pods together: ${shortfalls.join('; ')}`,
      )
    })
    for (const pod of pods) {
      await this.deps.store.events.append(
        pod.id,
        pod.createdAt,
        `created; placed on host ${pod.hostId} in ${pod.dataCenterId}`,
      )
      if (this.deps.tracing) tracePodCreated(this.deps.tracing, pod, began)
      this.deps.nudge(pod.id)
    }
    return pods
  }

  /** A pod of the account; another account's pod, or a purged one, is 404. */
  async get(accountId: string, id: string): Promise<Pod> {
    const pod = await this.deps.store.pods.findById(id)
    if (!pod || pod.accountId !== accountId) throw new AppError('NOT_FOUND', `pod ${id} not found`)
    return pod
  }

  /**
   * Lists the account's pods; TERMINATED ones only when the status filter asks for them, the
   * nodes of instant clusters only when `includeClusterPods` does (RunPod's v2 default).
   */
  async list(
    accountId: string,
    filter: { statuses?: PodStatus[]; name?: string; includeClusterPods?: boolean } = {},
  ): Promise<Pod[]> {
    const statuses =
      filter.statuses && filter.statuses.length > 0
        ? filter.statuses
        : (['PROVISIONING', 'STARTING', 'RUNNING', 'EXITED', 'ERROR'] as PodStatus[])
    const pods = await this.deps.store.pods.list({
      accountId,
      statuses,
      ...(filter.name ? { name: filter.name } : {}),
    })
    return filter.includeClusterPods ? pods : pods.filter((pod) => !pod.cluster)
  }

  /** A cluster's pods go only with their cluster (RunPod's v2 contract: 409 otherwise). */
  private checkNotClusterNode(pod: Pod): void {
    if (!pod.cluster) return
    throw new AppError(
      'INVALID_STATE',
      `pod ${pod.id} is node ${pod.cluster.rank} of cluster ${pod.cluster.id}: delete the cluster (DELETE /v2/clusters/${pod.cluster.id}) to terminate its pods`,
    )
  }

  /**
   * The CUDA version of the host a GPU pod is placed on (kept while it is stopped, as it resumes
   * there); null for CPU pods, pods not placed and hosts without one (AMD).
   */
  hostCudaVersionOf(pod: Pod): string | null {
    if (pod.compute.kind !== 'gpu' || pod.hostId === null) return null
    return this.hostById(pod.hostId)?.gpu?.cudaVersion ?? null
  }

  // Every GPU pod's answer names its host's CUDA version: a scan of 10 000 hosts per read cost
  // more than the read. Rebuilt when the fleet's host list is replaced (a fleet reload).
  private hostsIndexed: readonly Host[] | undefined
  private hostIndex = new Map<string, Host>()
  private hostById(id: string): Host | undefined {
    const hosts = this.deps.catalog.fleet.hosts
    if (this.hostsIndexed !== hosts) {
      this.hostIndex = new Map(hosts.map((h) => [h.id, h]))
      this.hostsIndexed = hosts
    }
    return this.hostIndex.get(id)
  }

  runtimeOf(pod: Pod): Promise<PodRuntime | null> {
    return pod.status === 'RUNNING' ? this.deps.runtime.runtimeOf(pod) : Promise.resolve(null)
  }

  /** Writes a changed pod; a concurrent write by the lifecycle loop makes us re-read and retry. */
  private async mutate(
    accountId: string,
    id: string,
    change: (pod: Pod, unit: CapacityUnit) => Promise<Pod | undefined>,
  ): Promise<Pod> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const result = await this.deps.store.exclusive(async (unit) => {
        const current = await unit.pods.findById(id)
        if (!current || current.accountId !== accountId)
          throw new AppError('NOT_FOUND', `pod ${id} not found`)
        const next = await change(current, unit)
        if (!next) return { pod: current, before: current, written: true }
        const stored: Pod = { ...next, version: current.version + 1 }
        return { pod: stored, before: current, written: await unit.pods.update(stored) }
      })
      if (result.written) {
        if (this.deps.tracing) {
          tracePodStatus(
            this.deps.tracing,
            result.before,
            result.pod,
            this.deps.clock.now().getTime(),
          )
        }
        this.deps.nudge(id)
        return result.pod
      }
    }
    throw new AppError('INVALID_STATE', `pod ${id} is changing too often to update; try again`)
  }

  private withStatus(pod: Pod, status: PodStatus, reason: string | null): Pod {
    return { ...pod, status, statusReason: reason, lastStatusChange: this.now }
  }

  /**
   * `cudaVersions` (GraphQL podResume's allowedCudaVersions) replaces the pod's CUDA
   * requirement when a stopped pod is placed again; the pod keeps it for later starts.
   * `stopWhileProvisioning` (GraphQL podStop, which sets a desired state) lets `stop` reach a
   * pod that is still PROVISIONING: it goes to EXITED and its workload is never started or is
   * stopped; REST keeps the specification's actions, where PROVISIONING has no `stop`.
   */
  async act(
    accountId: string,
    id: string,
    action: PodActionRequest,
    options: { cudaVersions?: string[]; stopWhileProvisioning?: boolean; bidPerGpu?: number } = {},
  ): Promise<Pod> {
    if ((action === 'start' || action === 'reset') && this.deps.spendGuard) {
      const current = await this.get(accountId, id)
      if (!holdsResources(current.status)) {
        // A spot pod resumed at a new bid costs that bid from now on, not the one it stopped at.
        const resumed = withBid(this.deps.catalog.fleet, current, options.bidPerGpu)
        await this.deps.spendGuard.assertWithinSpendLimit(
          accountId,
          resumed.hourlyPrice,
          `start pod ${id}`,
        )
      }
    }
    const limits = action === 'start' || action === 'reset' ? await this.quotasOf(accountId) : null
    const preempted: Pod[] = []
    const pod = await this.mutate(accountId, id, async (current, unit) => {
      preempted.length = 0
      const desiredStop =
        action === 'stop' && options.stopWhileProvisioning && current.status === 'PROVISIONING'
      checkAction(desiredStop ? { ...current, status: 'STARTING' } : current, action)
      switch (action) {
        case 'start':
        case 'reset':
          if (current.status === 'PROVISIONING') return undefined
          if (current.status === 'RUNNING') return this.restart(current)
          // A stopped pod still counts as a pod; starting it takes its GPUs again.
          await this.checkQuota(
            unit,
            accountId,
            limits,
            quotaUseOf(current, { asNewPod: false }),
            `start pod ${id}`,
          )
          return this.restartFromStopped(
            withBid(
              this.deps.catalog.fleet,
              withCudaVersions(current, options.cudaVersions),
              options.bidPerGpu,
            ),
            unit,
            preempted,
          )
        case 'restart':
          return this.restart(current)
        case 'stop':
          await unit.allocations.remove(ALLOCATION_KIND, current.id)
          return { ...this.withStatus(current, 'EXITED', 'stopped by request'), gpuIndices: [] }
        case 'terminate':
          this.checkNotClusterNode(current)
          return this.terminated(current, unit)
      }
    })
    await this.deps.store.events.append(pod.id, this.now, `${action} requested; now ${pod.status}`)
    await this.announcePreempted(preempted, pod.id)
    return pod
  }

  /**
   * Stops every pod of the account that holds resources, `locked` or not (a lock guards against
   * people, not against an account out of credits); volumes and disks stay. Returns their ids.
   */
  async stopAll(accountId: string, reason: string): Promise<string[]> {
    const stopped: string[] = []
    const holding = await this.deps.store.pods.list({
      accountId,
      statuses: ['PROVISIONING', 'STARTING', 'RUNNING'],
    })
    for (const { id } of holding) {
      let changed = false
      const pod = await this.mutate(accountId, id, async (current, unit) => {
        changed = holdsResources(current.status)
        if (!changed) return undefined
        await unit.allocations.remove(ALLOCATION_KIND, current.id)
        return { ...this.withStatus(current, 'EXITED', reason), gpuIndices: [] }
      })
      if (!changed) continue
      await this.deps.store.events.append(pod.id, this.now, `stopped: ${reason}`)
      stopped.push(pod.id)
    }
    return stopped
  }

  /** `asClusterNode`: the pod's cluster is being deleted, which takes its pods with it. */
  async terminate(
    accountId: string,
    id: string,
    options: { asClusterNode?: boolean } = {},
  ): Promise<void> {
    const pod = await this.mutate(accountId, id, async (current, unit) => {
      if (current.status === 'TERMINATED') return undefined
      if (!options.asClusterNode) this.checkNotClusterNode(current)
      return this.terminated(current, unit)
    })
    await this.deps.store.events.append(pod.id, this.now, 'terminated')
  }

  private async terminated(pod: Pod, unit: CapacityUnit): Promise<Pod> {
    await unit.allocations.remove(ALLOCATION_KIND, pod.id)
    return {
      ...this.withStatus(pod, 'TERMINATED', 'terminated by request'),
      gpuIndices: [],
      terminatedAt: this.now,
    }
  }

  private restart(pod: Pod): Pod {
    return {
      ...this.withStatus(pod, 'PROVISIONING', null),
      generation: pod.generation + 1,
      crashRestarts: 0,
    }
  }

  /** EXITED or ERROR -> PROVISIONING: on the same host when it has room (a persistent mount pins it). */
  private async restartFromStopped(pod: Pod, unit: CapacityUnit, preempted: Pod[]): Promise<Pod> {
    const hosts =
      pod.mounts.persistent && pod.hostId
        ? { pinned: pod.hostId }
        : { preferred: pod.hostId ?? undefined }
    const placed = await this.reserve(unit, pod, this.placementRequest(pod, hosts), { preempted })
    return this.restart(placed)
  }

  async update(accountId: string, id: string, patch: UpdatePodInput): Promise<Pod> {
    // Outside `mutate`: its exclusive unit holds SQLite's one connection, and a read of the
    // registries through the store (not the unit) waited for it forever: one PATCH naming a
    // registry froze every request that reads the store (found by the fuzz suite).
    await this.get(accountId, id)
    await this.checkRegistry(accountId, patch.registry)
    const preempted: Pod[] = []
    const updated = await this.mutate(accountId, id, async (current, unit) => {
      preempted.length = 0
      if (current.status === 'TERMINATED') {
        throw new AppError('INVALID_STATE', `pod ${id} is TERMINATED and cannot change`)
      }
      const mounts = patchMounts(current.mounts, patch.mounts)
      checkMountPaths(mounts, 'mounts')
      const globalNetworking = patch.globalNetworking ?? current.globalNetworking
      if (globalNetworking && !current.globalNetworking) {
        this.checkDataCenters([], true, current.compute)
        const dc = this.deps.catalog.fleet.dataCenters.find((d) => d.id === current.dataCenterId)
        if (!dc?.globalNetwork) {
          throw new AppError(
            'RULE_CONFLICT',
            `globalNetworking needs a data center with global networking; ${current.dataCenterId} has none`,
          )
        }
      }
      let next: Pod = {
        ...current,
        name: patch.name ?? current.name,
        locked: patch.locked ?? current.locked,
        image: patch.image ?? current.image,
        args: patch.args ?? current.args,
        disk: patch.disk ?? current.disk,
        env: patch.env ?? current.env,
        ports: patch.ports ?? current.ports,
        registry: patch.registry === undefined ? current.registry : patch.registry,
        mounts,
        globalNetworking,
        globalIp: globalNetworking
          ? (current.globalIp ?? (await this.nextGlobalIp(unit, accountId, id)))
          : null,
      }
      const diskChanged =
        next.disk !== current.disk ||
        next.mounts.persistent?.size !== current.mounts.persistent?.size
      if (diskChanged && holdsResources(current.status) && current.hostId) {
        next = await this.reserve(
          unit,
          next,
          this.placementRequest(next, { pinned: current.hostId }),
          { preempted },
        )
      }
      const restarts = RESTARTING_FIELDS.some((field) => !sameJson(next[field], current[field]))
      if (
        restarts &&
        (current.status === 'RUNNING' ||
          current.status === 'STARTING' ||
          current.status === 'PROVISIONING')
      ) {
        next = this.restart(next)
      }
      return next
    })
    await this.announcePreempted(preempted, id)
    return updated
  }

  async readLogs(pod: Pod, source: LogSource, query: PodLogQuery): Promise<PodLogLine[]> {
    return source === 'system'
      ? this.deps.store.events.list(pod.id, query)
      : this.deps.runtime.readContainerLogs(pod, query)
  }

  async *followLogs(
    pod: Pod,
    source: LogSource,
    afterSeq: number,
    signal: AbortSignal,
  ): AsyncIterable<PodLogLine> {
    if (source === 'container') {
      yield* this.deps.runtime.followContainerLogs(pod, afterSeq, signal)
      return
    }
    yield* followEvents(this.deps.store.events, pod.id, afterSeq, signal)
  }
}
