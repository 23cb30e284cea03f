import { isIP } from 'node:net'
import { gpuShare } from '../../domain/catalog/capacity.js'
import { findCpuFlavor } from '../../domain/catalog/cpu-flavors.js'
import type { Host } from '../../domain/catalog/fleet.js'
import { findGpuType } from '../../domain/catalog/gpu-types.js'
import type { Pod, PodRuntime, PodStatus } from '../../domain/pods/pod.js'
import { costOf } from '../../domain/pods/pod-rules.js'

export type DesiredStatus = 'RUNNING' | 'EXITED' | 'TERMINATED'

/** Spec "Pod desired status (GraphQL)": what the pod is meant to be doing, not where it is. */
export function desiredStatusOf(status: PodStatus): DesiredStatus {
  switch (status) {
    case 'PROVISIONING':
    case 'STARTING':
    case 'RUNNING':
      return 'RUNNING'
    case 'EXITED':
    case 'ERROR':
      return 'EXITED'
    case 'TERMINATED':
      return 'TERMINATED'
  }
}

/** Private, loopback and link-local addresses are not reachable from the internet. */
export function isPublicIp(ip: string | null): boolean {
  if (ip === null || isIP(ip) === 0) return false
  if (isIP(ip) === 6) return !/^(::1$|fe80:|fc|fd)/i.test(ip)
  const [a, b] = ip.split('.').map(Number) as [number, number]
  return !(
    a === 10 ||
    a === 127 ||
    a === 0 ||
    (a === 100 && b >= 64 && b <= 127) ||
    (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168)
  )
}

export interface RuntimeView {
  uptimeInSeconds: number
  ports: Array<{
    ip: string | null
    isIpPublic: boolean
    privatePort: number
    publicPort: number | null
    type: string
  }>
  gpus: Array<{ id: string; gpuUtilPercent: number; memoryUtilPercent: number }>
  /** Null until the pod's usage was first measured. */
  container: { cpuPercent: number; memoryPercent: number } | null
}

const int = (value: number) => Math.round(value)

export function runtimeView(pod: Pod, runtime: PodRuntime): RuntimeView {
  return {
    uptimeInSeconds: int(runtime.uptime),
    ports: runtime.ports.map((p) => ({
      ip: p.ip,
      isIpPublic: isPublicIp(p.ip),
      privatePort: p.private,
      publicPort: p.public,
      type: p.type,
    })),
    gpus: runtime.gpus.map((g, i) => ({
      // The host device index, so two pods on one host never show the same GPU id.
      id: `${pod.hostId ?? 'gpu'}-${pod.gpuIndices[i] ?? i}`,
      gpuUtilPercent: int(g.util),
      memoryUtilPercent: int(g.memoryUtil),
    })),
    container:
      runtime.cpu && runtime.memory
        ? { cpuPercent: int(runtime.cpu.util), memoryPercent: int(runtime.memory.util) }
        : null,
  }
}

/** vCPUs and memory the pod holds: the instance's for CPU pods, the host share for GPU pods. */
function resourcesOf(
  pod: Pod,
  hostOf: (id: string) => Host | undefined,
): { vcpus: number; memoryGb: number } {
  if (pod.compute.kind === 'cpu') {
    return { vcpus: pod.compute.vcpuCount, memoryGb: pod.compute.memoryGb }
  }
  const host = pod.hostId === null ? undefined : hostOf(pod.hostId)
  return host ? gpuShare(host, pod.compute.gpuCount) : { vcpus: 0, memoryGb: 0 }
}

function lastStatusChangeOf(pod: Pod): string {
  return `${pod.status}${pod.statusReason ? ` (${pod.statusReason})` : ''} at ${pod.lastStatusChange}`
}

export interface PodViewDeps {
  /** The host of an id as it offers itself (a GPU pod's share is of it). */
  hostOf: (id: string) => Host | undefined
  now: () => Date
  runtimeOf: (pod: Pod) => Promise<PodRuntime | null>
}

/**
 * The GraphQL Pod (wire-compat §6.2). `runtime` is a function so that the runtime is read only
 * when a document selects it (graphql-js calls function-valued fields).
 */
export function podView(pod: Pod, deps: PodViewDeps) {
  const { vcpus, memoryGb } = resourcesOf(pod, deps.hostOf)
  const volumeMount = pod.mounts.persistent ?? pod.mounts.network?.[0]
  const uptimeSeconds =
    pod.status === 'RUNNING' && pod.startedAt
      ? Math.max(0, Math.floor((deps.now().getTime() - Date.parse(pod.startedAt)) / 1000))
      : 0
  return {
    id: pod.id,
    name: pod.name,
    desiredStatus: desiredStatusOf(pod.status),
    imageName: pod.image,
    env: Object.entries(pod.env).map(([key, value]) => `${key}=${value}`),
    ports: pod.ports.join(','),
    dockerArgs: pod.args,
    containerDiskInGb: pod.disk,
    volumeInGb: pod.mounts.persistent?.size ?? 0,
    volumeMountPath: volumeMount?.path ?? null,
    networkVolumeId: pod.mounts.network?.[0]?.volumeId ?? null,
    gpuCount: pod.compute.kind === 'gpu' ? pod.compute.gpuCount : 0,
    vcpuCount: vcpus,
    memoryInGb: memoryGb,
    costPerHr: costOf(pod),
    machineId: pod.hostId,
    // runpodctl's legacy `get pod` dereferences machine, so it is an object even before placement.
    machine: {
      podHostId: pod.hostId ? `${pod.id}-${pod.hostId}` : null,
      gpuDisplayName:
        pod.compute.kind === 'gpu'
          ? (findGpuType(pod.compute.gpuTypeId)?.displayName ?? pod.compute.gpuTypeId)
          : (findCpuFlavor(pod.compute.flavorId)?.name ?? pod.compute.flavorId),
      location: pod.dataCenterId,
    },
    lastStatusChange: lastStatusChangeOf(pod),
    uptimeSeconds,
    runtime: async (): Promise<RuntimeView | null> => {
      const runtime = await deps.runtimeOf(pod)
      return runtime ? runtimeView(pod, runtime) : null
    },
    // RunPod's names: INTERRUPTABLE for a spot pod, RESERVED for an on-demand one.
    podType: pod.spot ? 'INTERRUPTABLE' : 'RESERVED',
    port: pod.ports.length > 0 ? Number.parseInt(pod.ports[0]!, 10) : null,
    dockerId: null,
    cloudType: pod.cloud,
    dataCenterId: pod.dataCenterId,
    templateId: pod.templateId,
    containerRegistryAuthId: pod.registry,
    locked: pod.locked,
    clusterIp: pod.cluster?.ip ?? null,
  }
}
