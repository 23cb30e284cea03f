import { checkedHostLabels } from '../catalog/placement-constraints.js'
import { AppError } from '../../shared/app-error.js'
import type { Clock } from '../../shared/clock.js'
import { newId } from '../../shared/ids.js'
import type { CatalogService } from '../catalog/catalog-service.js'
import { findGpuType, GPU_TYPES } from '../catalog/gpu-types.js'
import type { Template } from '../templates/template.js'
import {
  DEFAULT_CONTAINER_DISK_GB,
  DEFAULT_ENDPOINT_TIMEOUT_MS,
  DEFAULT_GPU_COUNT,
  DEFAULT_IDLE_TIMEOUT_S,
  DEFAULT_SCALER_VALUE,
  DEFAULT_WORKERS_MAX,
  ENDPOINT_CPU_FLAVORS,
  idleTimeoutProblem,
  imageOrHostsChanged,
  nextVersion,
} from './endpoint-rules.js'
import type { EndpointRepo } from './endpoint-ports.js'
import type {
  CreateEndpointInput,
  EndpointWriteOptions,
  GpuInput,
  ScalingInput,
  UpdateEndpointInput,
} from './endpoint-requests.js'
import { releaseDiff, type ReleaseRepo } from './release.js'
import {
  requestUrlsOf,
  type Endpoint,
  type EndpointCpu,
  type EndpointGpu,
  type EndpointScaling,
  type EndpointType,
  type EndpointView,
  type EndpointWorkers,
} from './endpoint.js'

export type {
  CreateEndpointInput,
  EndpointWriteOptions,
  GpuInput,
  ScalingInput,
  UpdateEndpointInput,
} from './endpoint-requests.js'

/** Other resources an endpoint may name; each lookup sees only what the account may use. */
export interface EndpointReferences {
  /** A template the account may read (own, public, built-in). */
  template(accountId: string, id: string): Promise<Template | undefined>
  registryExists(accountId: string, id: string): Promise<boolean>
  networkVolume(accountId: string, id: string): Promise<{ dataCenterId: string } | undefined>
}

export interface EndpointServiceDeps {
  repo: EndpointRepo
  catalog: CatalogService
  references: EndpointReferences
  clock: Clock
  /** The job API's base URL (`{serverless_base_url}`), known once the server listens. */
  jobApiBaseUrl: () => string
  /** Deletes every job of an endpoint (the queue's `deleteEndpointJobs`). */
  deleteJobsOf: (endpointId: string) => Promise<number>
  /** Each version is recorded as a release (`/serverless/{id}/releases`); none without it. */
  releases?: Pick<ReleaseRepo, 'insert'>
  /**
   * Called once a new version is stored, before the update is answered: the workers of older
   * versions must take no job from then on (docs/serverless-workers.md, "Endpoint updates").
   */
  onNewVersion?: (endpoint: Endpoint) => Promise<void>
  /**
   * Told, unawaited, of an endpoint created or changed where its workers' image or hosts may
   * have changed (image, registry, compute, data centers, labels): its image is pulled ahead of
   * time on the hosts that may run its workers (docs/fleet.md, "Images ahead of time").
   */
  onImageWanted?: (endpoint: Endpoint) => void
}

const conflict = (detail: string) => new AppError('RULE_CONFLICT', detail)

/** How long `get` reuses an endpoint read from the store (see `EndpointService.get`). */
export const ENDPOINT_CACHE_TTL_MS = 2_000
const ENDPOINT_CACHE_MAX = 10_000

type ContainerBlock = Pick<
  Endpoint,
  'templateId' | 'image' | 'args' | 'disk' | 'env' | 'ports' | 'registry'
>

/** Serverless endpoint definitions of an account (docs/serverless-endpoints.md). */
export class EndpointService {
  constructor(private readonly deps: EndpointServiceDeps) {}

  view(endpoint: Endpoint): EndpointView {
    return { ...endpoint, requestUrls: requestUrlsOf(this.deps.jobApiBaseUrl(), endpoint.id) }
  }

  async create(
    accountId: string,
    input: CreateEndpointInput,
    options: EndpointWriteOptions = {},
  ): Promise<EndpointView> {
    const now = this.deps.clock.now().toISOString()
    if (input.gpu && input.cpu) throw conflict('give either gpu or cpu, not both')
    if (!input.gpu && !input.cpu) {
      throw conflict('give gpu (with gpu.pools) or cpu: an endpoint needs compute')
    }
    const fields = {
      id: newId.endpoint(),
      accountId,
      ...(await this.definitionOf(accountId, input)),
      version: 1,
      createdAt: now,
      updatedAt: now,
    } satisfies Endpoint
    this.checkIdleTimeout(fields, input, options)
    await this.checkPlacement(accountId, fields)
    await this.deps.repo.insert(fields)
    await this.recordRelease(undefined, fields)
    this.deps.onImageWanted?.(fields)
    return this.view(fields)
  }

  /**
   * Replaces the whole definition, as GraphQL `saveEndpoint` with an `id` does: every field the
   * input leaves out takes its create default. The id, owner, creation time and compute type
   * stay; the version moves as for an update.
   */
  async replace(accountId: string, id: string, input: CreateEndpointInput): Promise<EndpointView> {
    const current = await this.own(accountId, id)
    if (input.gpu && input.cpu) throw conflict('give either gpu or cpu, not both')
    if (input.cpu && current.gpu) {
      throw conflict('the compute type of an endpoint cannot change: this is a GPU endpoint')
    }
    if (input.gpu && current.cpu) {
      throw conflict('the compute type of an endpoint cannot change: this is a CPU endpoint')
    }
    if (!input.gpu && !input.cpu) {
      throw conflict('give gpu (with gpu.pools) or cpu: an endpoint needs compute')
    }
    const next: Omit<Endpoint, 'version'> = {
      id,
      accountId,
      ...(await this.definitionOf(accountId, input)),
      createdAt: current.createdAt,
      updatedAt: this.deps.clock.now().toISOString(),
    }
    await this.checkPlacement(accountId, next)
    const replaced: Endpoint = { ...next, version: nextVersion(current, next) }
    await this.deps.repo.update(replaced)
    this.recent.delete(id)
    await this.recordRelease(current, replaced)
    if (replaced.version !== current.version) await this.deps.onNewVersion?.(replaced)
    if (imageOrHostsChanged(current, replaced)) this.deps.onImageWanted?.(replaced)
    return this.view(replaced)
  }

  /** A whole definition from a create input, defaults filled in. */
  private async definitionOf(accountId: string, input: CreateEndpointInput) {
    const container = await this.containerOf(accountId, input, undefined)
    const compute = await this.computeOf(input, undefined)
    return {
      name: input.name,
      type: this.checkType(input.type),
      ...container,
      ...compute,
      gpu: await this.withTemplateCuda(accountId, input, compute.gpu),
      workers: this.workersOf(input.workers, undefined),
      scaling: this.scalingOf(input.scaling),
      dataCenterIds: input.dataCenterIds ?? [],
      ...withHostLabels(checkedHostLabels(input.hostLabels ?? [])),
      networkVolumes: input.networkVolumes ?? [],
      timeout: input.timeout ?? DEFAULT_ENDPOINT_TIMEOUT_MS,
      flashboot: input.flashboot ?? 'OFF',
    } satisfies Partial<Endpoint>
  }

  async list(accountId: string): Promise<EndpointView[]> {
    return (await this.deps.repo.listByAccount(accountId)).map((e) => this.view(e))
  }

  /** The account's endpoint; another account's is 404, like one that does not exist. */
  private async own(accountId: string, id: string): Promise<Endpoint> {
    const endpoint = await this.deps.repo.findById(id)
    if (!endpoint || endpoint.accountId !== accountId) {
      throw new AppError('NOT_FOUND', `endpoint ${id} not found`)
    }
    return endpoint
  }

  /**
   * Endpoints read by `get` within ENDPOINT_CACHE_TTL_MS: every job API and worker call looks its
   * endpoint up, and the lookup cost more than the rest of a `/run` (bench/README.md). Changes
   * through this service drop the entry at once; another replica's change is seen within the
   * TTL. Reads that precede a write (`own`) always go to the store.
   */
  private readonly recent = new Map<
    string,
    { endpoint: Endpoint; until: number; view?: EndpointView; viewBase?: string }
  >()

  /** The endpoint's view; one read from the cache shares the view made at its first use. */
  async get(accountId: string, id: string): Promise<EndpointView> {
    const now = this.deps.clock.now().getTime()
    let cached = this.recent.get(id)
    if (cached !== undefined && cached.until <= now) cached = undefined
    if (cached === undefined) {
      const endpoint = await this.deps.repo.findById(id)
      if (endpoint === undefined) this.recent.delete(id)
      else {
        if (this.recent.size >= ENDPOINT_CACHE_MAX)
          this.recent.delete(this.recent.keys().next().value!)
        cached = { endpoint, until: now + ENDPOINT_CACHE_TTL_MS }
        this.recent.set(id, cached)
      }
    }
    if (!cached || cached.endpoint.accountId !== accountId) {
      throw new AppError('NOT_FOUND', `endpoint ${id} not found`)
    }
    const base = this.deps.jobApiBaseUrl()
    if (cached.view === undefined || cached.viewBase !== base) {
      cached.view = this.view(cached.endpoint)
      cached.viewBase = base
    }
    return cached.view
  }

  async update(
    accountId: string,
    id: string,
    patch: UpdateEndpointInput,
    options: EndpointWriteOptions = {},
  ): Promise<EndpointView> {
    const current = await this.own(accountId, id)
    if (patch.gpu && patch.cpu) throw conflict('give either gpu or cpu, not both')
    if (patch.gpu && current.cpu) {
      throw conflict('the compute type of an endpoint cannot change: this is a CPU endpoint')
    }
    if (patch.cpu && current.gpu) {
      throw conflict('the compute type of an endpoint cannot change: this is a GPU endpoint')
    }
    const next: Omit<Endpoint, 'version'> = {
      ...current,
      ...(patch.name !== undefined ? { name: patch.name } : {}),
      type: this.checkType(patch.type),
      ...(await this.containerOf(accountId, patch, current)),
      ...(await this.computeOf(patch, current)),
      workers: this.workersOf(patch.workers, current.workers),
      scaling: patch.scaling ? this.scalingOf(patch.scaling) : current.scaling,
      dataCenterIds: patch.dataCenterIds ?? current.dataCenterIds,
      hostLabels: undefined,
      ...withHostLabels(
        patch.hostLabels !== undefined
          ? checkedHostLabels(patch.hostLabels)
          : (current.hostLabels ?? []),
      ),
      networkVolumes: patch.networkVolumes ?? current.networkVolumes,
      timeout: patch.timeout ?? current.timeout,
      flashboot: patch.flashboot ?? current.flashboot,
      updatedAt: this.deps.clock.now().toISOString(),
    }
    this.checkIdleTimeout(next, patch, options)
    await this.checkPlacement(accountId, next)
    const updated: Endpoint = { ...next, version: nextVersion(current, next) }
    await this.deps.repo.update(updated)
    this.recent.delete(id)
    await this.recordRelease(current, updated)
    if (updated.version !== current.version) await this.deps.onNewVersion?.(updated)
    if (imageOrHostsChanged(current, updated)) this.deps.onImageWanted?.(updated)
    return this.view(updated)
  }

  /**
   * Deletes the definition and every job of it, queued, running or finished, with their streams
   * (as RunPod drops them; docs/serverless-endpoints.md). The definition goes first: from then on
   * every job API and worker call for the endpoint is 404 (401 with its worker key). A `/run`
   * that passed its endpoint check just before may still store a job after this; nobody can
   * read or take it, and its ttl removes it.
   */
  async delete(accountId: string, id: string): Promise<void> {
    await this.own(accountId, id)
    await this.deps.repo.delete(id)
    this.recent.delete(id)
    await this.deps.deleteJobsOf(id)
  }

  /** Who uses a template, registry or volume, named for people: `endpoint <id> (<name>)`. */
  async usersOf(
    accountId: string,
    uses: { templateId?: string; registry?: string; networkVolume?: string },
  ): Promise<string[]> {
    const named = (e: Endpoint) => `endpoint ${e.id} (${e.name})`
    if (uses.templateId !== undefined) {
      // A public template may be used by other accounts' endpoints: they count, unnamed.
      const users = await this.deps.repo.listByTemplate(uses.templateId)
      const own = users.filter((e) => e.accountId === accountId).map(named)
      const others = users.length - own.length
      return others > 0 ? [...own, `${others} endpoint(s) of other accounts`] : own
    }
    return (await this.deps.repo.listByAccount(accountId))
      .filter(
        (e) =>
          (uses.registry !== undefined && e.registry === uses.registry) ||
          (uses.networkVolume !== undefined && e.networkVolumes.includes(uses.networkVolume)),
      )
      .map(named)
  }

  /** A new version is a release: what changed, and when. */
  private async recordRelease(before: Endpoint | undefined, after: Endpoint): Promise<void> {
    if (!this.deps.releases || (before && before.version === after.version)) return
    await this.deps.releases.insert({
      id: newId.release(),
      endpointId: after.id,
      version: after.version,
      createdAt: after.updatedAt,
      diff: releaseDiff(before, after),
    })
  }

  private checkIdleTimeout(
    endpoint: Pick<Endpoint, 'scaling'>,
    input: UpdateEndpointInput,
    options: EndpointWriteOptions,
  ): void {
    if (!options.refuseIdleTimeoutWithRequestCount) return
    const problem = idleTimeoutProblem(endpoint.scaling, input.workers?.idleTimeout !== undefined)
    if (problem) throw conflict(problem)
  }

  private checkType(type: EndpointType | undefined): 'QUEUE' {
    if (type === 'LOAD_BALANCER') throw conflict('load-balancing endpoints are not supported')
    return 'QUEUE'
  }

  /**
   * templateId or image (or both). A template's container block is copied into the endpoint
   * when it is named, the body's fields overriding it, `image` included, as for pods and as
   * RunPod's v2 CreateEndpointRequest says; later edits of the template do not reach the
   * endpoint until it names the template again. An image alone detaches it from its template.
   */
  private async containerOf(
    accountId: string,
    input: UpdateEndpointInput,
    current: Endpoint | undefined,
  ): Promise<ContainerBlock> {
    let base: ContainerBlock
    if (input.templateId !== undefined) {
      const template = await this.deps.references.template(accountId, input.templateId)
      if (!template) throw new AppError('NOT_FOUND', `template "${input.templateId}" not found`)
      if (!template.serverless) {
        const problem = `body.templateId: template ${template.id} is a pod template (serverless: false); an endpoint needs a serverless template`
        throw new AppError('VALIDATION_FAILED', `the request failed validation: ${problem}`, {
          errors: [problem],
        })
      }
      base = {
        templateId: template.id,
        image: input.image ?? template.image,
        args: template.args,
        disk: template.disk,
        env: template.env,
        ports: template.ports,
        registry: template.registry,
      }
    } else if (current) {
      base = {
        templateId: input.image !== undefined ? null : current.templateId,
        image: input.image ?? current.image,
        args: current.args,
        disk: current.disk,
        env: current.env,
        ports: current.ports,
        registry: current.registry,
      }
    } else {
      if (input.image === undefined) throw conflict('give either templateId or image')
      base = {
        templateId: null,
        image: input.image,
        args: '',
        disk: DEFAULT_CONTAINER_DISK_GB,
        env: {},
        ports: [],
        registry: null,
      }
    }
    const block: ContainerBlock = {
      ...base,
      ...(input.args !== undefined ? { args: input.args } : {}),
      ...(input.disk !== undefined ? { disk: input.disk } : {}),
      // A template's env is merged per key, the body's variables winning (v2 contract).
      ...(input.env !== undefined
        ? { env: input.templateId !== undefined ? { ...base.env, ...input.env } : input.env }
        : {}),
      ...(input.ports !== undefined ? { ports: input.ports } : {}),
      ...(input.registry !== undefined ? { registry: input.registry } : {}),
    }
    if (block.registry && block.registry !== current?.registry) {
      if (!(await this.deps.references.registryExists(accountId, block.registry))) {
        throw conflict(`registry "${block.registry}" not found`)
      }
    }
    return block
  }

  /**
   * A GPU endpoint made from a template whose allowedCudaVersions the request does not replace
   * (it gives neither CUDA field) takes the template's, as a pod made from it does.
   */
  private async withTemplateCuda(
    accountId: string,
    input: CreateEndpointInput,
    gpu: EndpointGpu | null,
  ): Promise<EndpointGpu | null> {
    if (!gpu || input.templateId === undefined) return gpu
    if (input.gpu?.allowedCudaVersions !== undefined || input.gpu?.minCudaVersion !== undefined) {
      return gpu
    }
    const template = await this.deps.references.template(accountId, input.templateId)
    const versions = template?.allowedCudaVersions ?? []
    return versions.length > 0 ? { ...gpu, allowedCudaVersions: [...versions] } : gpu
  }

  private async computeOf(
    input: UpdateEndpointInput,
    current: Endpoint | undefined,
  ): Promise<{ gpu: EndpointGpu | null; cpu: EndpointCpu[] | null }> {
    if (input.gpu) {
      return { gpu: this.gpuOf(input.gpu, current?.gpu ?? undefined), cpu: null }
    }
    if (input.cpu) return { gpu: null, cpu: await this.cpuOf(input.cpu) }
    return { gpu: current!.gpu, cpu: current!.cpu }
  }

  private gpuOf(input: GpuInput, current: EndpointGpu | undefined): EndpointGpu {
    const pools = input.pools ?? current?.pools ?? []
    if (pools.length === 0) throw conflict('gpu.pools must name at least one GPU pool')
    // Pools and exclusions are one selection: new pools without exclusions clear them (v2).
    const excludedTypes = (
      input.excludedTypes ?? (input.pools !== undefined ? [] : (current?.excludedTypes ?? []))
    ).map((id) => id.trim())
    for (const id of excludedTypes) {
      const type = findGpuType(id)
      if (!type) {
        throw conflict(`gpu.excludedTypes: unknown GPU type "${id}": see GET /v2/catalog/gpus`)
      }
      // An exclusion outside the pools would filter nothing: most likely a typo of the caller.
      if (type.pool === null || !pools.includes(type.pool)) {
        throw conflict(
          `gpu.excludedTypes: "${id}" is not a GPU type of the pools ${pools.join(', ')} (it is in ${type.pool ?? 'no pool'})`,
        )
      }
    }
    const left = GPU_TYPES.filter(
      (t) => t.pool !== null && pools.includes(t.pool) && !excludedTypes.includes(t.id),
    )
    if (left.length === 0) {
      throw conflict(`gpu.excludedTypes exclude every GPU type of the pools ${pools.join(', ')}`)
    }
    const gpu: EndpointGpu = {
      pools: [...new Set(pools)],
      excludedTypes: [...new Set(excludedTypes)],
      count: input.count ?? current?.count ?? DEFAULT_GPU_COUNT,
      // Giving one of the two CUDA constraints replaces the other.
      allowedCudaVersions:
        input.allowedCudaVersions ??
        (input.minCudaVersion !== undefined ? [] : (current?.allowedCudaVersions ?? [])),
      minCudaVersion:
        input.minCudaVersion !== undefined
          ? input.minCudaVersion
          : input.allowedCudaVersions !== undefined
            ? null
            : (current?.minCudaVersion ?? null),
    }
    if (gpu.allowedCudaVersions.length > 0 && gpu.minCudaVersion !== null) {
      throw conflict('give gpu.allowedCudaVersions or gpu.minCudaVersion, not both')
    }
    return gpu
  }

  private async cpuOf(input: { id: string; vcpuCount: number }[]): Promise<EndpointCpu[]> {
    if (input.length === 0) throw conflict('cpu must name at least one CPU flavor')
    const seen = new Set<string>()
    const out: EndpointCpu[] = []
    for (const { id, vcpuCount } of input) {
      if (!(ENDPOINT_CPU_FLAVORS as readonly string[]).includes(id)) {
        throw conflict(
          `CPU flavor "${id}" is not offered for endpoints; they accept ${ENDPOINT_CPU_FLAVORS.join(', ')}`,
        )
      }
      if (seen.has(id)) throw conflict(`cpu names flavor ${id} twice`)
      seen.add(id)
      const flavor = await this.deps.catalog.getCpuType(id)
      if (!flavor) throw conflict(`unknown CPU flavor "${id}": see GET /v2/catalog/cpus`)
      if (!flavor.vcpuCounts.includes(vcpuCount)) {
        throw conflict(
          `CPU flavor ${id} does not offer ${vcpuCount} vCPUs; it offers ${flavor.vcpuCounts.join(', ') || 'none'}`,
        )
      }
      out.push({ id, vcpuCount, memory: Math.round(vcpuCount * flavor.ramGbPerVcpu) })
    }
    return out
  }

  private workersOf(
    input: Partial<EndpointWorkers> | undefined,
    current: EndpointWorkers | undefined,
  ): EndpointWorkers {
    const workers: EndpointWorkers = {
      min: input?.min ?? current?.min ?? 0,
      max: input?.max ?? current?.max ?? Math.max(DEFAULT_WORKERS_MAX, input?.min ?? 0),
      idleTimeout: input?.idleTimeout ?? current?.idleTimeout ?? DEFAULT_IDLE_TIMEOUT_S,
    }
    if (workers.max < workers.min) {
      throw conflict(`workers.max (${workers.max}) must be at least workers.min (${workers.min})`)
    }
    return workers
  }

  private scalingOf(input: ScalingInput | undefined): EndpointScaling {
    if (!input) return { type: 'QUEUE_DELAY', queueDelay: DEFAULT_SCALER_VALUE }
    if (input.type === 'QUEUE_DELAY') {
      if (input.requestCount !== undefined) {
        throw conflict('scaling.requestCount applies to REQUEST_COUNT scaling, not QUEUE_DELAY')
      }
      return { type: 'QUEUE_DELAY', queueDelay: input.queueDelay ?? DEFAULT_SCALER_VALUE }
    }
    if (input.queueDelay !== undefined) {
      throw conflict('scaling.queueDelay applies to QUEUE_DELAY scaling, not REQUEST_COUNT')
    }
    return { type: 'REQUEST_COUNT', requestCount: input.requestCount ?? DEFAULT_SCALER_VALUE }
  }

  /**
   * Data centers must exist; each network volume must be the account's, in one of the data
   * centers when they are given, and at most one per data center (a worker mounts the volume
   * of the data center it runs in).
   */
  private async checkPlacement(
    accountId: string,
    endpoint: Pick<Endpoint, 'dataCenterIds' | 'networkVolumes'>,
  ): Promise<void> {
    const known = this.deps.catalog.fleet.dataCenters
    for (const id of endpoint.dataCenterIds) {
      if (!known.some((dc) => dc.id === id)) {
        throw conflict(`unknown data center "${id}": see GET /v2/catalog/datacenters`)
      }
    }
    const byDataCenter = new Map<string, string>()
    for (const volumeId of endpoint.networkVolumes) {
      const volume = await this.deps.references.networkVolume(accountId, volumeId)
      if (!volume) throw conflict(`network volume "${volumeId}" not found in your account`)
      const dc = volume.dataCenterId
      if (endpoint.dataCenterIds.length > 0 && !endpoint.dataCenterIds.includes(dc)) {
        throw conflict(
          `network volume ${volumeId} is in ${dc}, which is not among the endpoint's data centers (${endpoint.dataCenterIds.join(', ')})`,
        )
      }
      const other = byDataCenter.get(dc)
      if (other !== undefined) {
        throw conflict(
          other === volumeId
            ? `networkVolumes names ${volumeId} twice`
            : `network volumes ${other} and ${volumeId} are both in ${dc}; give at most one per data center`,
        )
      }
      byDataCenter.set(dc, volumeId)
    }
  }
}

/** Kept only when there are some: an endpoint that asks none reads as it did before. */
const withHostLabels = (labels: string[]) => (labels.length > 0 ? { hostLabels: labels } : {})
