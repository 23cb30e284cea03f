import { AppError } from '../../shared/app-error.js'
import type { Cloud, Fleet } from '../catalog/fleet.js'
import type { Pod, PodAction, PodActionRequest, PodCompute, PodMounts, PodStatus } from './pod.js'

/** Spec field bounds ("Limits: REST"). */
export const MIN_CONTAINER_DISK_GB = 1
export const MIN_PERSISTENT_SIZE_GB = 10
export const MIN_GPU_COUNT = 1
export const MAX_NETWORK_MOUNTS = 1
export const MIN_NAME_LENGTH = 1
export { MAX_NAME_LENGTH } from '../resource-names.js'

/** Our defaults where the spec says "not shown" (docs/pods.md). */
export const DEFAULT_CONTAINER_DISK_GB = 50
export const DEFAULT_CLOUD: Cloud = 'SECURE'

/** A crashing pod is restarted this many times before it is left in ERROR. */
export const MAX_CRASH_RESTARTS = 3

const actionsByStatus: Record<PodStatus, PodAction[]> = {
  PROVISIONING: ['start', 'terminate'],
  STARTING: ['stop', 'terminate'],
  RUNNING: ['stop', 'restart', 'terminate'],
  EXITED: ['start', 'terminate'],
  ERROR: ['start', 'terminate'],
  TERMINATED: [],
}

/** The spec's `actions`: the valid transitions from a status. */
export function actionsFor(status: PodStatus): PodAction[] {
  return [...actionsByStatus[status]]
}

/** Statuses in which the pod holds its host's GPUs, vCPUs and memory (and is billed). */
export function holdsResources(status: PodStatus): boolean {
  return status === 'PROVISIONING' || status === 'STARTING' || status === 'RUNNING'
}

/** Spec: `cost` is the hourly price, 0.0 when EXITED or TERMINATED (and in ERROR, which holds nothing). */
export function costOf(pod: Pick<Pod, 'status' | 'hourlyPrice'>): number {
  return holdsResources(pod.status) ? pod.hourlyPrice : 0
}

/**
 * Whether an action may be taken now; `reset` (wipe the container disk and restart) is valid
 * where `restart` or `start` is. A locked pod refuses stop and reset.
 */
export function checkAction(
  pod: Pick<Pod, 'id' | 'status' | 'locked'>,
  action: PodActionRequest,
): void {
  if (pod.locked && (action === 'stop' || action === 'reset')) {
    throw new AppError(
      'INVALID_STATE',
      `pod ${pod.id} is locked: set "locked": false before you ${action} it`,
    )
  }
  const actions = actionsFor(pod.status)
  const allowed =
    action === 'reset'
      ? actions.includes('restart') || actions.includes('start')
      : actions.includes(action)
  if (!allowed) {
    throw new AppError(
      'INVALID_STATE',
      `cannot ${action} pod ${pod.id} while it is ${pod.status}` +
        (actions.length > 0 ? `; valid actions: ${actions.join(', ')}` : ''),
    )
  }
}

export function hourlyPriceOf(fleet: Fleet, compute: PodCompute, cloud: Cloud): number {
  if (compute.kind === 'gpu') {
    const price = fleet.prices.gpus[compute.gpuTypeId]
    const perGpu = cloud === 'SECURE' ? price?.secure : price?.community
    return round4((perGpu ?? 0) * compute.gpuCount)
  }
  return round4((fleet.prices.cpus[compute.flavorId]?.securePerVcpu ?? 0) * compute.vcpuCount)
}

function round4(value: number): number {
  return Math.round(value * 10_000) / 10_000
}

/** Spec Mounts rules 1, 3 (create side): `persistent` and `network` exclude each other. */
export function checkMountsOnCreate(mounts: PodMounts | undefined, compute: PodCompute): void {
  if (!mounts) return
  if (mounts.persistent && mounts.network && mounts.network.length > 0) {
    throw new AppError(
      'RULE_CONFLICT',
      'mounts.persistent and mounts.network are mutually exclusive',
    )
  }
  if (mounts.persistent && compute.kind === 'cpu') {
    throw new AppError(
      'RULE_CONFLICT',
      'mounts.persistent is not allowed on CPU pods; use a network mount',
    )
  }
}

/**
 * Spec Mounts rules 3 to 6 for PATCH: omitted or `{}` leaves mounts as they are; the kind is
 * fixed at create; a network mount keeps its volume; only paths (and a persistent size, which
 * may grow) change. Returns the mounts after the patch.
 */
export function patchMounts(current: PodMounts, patch: PodMounts | undefined): PodMounts {
  if (!patch || (patch.persistent === undefined && patch.network === undefined)) return current
  if (patch.network !== undefined) {
    if (patch.network.length === 0) {
      throw new AppError(
        'RULE_CONFLICT',
        'mounts.network cannot be emptied: the mount kind is fixed at create',
      )
    }
    if (!current.network || current.network.length === 0) {
      throw new AppError(
        'RULE_CONFLICT',
        'mounts.network cannot be added: this pod was created without a network mount, and the mount kind is fixed at create',
      )
    }
    const [wanted] = patch.network
    const [existing] = current.network
    if (wanted!.volumeId !== existing!.volumeId) {
      throw new AppError(
        'RULE_CONFLICT',
        `mounts.network[0].volumeId cannot change (it is ${existing!.volumeId}); only the path can`,
      )
    }
  }
  if (patch.persistent !== undefined) {
    if (!current.persistent) {
      throw new AppError(
        'RULE_CONFLICT',
        'mounts.persistent cannot be added: this pod was created without a persistent mount, and the mount kind is fixed at create',
      )
    }
    if (patch.persistent.size < current.persistent.size) {
      throw new AppError(
        'RULE_CONFLICT',
        `mounts.persistent.size cannot shrink (from ${current.persistent.size} to ${patch.persistent.size} GB)`,
      )
    }
  }
  return {
    ...(current.persistent ? { persistent: patch.persistent ?? current.persistent } : {}),
    ...(current.network ? { network: patch.network ?? current.network } : {}),
  }
}

/** `<port>/<protocol>` with a port 1..65535 and protocol http, tcp or udp. */
export function parsePortSpec(
  spec: string,
): { port: number; protocol: 'http' | 'tcp' | 'udp' } | undefined {
  const match = /^(\d{1,5})\/(http|tcp|udp)$/.exec(spec)
  if (!match) return undefined
  const port = Number(match[1])
  if (port < 1 || port > 65535) return undefined
  return { port, protocol: match[2] as 'http' | 'tcp' | 'udp' }
}

/** Validation failures of the declared ports, as `body.ports[i]: ...` lines (422). */
export function portProblems(ports: string[]): string[] {
  const problems: string[] = []
  const seen = new Set<number>()
  ports.forEach((spec, i) => {
    const parsed = parsePortSpec(spec)
    if (!parsed) {
      problems.push(
        `body.ports[${i}]: must be <port>/<protocol> with a port 1-65535 and protocol http, tcp or udp`,
      )
    } else if (seen.has(parsed.port)) {
      problems.push(`body.ports[${i}]: port ${parsed.port} is declared twice`)
    } else {
      seen.add(parsed.port)
    }
  })
  return problems
}

/** Which PATCH fields change what runs, and so restart a pod that is running. */
export const RESTARTING_FIELDS = [
  'image',
  'args',
  'disk',
  'env',
  'ports',
  'registry',
  'mounts',
  'globalNetworking',
] as const

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/** Validation failures of env names, as `body.env.<name>: ...` lines (422). */
export function envProblems(env: Record<string, string>): string[] {
  return Object.keys(env)
    .filter((name) => !ENV_NAME.test(name))
    .map(
      (name) =>
        `body.env.${name}: must be a variable name (letters, digits and _, not starting with a digit)`,
    )
}

/** The pod's name on its account's private network (spec PodGlobalNetworking.internalDns). */
export const INTERNAL_DOMAIN = 'runpod.internal'
