import type { Clock } from '../../shared/clock.js'
import type { Tracing } from '../../shared/tracing.js'
import type { CatalogService } from '../catalog/catalog-service.js'
import type { Cloud } from '../catalog/fleet.js'
import type { PlacementPolicy } from '../catalog/placement.js'
import type { QuotaService } from '../quotas/quota-service.js'
import type { Template } from '../templates/template.js'
import type { PodMounts, PodRequirements } from './pod.js'
import type { PodRuntimeReader, PodStore } from './ports.js'

/** What the pod service takes: the bodies of creates and updates, and what it depends on. */

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
  /** Labels its host must have (`ib=true`, `driver>=550`): a podyard extension. */
  hostLabels?: string[]
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

/** The fields of a create that an update may change, and the lock. */
export interface UpdatePodInput extends Partial<
  Pick<
    CreatePodInput,
    | 'name'
    | 'image'
    | 'args'
    | 'disk'
    | 'ports'
    | 'env'
    | 'registry'
    | 'mounts'
    | 'globalNetworking'
  >
> {
  locked?: boolean
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
