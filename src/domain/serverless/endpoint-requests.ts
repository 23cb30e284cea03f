import type { GpuPool } from '../catalog/gpu-types.js'
import type { EndpointType, EndpointWorkers, FlashbootMode, ScalingType } from './endpoint.js'

/** What callers give EndpointService: the create and update bodies after schema validation. */

export interface GpuInput {
  pools?: GpuPool[]
  excludedTypes?: string[]
  count?: number
  allowedCudaVersions?: string[]
  minCudaVersion?: string | null
}

export interface ScalingInput {
  type: ScalingType
  queueDelay?: number
  requestCount?: number
}

/** The create body after schema validation (bounds and enums already hold). */
export interface CreateEndpointInput {
  name: string
  type?: EndpointType
  templateId?: string
  image?: string
  args?: string
  disk?: number
  env?: Record<string, string>
  ports?: string[]
  registry?: string | null
  gpu?: GpuInput
  cpu?: { id: string; vcpuCount: number }[]
  workers?: Partial<EndpointWorkers>
  scaling?: ScalingInput
  dataCenterIds?: string[]
  /** Labels its workers' hosts must have (a podyard extension); [] removes them. */
  hostLabels?: string[]
  networkVolumes?: string[]
  timeout?: number
  flashboot?: FlashbootMode
}

export type UpdateEndpointInput = Partial<CreateEndpointInput>

/** How strictly a caller's input is read. */
export interface EndpointWriteOptions {
  /**
   * RunPod's v2 REST contract: `workers.idleTimeout` with REQUEST_COUNT scaling is refused
   * (`idleTimeoutProblem`); GraphQL clients send both, so GraphQL does not ask for this.
   */
  refuseIdleTimeoutWithRequestCount?: boolean
}
