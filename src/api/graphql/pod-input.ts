import type { Cloud } from '../../domain/catalog/fleet.js'
import { mountPathProblem } from '../../domain/pods/mount-paths.js'
import { isValidVcpuCount } from '../../domain/catalog/cpu-flavors.js'
import type { PodMounts } from '../../domain/pods/pod.js'
import {
  envProblems,
  MAX_NAME_LENGTH,
  MIN_CONTAINER_DISK_GB,
  MIN_GPU_COUNT,
  MIN_PERSISTENT_SIZE_GB,
  portProblems,
} from '../../domain/pods/pod-rules.js'
import type { CreatePodInput } from '../../domain/pods/pod-service.js'
import { AppError } from '../../shared/app-error.js'

/** Where a volume is mounted when volumeMountPath is absent (RunPod's default). */
export const DEFAULT_VOLUME_MOUNT_PATH = '/workspace'

export type CloudType = 'ALL' | Cloud

export type Nullable<T> = { [K in keyof T]?: T[K] | null }

/** The GraphQL common input fields (spec "GraphQL common input fields") and their companions. */
export type CommonPodInput = Nullable<{
  name: string
  imageName: string
  cloudType: CloudType
  containerDiskInGb: number
  volumeInGb: number
  volumeMountPath: string
  networkVolumeId: string
  dockerArgs: string
  ports: string
  env: Array<{ key: string; value?: string | null } | null>
  templateId: string
  containerRegistryAuthId: string
  dataCenterId: string
  stopAfter: string
  terminateAfter: string
  startSsh: boolean
  startJupyter: boolean
  /** The most USD per hour the pod may cost (RunPod's price cap at deploy). */
  deployCost: number
  /** podyard's extension: labels the host must have (`ib=true`, `driver>=550`). */
  hostLabels: Array<string | null>
}>

export type GpuPodInput = CommonPodInput &
  Nullable<{
    gpuTypeId: string
    gpuCount: number
    minVcpuCount: number
    minMemoryInGb: number
    allowedCudaVersions: Array<string | null>
    minCudaVersion: string
    compliance: Array<string | null>
    globalNetwork: boolean
    countryCode: string
  }>

export type CpuPodInput = CommonPodInput & { instanceId?: string | null }

/**
 * What placement must also satisfy beyond CreatePodInput: the GraphQL inputs the domain's
 * create has no field for (applied by pod-deploy.ts through the data centers it allows).
 */
export interface HostConstraints {
  minVcpuCount: number
  minMemoryInGb: number
  cudaVersions: string[]
  minCudaVersion: string | undefined
  compliance: string[]
}

export interface DeployRequest {
  /** Without `cloud`: pod-deploy.ts tries the clouds of `clouds` in order. */
  pod: Omit<CreatePodInput, 'cloud'>
  clouds: Cloud[]
  constraints: HostConstraints
  /** Only data centers in this country (community offers are chosen by country). */
  countryCode?: string
}

function cloudsOf(cloudType: CloudType | null | undefined): Cloud[] {
  // Absent means ALL, as runpod-python's create_pod defaults it.
  if (cloudType === 'SECURE' || cloudType === 'COMMUNITY') return [cloudType]
  return ['SECURE', 'COMMUNITY']
}

/** `"8888/http, 22/tcp"` -> `["8888/http", "22/tcp"]`; empty entries are dropped. */
export function parsePorts(ports: string | null | undefined): string[] {
  return (ports ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '')
}

export function envOf(env: CommonPodInput['env']): Record<string, string> {
  const out: Record<string, string> = {}
  for (const entry of env ?? []) if (entry) out[entry.key] = entry.value ?? ''
  return out
}

const present = <T>(value: T | null | undefined): value is T =>
  value !== null && value !== undefined

/** Collects `input.<field>: <problem>` lines, as REST lists `body.<field>: <problem>`. */
export class Problems {
  readonly lines: string[] = []
  add(field: string, problem: string): void {
    this.lines.push(`input.${field}: ${problem}`)
  }
  integerAtLeast(field: string, value: number | null | undefined, min: number): void {
    if (present(value) && value < min) this.add(field, `must be >= ${min}`)
  }
  throwIfAny(): void {
    if (this.lines.length === 0) return
    throw new AppError(
      'VALIDATION_FAILED',
      `the request failed validation: ${this.lines.join('; ')}`,
      {
        errors: this.lines,
      },
    )
  }
}

function commonFields(input: CommonPodInput, problems: Problems): Omit<CreatePodInput, 'cloud'> {
  if (present(input.name) && input.name.length > MAX_NAME_LENGTH) {
    problems.add('name', `must NOT have more than ${MAX_NAME_LENGTH} characters`)
  }
  if (!input.imageName && !input.templateId) {
    problems.add('imageName', 'is required unless templateId gives it')
  }
  problems.integerAtLeast('containerDiskInGb', input.containerDiskInGb, MIN_CONTAINER_DISK_GB)
  if (present(input.deployCost) && !(input.deployCost > 0)) {
    problems.add('deployCost', 'must be > 0 (USD per hour)')
  }
  const mountPath = input.volumeMountPath ? mountPathProblem(input.volumeMountPath) : undefined
  if (mountPath) problems.add('volumeMountPath', mountPath)
  const ports = parsePorts(input.ports)
  for (const line of portProblems(ports)) problems.lines.push(line.replace(/^body\./, 'input.'))
  const env = envOf(input.env)
  for (const line of envProblems(env)) problems.lines.push(line.replace(/^body\./, 'input.'))
  for (const field of ['stopAfter', 'terminateAfter'] as const) {
    // Ignoring these would leave running a pod its owner expects to be gone.
    if (input[field]) problems.add(field, 'is not offered: stop or terminate the pod yourself')
  }

  // The clients send "" for what their user left out (runpodctl: dockerArgs, ports, imageName
  // with a template), so "" means "not given" and a template's value applies.
  const name = input.name || input.imageName || input.templateId || 'pod'
  return {
    name: name.slice(0, MAX_NAME_LENGTH),
    ...(input.imageName ? { image: input.imageName } : {}),
    ...(input.dockerArgs ? { args: input.dockerArgs } : {}),
    ...(present(input.containerDiskInGb) ? { disk: input.containerDiskInGb } : {}),
    ...(ports.length > 0 ? { ports } : {}),
    ...(present(input.env) ? { env } : {}),
    ...(input.containerRegistryAuthId ? { registry: input.containerRegistryAuthId } : {}),
    ...(input.dataCenterId ? { dataCenterIds: [input.dataCenterId] } : {}),
    ...(input.templateId ? { templateId: input.templateId } : {}),
    // RunPod's GraphQL clients ask for SSH unless told otherwise (runpod-python's start_ssh
    // defaults to True); the account's keys then go in as PUBLIC_KEY.
    startSsh: input.startSsh ?? true,
    ...(present(input.startJupyter) ? { startJupyter: input.startJupyter } : {}),
    ...(present(input.deployCost) ? { maxHourlyCost: input.deployCost } : {}),
    ...(input.hostLabels?.some((l) => !!l)
      ? { hostLabels: input.hostLabels.filter((l): l is string => !!l) }
      : {}),
  }
}

/**
 * volumeInGb -> a persistent mount, networkVolumeId -> a network mount, both at
 * volumeMountPath. A network volume wins over volumeInGb, because runpodctl always sends a
 * volumeInGb (its default is 1). Sizes 1..9 become the persistent minimum of 10 GB for the
 * same reason.
 */
function mountsOf(
  input: GpuPodInput | CpuPodInput,
  allowPersistent: boolean,
): PodMounts | undefined {
  const path = input.volumeMountPath || DEFAULT_VOLUME_MOUNT_PATH
  if (input.networkVolumeId) return { network: [{ volumeId: input.networkVolumeId, path }] }
  const size = 'volumeInGb' in input ? (input.volumeInGb ?? 0) : 0
  if (!allowPersistent || size <= 0) return undefined
  return { persistent: { size: Math.max(size, MIN_PERSISTENT_SIZE_GB), path } }
}

/** podFindAndDeployOnDemand's input -> a create request (422 naming the GraphQL fields). */
export function gpuDeployRequest(input: GpuPodInput): DeployRequest {
  const problems = new Problems()
  const pod = commonFields(input, problems)
  if (!input.gpuTypeId) problems.add('gpuTypeId', 'is required: list GPU types with gpuTypes')
  problems.integerAtLeast('gpuCount', input.gpuCount, MIN_GPU_COUNT)
  problems.integerAtLeast('volumeInGb', input.volumeInGb, 0)
  problems.integerAtLeast('minVcpuCount', input.minVcpuCount, 0)
  problems.integerAtLeast('minMemoryInGb', input.minMemoryInGb, 0)
  problems.throwIfAny()
  const mounts = mountsOf(input, true)
  return {
    pod: {
      ...pod,
      gpu: { id: input.gpuTypeId!, count: input.gpuCount ?? MIN_GPU_COUNT },
      ...(mounts ? { mounts } : {}),
      ...(input.globalNetwork ? { globalNetworking: true } : {}),
    },
    clouds: cloudsOf(input.cloudType),
    constraints: {
      minVcpuCount: input.minVcpuCount ?? 0,
      minMemoryInGb: input.minMemoryInGb ?? 0,
      cudaVersions: (input.allowedCudaVersions ?? []).filter((v): v is string => !!v),
      minCudaVersion: input.minCudaVersion || undefined,
      compliance: (input.compliance ?? []).filter((c): c is string => !!c),
    },
    ...(input.countryCode ? { countryCode: input.countryCode } : {}),
  }
}

export type SpotPodInput = GpuPodInput & { bidPerGpu?: number | null }

/**
 * podRentInterruptable's input -> a spot create request: a COMMUNITY pod at the bid
 * (docs/pods.md, "Spot pods"); cloudType SECURE is refused rather than quietly ignored.
 */
export function spotDeployRequest(input: SpotPodInput): DeployRequest {
  const problems = new Problems()
  if (!present(input.bidPerGpu)) {
    problems.add('bidPerGpu', 'is required: USD per GPU-hour, at least lowestPrice.minimumBidPrice')
  } else if (!(input.bidPerGpu > 0)) {
    problems.add('bidPerGpu', 'must be > 0 (USD per GPU-hour)')
  }
  if (input.cloudType === 'SECURE') {
    problems.add('cloudType', 'spot pods run in the COMMUNITY cloud only: give COMMUNITY or ALL')
  }
  problems.throwIfAny()
  const request = gpuDeployRequest(input)
  return {
    ...request,
    pod: { ...request.pod, bidPerGpu: input.bidPerGpu! },
    clouds: ['COMMUNITY'],
  }
}

const INSTANCE_ID = /^([a-z0-9]+)-(\d+)-(\d+)$/

/**
 * deployCpuPod's `instanceId` `<flavor>-<vcpuCount>-<ramGb>` (wire-compat §8.3). The RAM part
 * must be what the flavor gives that many vCPUs: silently giving a different amount would
 * surprise whoever asked.
 */
export function parseInstanceId(
  instanceId: string,
  ramGbPerVcpu: (flavorId: string) => number | undefined,
  field = 'instanceId',
): { flavorId: string; vcpuCount: number } {
  const match = INSTANCE_ID.exec(instanceId)
  const problems = new Problems()
  if (!match) {
    problems.add(field, `"${instanceId}" is not <flavor>-<vcpuCount>-<ramGb>, e.g. cpu3c-2-4`)
    problems.throwIfAny()
  }
  const [, flavorId, vcpus, ram] = match!
  const vcpuCount = Number(vcpus)
  const perVcpu = ramGbPerVcpu(flavorId!)
  if (perVcpu === undefined) {
    throw new AppError(
      'RULE_CONFLICT',
      `unknown CPU flavor "${flavorId}" in instanceId ${instanceId}: list flavors with cpuTypes`,
    )
  }
  if (!isValidVcpuCount(vcpuCount)) {
    problems.add(field, `${instanceId}: the vCPU count must be a power of two >= 2`)
  } else if (Number(ram) !== vcpuCount * perVcpu) {
    problems.add(
      field,
      `${instanceId}: a ${flavorId} instance with ${vcpuCount} vCPUs has ${vcpuCount * perVcpu} GB; use ${flavorId}-${vcpuCount}-${vcpuCount * perVcpu}`,
    )
  }
  problems.throwIfAny()
  return { flavorId: flavorId!, vcpuCount }
}

/**
 * deployCpuPod's input -> a create request; the flavor lookup comes from the catalog.
 * runpod-python's default CPU pod sends no instanceId: `defaultInstance` is then used.
 */
export function cpuDeployRequest(
  input: CpuPodInput,
  ramGbPerVcpu: (flavorId: string) => number | undefined,
  defaultInstance: () => { flavorId: string; vcpuCount: number },
): DeployRequest {
  const problems = new Problems()
  const pod = commonFields(input, problems)
  problems.throwIfAny()
  const cpu = input.instanceId ? parseInstanceId(input.instanceId, ramGbPerVcpu) : defaultInstance()
  // CPU pods cannot have a persistent mount; a network volume is their only volume.
  const mounts = mountsOf(input, false)
  return {
    pod: {
      ...pod,
      cpu: { id: cpu.flavorId, vcpuCount: cpu.vcpuCount },
      ...(mounts ? { mounts } : {}),
    },
    clouds: cloudsOf(input.cloudType),
    constraints: {
      minVcpuCount: 0,
      minMemoryInGb: 0,
      cudaVersions: [],
      minCudaVersion: undefined,
      compliance: [],
    },
  }
}
