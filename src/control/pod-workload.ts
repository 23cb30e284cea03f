import path from 'node:path'
import type { Pod, PortMapping } from '../domain/pods/pod.js'
import { INTERNAL_DOMAIN, parsePortSpec } from '../domain/pods/pod-rules.js'
import { imageCommandOf } from '../domain/pods/docker-args.js'
import type { WorkloadSpec } from '../runtime/driver.js'

export const POD_LABEL_KIND = 'podyard.kind'
export const POD_LABEL_GENERATION = 'podyard.generation'

/**
 * The private network of an account's globally networked pods: one per account, so that pods
 * of other accounts cannot reach them, with `<pod_id>.runpod.internal` naming each pod.
 */
export function globalNetworkOf(
  pod: Pod,
): { name: string; aliases: string[]; address: string } | undefined {
  if (!pod.globalIp) return undefined
  return {
    name: `account-${pod.accountId}`,
    aliases: [`${pod.id}.${INTERNAL_DOMAIN}`],
    address: pod.globalIp,
  }
}

/**
 * The workload tenant of an account's pods and workers: they share its volumes, and a sandbox
 * gives them one user, never another account's.
 */
export function tenantOf(accountId: string): string {
  return `account-${accountId}`
}

export interface PodDirectories {
  containerDisk: string
  persistent: string
}

/** Where a pod's disks live on the host: `<dataDir>/pods/<id>/{disk,persistent}`. */
export function podDirectories(dataDir: string, podId: string): PodDirectories {
  const root = path.join(dataDir, 'pods', podId)
  return { containerDisk: path.join(root, 'disk'), persistent: path.join(root, 'persistent') }
}

/** What the pod's references resolve to on the host, at launch. */
export interface PodAttachments {
  /** Host directory of the pod's network volume, when it has a network mount. */
  networkVolumePath?: string
  /** The size a driver that bounds disks keeps the network volume to (WorkloadMount.sizeGb). */
  networkVolumeSizeGb?: number
  registryAuth?: { username: string; password: string }
  /**
   * The pod's env with its `{{ RUNPOD_SECRET_<name> }}` references resolved: only the
   * workload gets it, the stored pod keeps the references.
   */
  env?: Record<string, string>
  /** The owner's SSH public keys, for `PUBLIC_KEY` (RunPod's images add it to authorized_keys). */
  publicKey?: string
}

export interface PodHostFacts {
  dataCenterId: string
  publicIp: string
  /** What the pod's allocation holds on the host. */
  vcpus: number
  memoryGb: number
}

/**
 * Translates a pod into the workload its host's driver runs: the pod's env plus the variables
 * RunPod's images read (RUNPOD_POD_ID, RUNPOD_DC_ID, ...), its disks and mounts, its ports.
 */
export function workloadOf(
  pod: Pod,
  dirs: PodDirectories,
  host: PodHostFacts,
  portMappings: PortMapping[],
  attachments: PodAttachments = {},
): WorkloadSpec {
  const gpuCount = pod.compute.kind === 'gpu' ? pod.compute.gpuCount : 0
  const network = globalNetworkOf(pod)
  const env: Record<string, string> = {
    // A PUBLIC_KEY the pod's own env sets wins over the account's keys.
    ...(attachments.publicKey ? { PUBLIC_KEY: attachments.publicKey } : {}),
    ...(attachments.env ?? pod.env),
    RUNPOD_POD_ID: pod.id,
    RUNPOD_DC_ID: host.dataCenterId,
    RUNPOD_GPU_COUNT: String(gpuCount),
    RUNPOD_CPU_COUNT: String(host.vcpus),
    RUNPOD_PUBLIC_IP: host.publicIp,
    ...Object.fromEntries(
      portMappings.map((p) => [`RUNPOD_TCP_PORT_${p.private}`, String(p.public)]),
    ),
    ...(pod.globalIp ? { PODYARD_GLOBAL_IP: pod.globalIp } : {}),
    // A CPU pod on a host with GPUs must not see them: CUDA and the NVIDIA runtime read these.
    ...(gpuCount === 0 ? { CUDA_VISIBLE_DEVICES: '', NVIDIA_VISIBLE_DEVICES: 'void' } : {}),
  }
  const imageCommand = imageCommandOf(pod.args)
  return {
    id: pod.id,
    image: pod.image,
    command: pod.args.trim() === '' || imageCommand ? null : pod.args,
    ...(imageCommand ? { imageCommand } : {}),
    env,
    containerDiskPath: dirs.containerDisk,
    diskGb: pod.disk,
    mounts: [
      ...(pod.mounts.persistent
        ? [
            {
              hostPath: dirs.persistent,
              containerPath: pod.mounts.persistent.path,
              kind: 'persistent' as const,
              sizeGb: pod.mounts.persistent.size,
            },
          ]
        : []),
      ...(pod.mounts.network?.[0] && attachments.networkVolumePath
        ? [
            {
              hostPath: attachments.networkVolumePath,
              containerPath: pod.mounts.network[0].path,
              kind: 'network' as const,
              ...(attachments.networkVolumeSizeGb
                ? { sizeGb: attachments.networkVolumeSizeGb }
                : {}),
            },
          ]
        : []),
    ],
    ports: portMappings.map((p) => ({
      private: p.private,
      public: p.public,
      protocol: p.type as 'http' | 'tcp' | 'udp',
    })),
    gpuIndices: pod.gpuIndices,
    vcpus: host.vcpus,
    memoryGb: host.memoryGb,
    labels: { [POD_LABEL_KIND]: 'pod', [POD_LABEL_GENERATION]: String(pod.generation) },
    tenant: tenantOf(pod.accountId),
    ...(attachments.registryAuth ? { registryAuth: attachments.registryAuth } : {}),
    ...(network ? { network } : {}),
  }
}

/** The declared ports, each with a host port chosen by `pick`. */
export async function assignPorts(pod: Pod, pick: () => Promise<number>): Promise<PortMapping[]> {
  const mappings: PortMapping[] = []
  for (const spec of pod.ports) {
    const parsed = parsePortSpec(spec)
    if (parsed) mappings.push({ private: parsed.port, public: await pick(), type: parsed.protocol })
  }
  return mappings
}
