import { MAX_NAME_LENGTH } from '../resource-names.js'
import { MAX_EXECUTION_TIMEOUT_MS, MIN_EXECUTION_TIMEOUT_MS } from './job.js'
import type { Endpoint, EndpointScaling } from './endpoint.js'

/** Name bound shared by every named resource of the REST API. */
export const MAX_ENDPOINT_NAME_LENGTH = MAX_NAME_LENGTH

/**
 * `workers.idleTimeout`: 10 s by default (RunPod's v2 CreateEndpointRequest), 1 to 3600 (v1
 * EndpointCreateInput, wire-compat §2.4).
 */
export const DEFAULT_IDLE_TIMEOUT_S = 10
export const MIN_IDLE_TIMEOUT_S = 1
export const MAX_IDLE_TIMEOUT_S = 3600

/** RunPod's console default for max workers. */
export const DEFAULT_WORKERS_MAX = 3
/**
 * Our cap on `workers.max`: a runaway autoscaler on one endpoint must not be able to ask the
 * fleet for more than this many workers (RunPod's own per-account quota is far lower).
 */
export const MAX_WORKERS_PER_ENDPOINT = 100

/** wire-compat §3.3 scaling bounds; v1 `scalerValue` default 4. */
export const MIN_QUEUE_DELAY_S = 0.5
export const MIN_REQUEST_COUNT = 1
export const DEFAULT_SCALER_VALUE = 4
export const DEFAULT_SCALING: EndpointScaling = {
  type: 'QUEUE_DELAY',
  queueDelay: DEFAULT_SCALER_VALUE,
}

/** `timeout` is the jobs' execution timeout, so it has the job policy's bounds. */
export const MIN_ENDPOINT_TIMEOUT_MS = MIN_EXECUTION_TIMEOUT_MS
export const MAX_ENDPOINT_TIMEOUT_MS = MAX_EXECUTION_TIMEOUT_MS
/** wire-compat §3.3: `timeout` defaults to 300 000 ms. */
export const DEFAULT_ENDPOINT_TIMEOUT_MS = 300_000

export const DEFAULT_GPU_COUNT = 1
export const DEFAULT_CONTAINER_DISK_GB = 50

/** The CPU flavors serverless endpoints accept (wire-compat §2.4 EndpointCreateInput, §8.3). */
export const ENDPOINT_CPU_FLAVORS = ['cpu3c', 'cpu3g', 'cpu5c', 'cpu5g'] as const

/**
 * The fields a worker is started with: a change to any of them makes running workers stale, so
 * it bumps the endpoint's `version` (wire-compat §2.4 "version bumps on template/env change").
 * Name, workers, scaling, timeout, flashboot and data centers change nothing inside a worker.
 * hostLabels (podyard's extension, which RunPod's clients never send) choose the worker's host:
 * a worker on a host without the new labels is in the wrong place, so they roll the workers.
 */
export const WORKER_FIELDS = [
  'templateId',
  'image',
  'args',
  'disk',
  'env',
  'ports',
  'registry',
  'gpu',
  'cpu',
  'networkVolumes',
  'hostLabels',
] as const satisfies ReadonlyArray<keyof Endpoint>

/** The next version of an endpoint updated from `before` to `after`. */
export function nextVersion(before: Endpoint, after: Omit<Endpoint, 'version'>): number {
  const changed = WORKER_FIELDS.some(
    (field) => JSON.stringify(before[field]) !== JSON.stringify(after[field]),
  )
  return changed ? before.version + 1 : before.version
}

/**
 * RunPod's v2 contract: an idle timeout does not apply to REQUEST_COUNT scaling, so a REST body
 * giving both is refused (GraphQL clients always send one, so GraphQL does not refuse it).
 * The endpoint keeps its idle timeout for the autoscaler; the REST view leaves it out.
 */
export function idleTimeoutProblem(
  scaling: EndpointScaling,
  idleTimeoutGiven: boolean,
): string | undefined {
  if (!idleTimeoutGiven || scaling.type !== 'REQUEST_COUNT') return undefined
  return 'workers.idleTimeout does not apply to REQUEST_COUNT scaling: leave it out'
}

/** Whether a change moved the image a worker runs or the hosts it may run on. */
export function imageOrHostsChanged(before: Endpoint, after: Endpoint): boolean {
  const of = (e: Endpoint) =>
    JSON.stringify([e.image, e.registry, e.gpu, e.cpu, e.dataCenterIds, e.hostLabels ?? []])
  return of(before) !== of(after)
}
