import { diskWriteLimitsOf, pidsLimitOf, type DiskWriteRule } from '../workload-limits.js'
import {
  DEFAULT_WORKLOAD_LOG_MAX_BYTES,
  type LogLine,
  type WorkloadPort,
  type WorkloadSpec,
  type WorkloadState,
} from '../driver.js'
import { networkConfigOf } from './tenant-network.js'

/**
 * Pure translation between podyard's WorkloadSpec and the Docker Engine API: the container
 * create body, the registry auth header, and back from a container inspection to a
 * WorkloadState. The driver (docker-driver.ts) only does the I/O around these.
 */

/** Names the podyard server that created a container; it never touches containers without it. */
export const SERVER_LABEL = 'podyard.server'
/** The workload id of the container. */
export const WORKLOAD_LABEL = 'podyard.workload'
/**
 * The keys of the spec's own labels, as a JSON array: Docker merges the image's labels into the
 * container's, and a WorkloadState must carry only what the spec gave.
 */
export const SPEC_LABELS_LABEL = 'podyard.spec-labels'
/**
 * The seq of the last line of the workload's log before this container's own output: earlier
 * containers of the workload and this start's pull. A workload started again is a new container
 * whose log starts empty; the offset keeps LogLine.seq increasing across starts (and across
 * server restarts, as it lives on the container).
 */
export const LOG_BASE_LABEL = 'podyard.log-base'
/** The pull log of this container's start, as a JSON array of LogLines (pullLogLabel). */
export const PULL_LOG_LABEL = 'podyard.pull-log'
/** On a named volume: the container path it is mounted at. */
export const MOUNT_LABEL = 'podyard.mount'
export { NETWORK_LABEL, networkName } from './tenant-network.js'

/**
 * What a workload with no command runs when its image has no default command either (Docker
 * refuses to create such a container). Under the init process SIGTERM ends it at once.
 */
export const IDLE_CMD: readonly string[] = ['sleep', '2147483647']

/**
 * Prefixed to a command: stderr goes to stdout. Docker copies the two pipes in separate
 * goroutines, so lines written to both in a row (`echo one; echo two >&2`) reach the log in
 * either order; one pipe keeps the order the workload wrote them in, which the contract needs.
 */
export const MERGE_STDERR = 'exec 2>&1; '

const GIB = 1024 ** 3

export interface ContainerSpecOptions {
  /** This server's id, stored in SERVER_LABEL. */
  serverId: string
  /** Whether the image has a Cmd or Entrypoint of its own (from an image inspection). */
  imageHasCommand: boolean
  /**
   * Send `diskGb` as the writable layer's size (`StorageOpt.size`): only where the engine's
   * storage driver enforces sizes (engine-containment.ts finds out); the others, overlay2 on
   * ext4 included, refuse to create a container that asks for one.
   */
  diskLimit: boolean
  /**
   * The disk of the engine's data root and the rule of its write limits, where the engine
   * enforces them (engine-limits.ts finds out); absent: writes are not limited.
   */
  diskWrite?: ContainerDiskWrite
  /**
   * The GPU indices are virtual (a simulated host): the workload is told them in
   * CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES, as under the process driver, and no device
   * is requested (there is none; the engine would refuse the request without the NVIDIA runtime).
   */
  simulatedGpus?: boolean
  /**
   * The engine's GPU UUIDs by index, as its last GPU probe read them (gpu-probe.ts): devices are
   * requested by UUID, which names one GPU whatever order the driver enumerates them in; by
   * index where a UUID is not known.
   */
  gpuUuids?: readonly string[] | undefined
  /** Where the container's log continues the workload's (LOG_BASE_LABEL, PULL_LOG_LABEL). */
  log?: ContainerLogPosition
  /**
   * The named volume of a persistent mount (by container path) when it is not this server's
   * volumeName: one of a former server id that the workload's last container had
   * (previousVolumeNames).
   */
  volumeNames?: Readonly<Record<string, string>>
  /** What the container's log may take on disk (containerLogConfig); the default's otherwise. */
  logMaxBytes?: number
}

/** Where and by what rule a container's disk writes are limited. */
export interface ContainerDiskWrite {
  device: string
  rule: DiskWriteRule
}

/** The labels of the driver's own on a container, never a spec label. */
const OWN_LABELS = new Set([
  SERVER_LABEL,
  WORKLOAD_LABEL,
  SPEC_LABELS_LABEL,
  LOG_BASE_LABEL,
  PULL_LOG_LABEL,
])

/** How a container's log continues the workload's log. */
export interface ContainerLogPosition {
  /** The seq of the last line before the container's own output (its pull lines included). */
  base: number
  /** This start's pull log, kept with the container so that it outlives the server. */
  pullLines: LogLine[]
}

/**
 * At most this many pull lines are kept on the container (the last ones): a pull logs about
 * three lines per layer, so this holds the whole pull of any ordinary image, and bounds the
 * label of a pathological one. The lines dropped keep their numbers (the base counts them).
 */
export const MAX_PULL_LOG_LINES = 300

export interface PortBinding {
  HostIp?: string
  HostPort: string
}

/** An entry of HostConfig.Mounts. */
export interface ContainerMount {
  Type: 'bind' | 'volume'
  /** The host directory (bind) or the volume's name (volume). */
  Source: string
  Target: string
  ReadOnly: boolean
  /** Labels Docker gives a volume it creates for this mount. */
  VolumeOptions?: { Labels: Record<string, string> }
}

export interface DeviceRequest {
  Driver: string
  DeviceIDs: string[]
  Capabilities: string[][]
}

/** The body of POST /containers/create, as far as podyard sets it. */
export interface ContainerCreateBody {
  Image: string
  Cmd?: string[]
  Entrypoint?: string[]
  Env: string[]
  Labels: Record<string, string>
  ExposedPorts: Record<string, Record<string, never>>
  HostConfig: {
    Mounts: ContainerMount[]
    PortBindings: Record<string, PortBinding[]>
    NanoCpus: number
    Memory: number
    /** Memory plus swap: equal to Memory, so that the workload never swaps past what it rented. */
    MemorySwap: number
    PidsLimit: number
    /** docker-init as PID 1 forwards SIGTERM to the command (a shell as PID 1 ignores it). */
    Init: boolean
    DeviceRequests?: DeviceRequest[]
    StorageOpt?: Record<string, string>
    BlkioDeviceWriteBps?: BlkioThrottle[]
    BlkioDeviceWriteIOps?: BlkioThrottle[]
    /** The tenant's network (tenant-network.ts), or `host`. */
    NetworkMode?: string
    LogConfig: ContainerLogConfig
  }
  NetworkingConfig?: { EndpointsConfig: Record<string, { Aliases: string[] }> }
}

/** HostConfig.LogConfig: Docker's log driver of the container and its options. */
export interface ContainerLogConfig {
  Type: 'json-file'
  Config: { 'max-size': string; 'max-file': string }
}

/**
 * The container's log within `maxBytes`, as the process driver keeps its workloads' logs: the
 * json-file driver (the one whose log the driver reads back, whatever the daemon's default),
 * in two files of half each; Docker rotates them and drops the oldest. A file may pass its
 * size by one message (Docker looks after each write).
 */
export function containerLogConfig(
  maxBytes: number = DEFAULT_WORKLOAD_LOG_MAX_BYTES,
): ContainerLogConfig {
  return {
    Type: 'json-file',
    Config: { 'max-size': String(Math.max(1, Math.floor(maxBytes / 2))), 'max-file': '2' },
  }
}

/** Docker's container name for a workload: unique per server, readable in `docker ps`. */
export function containerName(serverId: string, workloadId: string): string {
  return `podyard-${serverId}-${workloadId}`.replace(/[^a-zA-Z0-9_.-]/g, '_')
}

/**
 * The named volume of a persistent mount: one per server, workload and container path, so that
 * it outlives the container (stop/start) and is found again by its name.
 */
export function volumeName(serverId: string, workloadId: string, containerPath: string): string {
  const where = containerPath.replace(/^\/+|\/+$/g, '').replace(/[^a-zA-Z0-9]+/g, '-') || 'root'
  return `podyard-${serverId}-${workloadId}-${where}`.replace(/[^a-zA-Z0-9_.-]/g, '_')
}

/** Labels of the named volumes and networks podyard creates. */
export function volumeLabels(
  serverId: string,
  workloadId: string,
  containerPath: string,
): Record<string, string> {
  return { [SERVER_LABEL]: serverId, [WORKLOAD_LABEL]: workloadId, [MOUNT_LABEL]: containerPath }
}

/**
 * `persistent`: a named volume (it survives stop/start; remove() deletes it). `network`: a bind
 * of the volume's host directory. `platform`: a read-only bind of podyard's own code.
 */
export function containerMounts(
  spec: WorkloadSpec,
  serverId: string,
  volumeNames: Readonly<Record<string, string>> = {},
): ContainerMount[] {
  return spec.mounts.map((mount): ContainerMount => {
    if (mount.kind === 'persistent') {
      return {
        Type: 'volume',
        Source:
          volumeNames[mount.containerPath] ?? volumeName(serverId, spec.id, mount.containerPath),
        Target: mount.containerPath,
        ReadOnly: mount.readOnly === true,
        VolumeOptions: { Labels: volumeLabels(serverId, spec.id, mount.containerPath) },
      }
    }
    return {
      Type: 'bind',
      Source: mount.hostPath,
      Target: mount.containerPath,
      ReadOnly: mount.kind === 'platform' || mount.readOnly === true,
    }
  })
}

/**
 * The persistent mounts of `spec` whose volume in the workload's last container (`previous`) is
 * that of a former server id (`formerIds`): a new container mounts the same volume, so that a
 * workload started before the platform's replicas shared one id keeps its data. Only podyard's
 * own volume names count, never an anonymous volume of the image.
 */
export function previousVolumeNames(
  spec: WorkloadSpec,
  previous: ContainerInspection,
  formerIds: Iterable<string>,
): Record<string, string> {
  const names: Record<string, string> = {}
  const former = [...formerIds]
  for (const mount of spec.mounts) {
    if (mount.kind !== 'persistent') continue
    const candidates = new Set(former.map((id) => volumeName(id, spec.id, mount.containerPath)))
    const had = previous.Mounts?.find(
      (m) =>
        m.Type === 'volume' &&
        m.Destination === mount.containerPath &&
        candidates.has(m.Name ?? ''),
    )
    if (had?.Name) names[mount.containerPath] = had.Name
  }
  return names
}

/** `8888/http` is served over TCP; Docker knows only tcp, udp and sctp. */
export function dockerPortKey(port: WorkloadPort): string {
  return `${port.private}/${port.protocol === 'udp' ? 'udp' : 'tcp'}`
}

export { PIDS_PER_VCPU, pidsLimitOf } from '../workload-limits.js'

/** A rate on one disk, as HostConfig's BlkioDevice* lists take it. */
export interface BlkioThrottle {
  Path: string
  Rate: number
}

/** The limits of HostConfig that hold a workload to what it rented (docs/runtime.md). */
export interface ContainerLimits {
  NanoCpus: number
  Memory: number
  MemorySwap: number
  PidsLimit: number
  StorageOpt?: Record<string, string>
  BlkioDeviceWriteBps?: BlkioThrottle[]
  BlkioDeviceWriteIOps?: BlkioThrottle[]
}

/**
 * The write bandwidth and write operations of `diskWrite`'s rule for `vcpus`, on its disk;
 * a rate of 0 (the operator turned that one off) is left out, as Docker reads 0 as no limit.
 */
function diskWriteLimits(vcpus: number, diskWrite: ContainerDiskWrite | undefined) {
  if (!diskWrite) return {}
  const { bytesPerSecond, iops } = diskWriteLimitsOf(vcpus, diskWrite.rule)
  return {
    ...(bytesPerSecond > 0
      ? { BlkioDeviceWriteBps: [{ Path: diskWrite.device, Rate: bytesPerSecond }] }
      : {}),
    ...(iops > 0 ? { BlkioDeviceWriteIOps: [{ Path: diskWrite.device, Rate: iops }] } : {}),
  }
}

/**
 * What the workload rented as the engine's limits: its vCPUs as a CPU quota, its memory with
 * no swap beyond it, PIDS_PER_VCPU processes per vCPU, and (where the storage driver enforces
 * it: `diskLimit`) its container disk as the writable layer's size, and (where the engine
 * throttles block I/O: `diskWrite`) its writes to the disk of the engine's data root. Docker
 * reads 0 as no limit at all, so a spec that rented no vCPU or no memory is refused rather
 * than unlimited.
 */
export function containerLimits(
  spec: WorkloadSpec,
  diskLimit: boolean,
  diskWrite?: ContainerDiskWrite,
): ContainerLimits {
  if (!(spec.vcpus > 0) || !(spec.memoryGb > 0)) {
    throw new Error(
      `workload ${spec.id} has ${spec.vcpus} vCPUs and ${spec.memoryGb} GB of memory: ` +
        'a container without them would run unlimited',
    )
  }
  const memory = Math.round(spec.memoryGb * GIB)
  return {
    NanoCpus: Math.round(spec.vcpus * 1e9),
    Memory: memory,
    MemorySwap: memory,
    PidsLimit: pidsLimitOf(spec.vcpus),
    ...(diskLimit ? { StorageOpt: { size: `${spec.diskGb}G` } } : {}),
    ...diskWriteLimits(spec.vcpus, diskWrite),
  }
}

export function toContainerCreateBody(
  spec: WorkloadSpec,
  options: ContainerSpecOptions,
): ContainerCreateBody {
  const env: Record<string, string> = { ...spec.env }
  // The workload has its own network namespace: it listens on the private port and Docker
  // publishes that on the public one.
  for (const port of spec.ports) env[`RUNPOD_TCP_PORT_${port.private}`] = String(port.private)
  // The device request picks the GPUs; the variable says which, as under the process driver.
  // Simulated GPUs have no device: both variables name them, as the process driver does.
  // Where the NVIDIA runtime reads the variable (the engine's default runtime), it must name the
  // very devices of the request.
  const deviceIds = spec.gpuIndices.map((i) =>
    options.simulatedGpus ? String(i) : (options.gpuUuids?.[i] ?? String(i)),
  )
  if (spec.gpuIndices.length > 0) {
    env.NVIDIA_VISIBLE_DEVICES = deviceIds.join(',')
    if (options.simulatedGpus) env.CUDA_VISIBLE_DEVICES = spec.gpuIndices.join(',')
  }

  const exposedPorts: ContainerCreateBody['ExposedPorts'] = {}
  const portBindings: Record<string, PortBinding[]> = {}
  for (const port of spec.ports) {
    const key = dockerPortKey(port)
    exposedPorts[key] = {}
    portBindings[key] = [...(portBindings[key] ?? []), { HostPort: String(port.public) }]
  }

  const body: ContainerCreateBody = {
    Image: spec.image,
    Env: Object.entries(env).map(([name, value]) => `${name}=${value}`),
    Labels: {
      ...spec.labels,
      [SERVER_LABEL]: options.serverId,
      [WORKLOAD_LABEL]: spec.id,
      [SPEC_LABELS_LABEL]: JSON.stringify(
        Object.keys(spec.labels).filter((key) => !OWN_LABELS.has(key)),
      ),
      [LOG_BASE_LABEL]: String(options.log?.base ?? 0),
      [PULL_LOG_LABEL]: pullLogLabel(options.log?.pullLines ?? []),
    },
    ExposedPorts: exposedPorts,
    HostConfig: {
      Mounts: containerMounts(spec, options.serverId, options.volumeNames),
      PortBindings: portBindings,
      ...containerLimits(spec, options.diskLimit, options.diskWrite),
      Init: true,
      LogConfig: containerLogConfig(options.logMaxBytes),
    },
  }
  const { entrypoint, cmd } = spec.imageCommand ?? {}
  if (spec.command !== null) body.Cmd = ['/bin/sh', '-c', `${MERGE_STDERR}${spec.command}`]
  else if (entrypoint) {
    // A shell first merges stderr into stdout (as for a command), then execs the entrypoint.
    body.Entrypoint = ['/bin/sh', '-c', `${MERGE_STDERR}exec "$@"`, 'sh', ...entrypoint]
    body.Cmd = cmd ?? []
  } else if (cmd) body.Cmd = cmd
  else if (!options.imageHasCommand) body.Cmd = [...IDLE_CMD]
  if (spec.gpuIndices.length > 0 && !options.simulatedGpus) {
    body.HostConfig.DeviceRequests = [
      {
        Driver: 'nvidia',
        DeviceIDs: deviceIds,
        Capabilities: [['gpu']],
      },
    ]
  }
  // The tenant's own bridge (tenant-network.ts), the host's network, or Docker's default.
  const { NetworkMode, EndpointsConfig } = networkConfigOf(spec, options.serverId)
  if (NetworkMode) body.HostConfig.NetworkMode = NetworkMode
  if (EndpointsConfig) body.NetworkingConfig = { EndpointsConfig }
  return body
}

/** The parts of GET /containers/{id}/json that podyard reads. */
export interface ContainerInspection {
  Config: { Labels?: Record<string, string> | null }
  HostConfig?: { NetworkMode?: string }
  Mounts?: Array<{ Type?: string; Name?: string; Destination?: string }>
  State: {
    Status?: string
    Running: boolean
    Restarting?: boolean
    Paused?: boolean
    ExitCode: number
    /** The kernel's OOM killer killed a process of the container (its memory limit). */
    OOMKilled?: boolean
    StartedAt: string
    FinishedAt: string
  }
}

/** Docker's zero time, for a container that never started or never finished. */
const ZERO_TIME_PREFIX = '0001-01-01'

function isoTime(value: string): string | null {
  if (!value || value.startsWith(ZERO_TIME_PREFIX)) return null
  const time = Date.parse(value)
  return Number.isNaN(time) ? null : new Date(time).toISOString()
}

/**
 * Docker reports a process killed by signal n as exit code 128 + n (docker-init does the same
 * for its child). The contract says null for a signal; a command that itself exits with 129..192
 * is reported as killed, which is the price of not keeping state outside Docker.
 */
export function exitCodeOf(code: number): number | null {
  return code > 128 && code <= 128 + 64 ? null : code
}

/** The spec's label keys; without the marker (never written by us), all but ours. */
function specLabelKeys(all: Record<string, string>): string[] {
  try {
    const keys: unknown = JSON.parse(all[SPEC_LABELS_LABEL] ?? '')
    if (Array.isArray(keys)) return keys.filter((key): key is string => typeof key === 'string')
  } catch {
    // Not ours: fall through.
  }
  return Object.keys(all).filter((key) => !OWN_LABELS.has(key))
}

/** The value of PULL_LOG_LABEL: the last MAX_PULL_LOG_LINES lines as JSON. */
export function pullLogLabel(lines: readonly LogLine[]): string {
  return JSON.stringify(
    lines.slice(-MAX_PULL_LOG_LINES).map(({ seq, ts, line }) => ({ seq, ts, line })),
  )
}

/**
 * Where a container's log continues the workload's, from its labels. A container without them
 * (created before they existed) starts at 0 with no pull lines; malformed values read the same.
 */
export function logPositionOf(
  labels: Record<string, string> | null | undefined,
): ContainerLogPosition {
  const base = Number(labels?.[LOG_BASE_LABEL] ?? 0)
  let pullLines: LogLine[] = []
  try {
    const parsed: unknown = JSON.parse(labels?.[PULL_LOG_LABEL] ?? '[]')
    if (Array.isArray(parsed)) {
      pullLines = parsed.filter(
        (entry): entry is LogLine =>
          typeof entry === 'object' &&
          entry !== null &&
          Number.isInteger((entry as LogLine).seq) &&
          typeof (entry as LogLine).ts === 'string' &&
          typeof (entry as LogLine).line === 'string',
      )
    }
  } catch {
    // Not ours, or damaged: no pull lines.
  }
  return { base: Number.isSafeInteger(base) && base >= 0 ? base : 0, pullLines }
}

export function workloadStateOf(inspection: ContainerInspection): WorkloadState {
  const all = inspection.Config.Labels ?? {}
  const id = all[WORKLOAD_LABEL] ?? ''
  const labels: Record<string, string> = {}
  for (const key of specLabelKeys(all)) if (all[key] !== undefined) labels[key] = all[key]
  const state = inspection.State
  const running = state.Running || state.Restarting === true || state.Paused === true
  const startedAt = isoTime(state.StartedAt) ?? new Date(0).toISOString()
  if (running) return { id, phase: 'running', startedAt, exitCode: null, finishedAt: null, labels }
  return {
    id,
    phase: 'exited',
    startedAt,
    exitCode: exitCodeOf(state.ExitCode),
    finishedAt: isoTime(state.FinishedAt) ?? startedAt,
    ...(state.OOMKilled === true ? { outOfMemory: true } : {}),
    labels,
  }
}
