import type { GpuPool } from '../catalog/gpu-types.js'

/**
 * A serverless endpoint definition (wire-compat §3.3 Endpoint): what its workers run, on what
 * compute, how many and how they scale. Workers and jobs are other increments; bounds, defaults
 * and decisions are in docs/serverless-endpoints.md.
 */

export const ENDPOINT_TYPES = ['QUEUE', 'LOAD_BALANCER'] as const
export type EndpointType = (typeof ENDPOINT_TYPES)[number]

export const FLASHBOOT_MODES = ['OFF', 'FLASHBOOT', 'PRIORITY_FLASHBOOT'] as const
export type FlashbootMode = (typeof FLASHBOOT_MODES)[number]

export const SCALING_TYPES = ['QUEUE_DELAY', 'REQUEST_COUNT'] as const
export type ScalingType = (typeof SCALING_TYPES)[number]

export interface EndpointGpu {
  pools: GpuPool[]
  excludedTypes: string[]
  count: number
  allowedCudaVersions: string[]
  minCudaVersion: string | null
}

export interface EndpointCpu {
  id: string
  vcpuCount: number
  /** GB: vcpuCount times the flavor's memory per vCPU. */
  memory: number
}

export interface EndpointWorkers {
  min: number
  max: number
  /** Seconds an idle worker is kept before it is stopped. */
  idleTimeout: number
}

export type EndpointScaling =
  { type: 'QUEUE_DELAY'; queueDelay: number } | { type: 'REQUEST_COUNT'; requestCount: number }

export interface Endpoint {
  id: string
  accountId: string
  name: string
  type: 'QUEUE'
  /** The template the container block was taken from, or null when the body gave an image. */
  templateId: string | null
  image: string
  args: string
  disk: number
  env: Record<string, string>
  ports: string[]
  registry: string | null
  /** Exactly one of gpu and cpu is set. */
  gpu: EndpointGpu | null
  cpu: EndpointCpu[] | null
  workers: EndpointWorkers
  scaling: EndpointScaling
  dataCenterIds: string[]
  /**
   * Labels the hosts of its workers must have (`ib=true`, `driver>=550`): podyard's hostLabels
   * extension; absent or empty: any host.
   */
  hostLabels?: string[]
  networkVolumes: string[]
  /** Execution timeout of the endpoint's jobs, ms. */
  timeout: number
  flashboot: FlashbootMode
  /** Starts at 1; +1 whenever a field that workers are started with changes. */
  version: number
  createdAt: string
  updatedAt: string
}

/** The job API addresses of an endpoint (wire-compat §3.3 `requestUrls`, queue type). */
export interface EndpointRequestUrls {
  run: string
  runSync: string
  status: string
  stream: string
  cancel: string
  retry: string
  purgeQueue: string
  health: string
}

export type EndpointView = Endpoint & { requestUrls: EndpointRequestUrls }

/**
 * `baseUrl` is the job API's base (`{serverless_base_url}`); the `{job_id}` placeholders are
 * literal, as in RunPod's responses.
 */
export function requestUrlsOf(baseUrl: string, endpointId: string): EndpointRequestUrls {
  const base = `${baseUrl.replace(/\/+$/, '')}/v2/${endpointId}`
  return {
    run: `${base}/run`,
    runSync: `${base}/runsync`,
    status: `${base}/status/{job_id}`,
    stream: `${base}/stream/{job_id}`,
    cancel: `${base}/cancel/{job_id}`,
    retry: `${base}/retry/{job_id}`,
    purgeQueue: `${base}/purge-queue`,
    health: `${base}/health`,
  }
}
