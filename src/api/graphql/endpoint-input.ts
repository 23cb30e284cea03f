import type { DataCenter } from '../../domain/catalog/fleet.js'
import { GPU_POOLS, GPU_TYPES, type GpuPool } from '../../domain/catalog/gpu-types.js'
import type { Endpoint, FlashbootMode } from '../../domain/serverless/endpoint.js'
import type { CreateEndpointInput } from '../../domain/serverless/endpoint-service.js'
import { AppError } from '../../shared/app-error.js'
import { envOf, parseInstanceId, Problems, type Nullable } from './pod-input.js'

/** GraphQL `EndpointInput` as runpod-python and runpodctl send it (wire-compat §6.3). */
export type EndpointInput = Nullable<{
  id: string
  name: string
  templateId: string
  template: Nullable<{
    name: string
    imageName: string
    containerDiskInGb: number
    dockerArgs: string
    env: Array<{ key: string; value?: string | null } | null>
  }>
  hubReleaseId: string
  gpuIds: string
  gpuCount: number
  instanceIds: Array<string | null>
  workersMin: number
  workersMax: number
  workersStandby: number
  locations: string
  networkVolumeId: string
  networkVolumeIds: Array<{ networkVolumeId?: string | null } | null>
  idleTimeout: number
  scalerType: string
  scalerValue: number
  executionTimeoutMs: number
  minCudaVersion: string
  allowedCudaVersions: Array<string | null>
  flashBootType: FlashbootMode
  modelReferences: Array<string | null>
  type: 'QB' | 'LB'
  /** podyard's extension: labels the hosts of its workers must have; absent keeps them. */
  hostLabels: Array<string | null>
}>

/** `"a, b,,c"` -> `["a", "b", "c"]`; runpod-python sends `""` for "none". */
function commaList(value: string | null | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')
}

/** A list whose items may themselves be comma lists (runpod-python sends one comma string). */
function flatCommaList(values: Array<string | null> | null | undefined): string[] {
  return (values ?? []).flatMap((value) => commaList(value))
}

const isPool = (id: string): id is GpuPool => (GPU_POOLS as readonly string[]).includes(id)

/**
 * `gpuIds`: pool ids (`"AMPERE_16,ADA_24"`), GPU type ids (`"NVIDIA GeForce RTX 4090"`, which
 * means that type's pool with its other types excluded), and `-<GPU type id>` to exclude a
 * type. Unknown entries are validation problems.
 */
export function gpuSelectionOf(
  gpuIds: string,
  problems: Problems,
): { pools: GpuPool[]; excludedTypes: string[] } {
  const pools = new Set<GpuPool>()
  const excluded = new Set<string>()
  const onlyTypes = new Map<GpuPool, Set<string>>()
  for (const entry of commaList(gpuIds)) {
    if (isPool(entry)) {
      pools.add(entry)
      continue
    }
    const exclude = entry.startsWith('-')
    const typeId = exclude ? entry.slice(1).trim() : entry
    const type = GPU_TYPES.find((t) => t.id === typeId)
    if (!type) {
      problems.add('gpuIds', `"${entry}" is neither a serverless GPU pool nor a GPU type id`)
    } else if (type.pool === null) {
      problems.add('gpuIds', `${type.id} is not offered for serverless (it is in no GPU pool)`)
    } else if (exclude) {
      excluded.add(type.id)
    } else {
      onlyTypes.set(type.pool, (onlyTypes.get(type.pool) ?? new Set()).add(type.id))
    }
  }
  for (const [pool, types] of onlyTypes) {
    // A whole pool named as well wins over single types of it.
    if (pools.has(pool)) continue
    pools.add(pool)
    for (const other of GPU_TYPES) {
      if (other.pool === pool && !types.has(other.id)) excluded.add(other.id)
    }
  }
  if (pools.size === 0 && problems.lines.every((line) => !line.startsWith('input.gpuIds'))) {
    problems.add('gpuIds', 'name at least one GPU pool (e.g. AMPERE_16) or GPU type')
  }
  return { pools: [...pools], excludedTypes: [...excluded] }
}

/**
 * `locations`: data center ids, or a prefix of them such as a country (`US`) or region
 * (`EU-RO`) meaning every data center under it.
 */
export function dataCentersOf(
  locations: string,
  dataCenters: readonly DataCenter[],
  problems: Problems,
): string[] {
  const out = new Set<string>()
  for (const location of commaList(locations)) {
    const exact = dataCenters.find((dc) => dc.id === location)
    const matching = exact ? [exact] : dataCenters.filter((dc) => dc.id.startsWith(`${location}-`))
    if (matching.length === 0) {
      problems.add(
        'locations',
        `"${location}" is no data center id nor a prefix of one: list them with dataCenters`,
      )
    }
    for (const dc of matching) out.add(dc.id)
  }
  return [...out]
}

/** saveEndpoint's input -> the domain's create input (also used, whole, for a replace). */
export function endpointDefinition(
  input: EndpointInput,
  context: {
    dataCenters: readonly DataCenter[]
    ramGbPerVcpu: (flavorId: string) => number | undefined
  },
): CreateEndpointInput {
  const problems = new Problems()
  if (!input.name) problems.add('name', 'is required')
  if (input.hubReleaseId) {
    problems.add('hubReleaseId', 'hub releases are not offered here: give templateId or template')
  }
  if (input.type === 'LB') problems.add('type', 'load-balancing endpoints are not supported')
  if (input.templateId && input.template) {
    problems.add('template', 'give either templateId or template, not both')
  }
  if (!input.templateId && !input.template?.imageName) {
    problems.add('templateId', 'is required unless template gives an imageName')
  }
  if (flatCommaList(input.modelReferences).length > 0) {
    problems.add('modelReferences', 'model references are not supported')
  }
  const cpuIds = flatCommaList(input.instanceIds)
  if (cpuIds.length > 0 && input.gpuIds) {
    problems.add('instanceIds', 'give gpuIds (a GPU endpoint) or instanceIds (CPU), not both')
  }
  const gpu =
    cpuIds.length === 0 ? gpuSelectionOf(input.gpuIds ?? 'AMPERE_16', problems) : undefined
  const dataCenterIds = dataCentersOf(input.locations ?? '', context.dataCenters, problems)
  problems.throwIfAny()

  const volumes = [
    ...commaList(input.networkVolumeId),
    ...(input.networkVolumeIds ?? []).flatMap((v) => commaList(v?.networkVolumeId)),
  ]
  const allowedCudaVersions = flatCommaList(input.allowedCudaVersions)
  const scalerType = input.scalerType ?? 'QUEUE_DELAY'
  if (scalerType !== 'QUEUE_DELAY' && scalerType !== 'REQUEST_COUNT') {
    throw new AppError(
      'VALIDATION_FAILED',
      `the request failed validation: input.scalerType: must be QUEUE_DELAY or REQUEST_COUNT`,
      { errors: ['input.scalerType: must be QUEUE_DELAY or REQUEST_COUNT'] },
    )
  }
  const scalerValue = input.scalerValue ?? undefined
  const template = input.template
  return {
    name: input.name!,
    ...(input.templateId
      ? { templateId: input.templateId }
      : {
          image: template!.imageName!,
          ...(template?.dockerArgs ? { args: template.dockerArgs } : {}),
          ...(template?.containerDiskInGb ? { disk: template.containerDiskInGb } : {}),
          ...(template?.env ? { env: envOf(template.env) } : {}),
        }),
    ...(gpu
      ? {
          gpu: {
            pools: gpu.pools,
            excludedTypes: gpu.excludedTypes,
            ...(input.gpuCount ? { count: input.gpuCount } : {}),
            ...(allowedCudaVersions.length > 0 ? { allowedCudaVersions } : {}),
            ...(input.minCudaVersion ? { minCudaVersion: input.minCudaVersion } : {}),
          },
        }
      : { cpu: cpuIds.map((id) => cpuOf(id, context.ramGbPerVcpu)) }),
    workers: {
      ...(input.workersMin !== null && input.workersMin !== undefined
        ? { min: input.workersMin }
        : {}),
      ...(input.workersMax !== null && input.workersMax !== undefined
        ? { max: input.workersMax }
        : {}),
      ...(input.idleTimeout ? { idleTimeout: input.idleTimeout } : {}),
    },
    scaling:
      scalerType === 'QUEUE_DELAY'
        ? { type: 'QUEUE_DELAY', ...(scalerValue ? { queueDelay: scalerValue } : {}) }
        : { type: 'REQUEST_COUNT', ...(scalerValue ? { requestCount: scalerValue } : {}) },
    dataCenterIds,
    ...(input.hostLabels ? { hostLabels: input.hostLabels.filter((l): l is string => !!l) } : {}),
    networkVolumes: [...new Set(volumes)],
    ...(input.executionTimeoutMs ? { timeout: input.executionTimeoutMs } : {}),
    ...(input.flashBootType ? { flashboot: input.flashBootType } : {}),
  }
}

function cpuOf(
  instanceId: string,
  ramGbPerVcpu: (flavorId: string) => number | undefined,
): { id: string; vcpuCount: number } {
  const { flavorId, vcpuCount } = parseInstanceId(instanceId, ramGbPerVcpu, 'instanceIds')
  return { id: flavorId, vcpuCount }
}

/** `gpuIds` as saveEndpoint takes it back: the pools, then `-<type>` for each exclusion. */
function gpuIdsOf(endpoint: Endpoint): string | null {
  if (!endpoint.gpu) return null
  return [...endpoint.gpu.pools, ...endpoint.gpu.excludedTypes.map((id) => `-${id}`)].join(',')
}

/**
 * An endpoint as `saveEndpoint`, `updateEndpointTemplate` and `myself { endpoints }` answer it
 * (wire-compat §6.2, §6.3). `aiKey` is resolved by the caller (it is a secret of the owner).
 */
export function endpointView(endpoint: Endpoint) {
  const scalerValue =
    endpoint.scaling.type === 'QUEUE_DELAY'
      ? endpoint.scaling.queueDelay
      : endpoint.scaling.requestCount
  const networkVolumeId = endpoint.networkVolumes[0] ?? null
  return {
    id: endpoint.id,
    name: endpoint.name,
    userId: endpoint.accountId,
    type: 'QB',
    templateId: endpoint.templateId,
    computeType: endpoint.gpu ? 'GPU' : 'CPU',
    gpuIds: gpuIdsOf(endpoint),
    gpuCount: endpoint.gpu?.count ?? 0,
    instanceIds: (endpoint.cpu ?? []).map((c) => `${c.id}-${c.vcpuCount}-${c.memory}`),
    allowedCudaVersions: endpoint.gpu?.allowedCudaVersions.join(',') ?? '',
    minCudaVersion: endpoint.gpu?.minCudaVersion ?? null,
    networkVolumeId,
    locations: endpoint.dataCenterIds.join(','),
    idleTimeout: endpoint.workers.idleTimeout,
    scalerType: endpoint.scaling.type,
    // Go clients decode scalerValue into an int; a fractional queue delay rounds up.
    scalerValue: Math.ceil(scalerValue),
    workersMin: endpoint.workers.min,
    workersMax: endpoint.workers.max,
    // The workers kept running while idle are the minimum ones.
    workersStandby: endpoint.workers.min,
    executionTimeoutMs: endpoint.timeout,
    flashBootType: endpoint.flashboot,
    modelReferences: [] as string[],
    version: endpoint.version,
    env: Object.entries(endpoint.env).map(([key, value]) => ({ key, value })),
    createdAt: endpoint.createdAt,
  }
}
