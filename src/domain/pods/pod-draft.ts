import { checkedHostLabels } from '../catalog/placement-constraints.js'
import { AppError } from '../../shared/app-error.js'
import { newId } from '../../shared/ids.js'
import type { Cloud } from '../catalog/fleet.js'
import { findGpuType, GPU_TYPES, gpuTypeSuggestion } from '../catalog/gpu-types.js'
import type { Template } from '../templates/template.js'
import { checkMountPaths } from './mount-paths.js'
import type { Pod, PodCompute, PodMounts, PodRequirements } from './pod.js'
import {
  checkMountsOnCreate,
  DEFAULT_CLOUD,
  DEFAULT_CONTAINER_DISK_GB,
  hourlyPriceOf,
} from './pod-rules.js'
import type { CreatePodInput, PodServiceDeps } from './pod-service-contract.js'
import { spotHourlyPrice } from './spot.js'

/** Length of a generated JUPYTER_PASSWORD (letters and digits: about 119 bits). */
export const JUPYTER_PASSWORD_LENGTH = 20

/**
 * A create body made into a pod, neither placed nor stored: the template applied, the
 * catalog's offers, data centers, registry, volumes and price checked against it.
 */
export class PodDrafts {
  constructor(private readonly deps: PodServiceDeps) {}

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
        const offered = GPU_TYPES.filter((t) => this.deps.catalog.offersGpuType(t.id))
        throw new AppError(
          'RULE_CONFLICT',
          `unknown GPU type "${input.gpu.id}"${gpuTypeSuggestion(input.gpu.id, offered)}: see GET /v2/catalog/gpus`,
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

  checkDataCenters(ids: string[], globalNetworking: boolean, compute: PodCompute): void {
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

  async checkRegistry(accountId: string, registry: string | null | undefined): Promise<void> {
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

  /** What the host must offer: GraphQL's requirements and the REST gpu block's. */
  private requirementsOf(input: CreatePodInput): PodRequirements | undefined {
    const gpu = input.gpu
    const given: PodRequirements = { ...input.requirements }
    if (input.hostLabels?.length) given.hostLabels = checkedHostLabels(input.hostLabels)
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
}
