import path from 'node:path'
import { imageCommandOf } from '../domain/pods/docker-args.js'
import type { Endpoint } from '../domain/serverless/endpoint.js'
import { unreachableFromOtherHosts } from '../domain/serverless/job-api-address.js'
import type { ManagedWorker } from '../domain/serverless/worker.js'
import type { WorkloadMount, WorkloadSpec } from '../runtime/driver.js'
import { POD_LABEL_KIND, tenantOf } from './pod-workload.js'

export const WORKER_LABEL_ENDPOINT = 'podyard.endpoint'
export const WORKER_LABEL_VERSION = 'podyard.version'
/** Where a worker sees its endpoint's network volume, as on RunPod. */
export const WORKER_VOLUME_PATH = '/runpod-volume'

/** A worker's container disk on its host: `<dataDir>/workers/<id>/disk`. */
export function workerDiskPath(dataDir: string, workerId: string): string {
  return path.join(dataDir, 'workers', workerId, 'disk')
}

export interface WorkerLaunch {
  /** The job API's base URL as the worker reaches it (`{serverless_base_url}`). */
  baseUrl: string
  workerKey: string
  pingIntervalMs: number
  diskPath: string
  /** Host directory of the network volume in the worker's data center, if any. */
  /** `sizeGb`: the size a driver that bounds disks keeps it to (WorkloadMount.sizeGb). */
  networkVolume?: { id: string; path: string; sizeGb?: number }
  registryAuth?: { username: string; password: string }
  /** The endpoint's env with its `{{ RUNPOD_SECRET_<name> }}` references resolved. */
  env?: Record<string, string>
  /** Mounts the platform adds (its own code, for the workers of public models). */
  platformMounts?: WorkloadMount[]
  /** Join the host's network: the job API's address is a loopback one of this machine. */
  hostNetwork?: boolean
  /**
   * Loopback ports of this machine the platform's own workers reach besides the job API's (a
   * public model's server, from the operator's config); never from a tenant's input.
   */
  platformLoopbackPorts?: number[]
}

/**
 * The `RUNPOD_WEBHOOK_*` addresses of runpod-python's worker loop (wire-compat §5.2). The take,
 * done and stream URLs carry a query because the worker appends `&name=value` to them; `$ID`
 * and `$RUNPOD_POD_ID` are left for the worker to substitute.
 */
export function workerWebhooks(baseUrl: string, endpointId: string, computeName: string) {
  const base = `${baseUrl.replace(/\/+$/, '')}/v2/${endpointId}`
  const query = `?gpu=${encodeURIComponent(computeName)}`
  return {
    RUNPOD_WEBHOOK_GET_JOB: `${base}/job-take/$ID${query}`,
    RUNPOD_WEBHOOK_POST_OUTPUT: `${base}/job-done/$RUNPOD_POD_ID/$ID${query}`,
    RUNPOD_WEBHOOK_POST_STREAM: `${base}/job-stream/$RUNPOD_POD_ID/$ID${query}`,
    RUNPOD_WEBHOOK_PING: `${base}/ping/$RUNPOD_POD_ID`,
  }
}

/**
 * Translates a placed worker into the workload its host's driver runs: the endpoint's
 * container block plus the environment a runpod-python worker (or podyard/worker) needs to
 * find this server. Published ports are not part of a queue worker: it only calls out.
 */
export function workerWorkloadOf(
  endpoint: Endpoint,
  worker: ManagedWorker,
  launch: WorkerLaunch,
): WorkloadSpec {
  const computeName = worker.gpuTypeId ?? worker.cpuFlavorId ?? 'cpu'
  const env: Record<string, string> = {
    ...(launch.env ?? endpoint.env),
    ...workerWebhooks(launch.baseUrl, endpoint.id, computeName),
    RUNPOD_POD_ID: worker.id,
    RUNPOD_POD_HOSTNAME: worker.id,
    RUNPOD_AI_API_KEY: launch.workerKey,
    RUNPOD_ENDPOINT_ID: endpoint.id,
    RUNPOD_PING_INTERVAL: String(launch.pingIntervalMs),
    RUNPOD_GPU_COUNT: String(worker.gpuCount),
    RUNPOD_CPU_COUNT: String(worker.vcpus),
    RUNPOD_DC_ID: worker.dataCenterId ?? '',
    ...(launch.networkVolume ? { RUNPOD_VOLUME_ID: launch.networkVolume.id } : {}),
    // A CPU worker on a host with GPUs must not see them.
    ...(worker.gpuCount === 0 ? { CUDA_VISIBLE_DEVICES: '', NVIDIA_VISIBLE_DEVICES: 'void' } : {}),
  }
  // RunPod's JSON dockerArgs is the image's entrypoint and command, for workers as for pods.
  const imageCommand = imageCommandOf(endpoint.args)
  return {
    id: worker.id,
    image: endpoint.image,
    command: endpoint.args.trim() === '' || imageCommand ? null : endpoint.args,
    ...(imageCommand ? { imageCommand } : {}),
    env,
    containerDiskPath: launch.diskPath,
    diskGb: endpoint.disk,
    mounts: [
      ...(launch.networkVolume
        ? [
            {
              hostPath: launch.networkVolume.path,
              containerPath: WORKER_VOLUME_PATH,
              kind: 'network' as const,
              ...(launch.networkVolume.sizeGb ? { sizeGb: launch.networkVolume.sizeGb } : {}),
            },
          ]
        : []),
      ...(launch.platformMounts ?? []),
    ],
    ports: [],
    gpuIndices: worker.gpuIndices,
    vcpus: worker.vcpus,
    memoryGb: worker.memoryGb,
    labels: {
      [POD_LABEL_KIND]: 'worker',
      [WORKER_LABEL_ENDPOINT]: endpoint.id,
      [WORKER_LABEL_VERSION]: String(worker.version),
    },
    tenant: tenantOf(endpoint.accountId),
    ...(launch.registryAuth ? { registryAuth: launch.registryAuth } : {}),
    ...(launch.hostNetwork ? { hostNetwork: true } : {}),
    ...loopbackPortsOf([
      ...loopbackPortOf(launch.baseUrl),
      ...(launch.platformLoopbackPorts ?? []),
    ]),
  }
}

function loopbackPortsOf(ports: number[]): { loopbackPorts?: number[] } {
  return ports.length > 0 ? { loopbackPorts: [...new Set(ports)] } : {}
}

/**
 * The port of `address` when it is a loopback one of this machine (none otherwise): a worker in
 * a network namespace of its own (the process driver's) reaches that port, and no other of the
 * host's loopback. The job API's address, and a public model's server.
 */
export function loopbackPortOf(address: string): number[] {
  if (unreachableFromOtherHosts(address) === null) return []
  const url = URL.parse(address)
  if (url === null) return []
  return [url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80]
}
