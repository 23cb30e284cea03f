import type { WorkloadPort, WorkloadSpec, WorkloadState } from '../driver.js'

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
   * Send `diskGb` as the writable layer's size (`StorageOpt.size`). Only some storage drivers
   * honour it (overlay2 on xfs mounted with pquota, btrfs, zfs, devicemapper); the others,
   * overlay2 on ext4 included, refuse to create the container, so it is off unless configured.
   */
  diskLimit: boolean
}

export interface PortBinding {
  HostIp?: string
  HostPort: string
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
  Env: string[]
  Labels: Record<string, string>
  ExposedPorts: Record<string, Record<string, never>>
  HostConfig: {
    Binds: string[]
    PortBindings: Record<string, PortBinding[]>
    NanoCpus: number
    Memory: number
    /** docker-init as PID 1 forwards SIGTERM to the command (a shell as PID 1 ignores it). */
    Init: boolean
    DeviceRequests?: DeviceRequest[]
    StorageOpt?: Record<string, string>
  }
}

/** Docker's container name for a workload: unique per server, readable in `docker ps`. */
export function containerName(serverId: string, workloadId: string): string {
  return `podyard-${serverId}-${workloadId}`.replace(/[^a-zA-Z0-9_.-]/g, '_')
}

/** `8888/http` is served over TCP; Docker knows only tcp, udp and sctp. */
export function dockerPortKey(port: WorkloadPort): string {
  return `${port.private}/${port.protocol === 'udp' ? 'udp' : 'tcp'}`
}

export function toContainerCreateBody(
  spec: WorkloadSpec,
  options: ContainerSpecOptions,
): ContainerCreateBody {
  const env: Record<string, string> = { ...spec.env }
  // The workload has its own network namespace: it listens on the private port and Docker
  // publishes that on the public one.
  for (const port of spec.ports) env[`RUNPOD_TCP_PORT_${port.private}`] = String(port.private)

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
    },
    ExposedPorts: exposedPorts,
    HostConfig: {
      Binds: spec.mounts.map(
        (mount) => `${mount.hostPath}:${mount.containerPath}${mount.readOnly ? ':ro' : ''}`,
      ),
      PortBindings: portBindings,
      NanoCpus: Math.round(spec.vcpus * 1e9),
      Memory: Math.round(spec.memoryGb * GIB),
      Init: true,
    },
  }
  if (spec.command !== null) body.Cmd = ['/bin/sh', '-c', `${MERGE_STDERR}${spec.command}`]
  else if (!options.imageHasCommand) body.Cmd = [...IDLE_CMD]
  if (spec.gpuIndices.length > 0) {
    body.HostConfig.DeviceRequests = [
      {
        Driver: 'nvidia',
        DeviceIDs: spec.gpuIndices.map(String),
        Capabilities: [['gpu']],
      },
    ]
  }
  if (options.diskLimit) body.HostConfig.StorageOpt = { size: `${spec.diskGb}G` }
  return body
}

/**
 * The registry an image reference is pulled from, as Docker's auth config names it: the first
 * path component when it looks like a host (has a dot or a port, or is localhost), else
 * Docker Hub.
 */
export function registryOf(image: string): string {
  const slash = image.indexOf('/')
  if (slash > 0) {
    const first = image.slice(0, slash)
    if (first.includes('.') || first.includes(':') || first === 'localhost') return first
  }
  return 'https://index.docker.io/v1/'
}

/** The X-Registry-Auth header of a pull: base64url of the JSON auth config. */
export function registryAuthHeader(
  image: string,
  auth: { username: string; password: string },
): string {
  const config = {
    username: auth.username,
    password: auth.password,
    serveraddress: registryOf(image),
  }
  return Buffer.from(JSON.stringify(config)).toString('base64url')
}

/** `name` -> `name:latest`; a digest or tag is kept. What POST /images/create wants. */
export function withDefaultTag(image: string): string {
  if (image.includes('@')) return image
  const lastSlash = image.lastIndexOf('/')
  return image.slice(lastSlash + 1).includes(':') ? image : `${image}:latest`
}

/** The parts of GET /containers/{id}/json that podyard reads. */
export interface ContainerInspection {
  Config: { Labels?: Record<string, string> | null }
  State: {
    Status?: string
    Running: boolean
    Restarting?: boolean
    Paused?: boolean
    ExitCode: number
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

export function workloadStateOf(inspection: ContainerInspection): WorkloadState {
  const labels = { ...(inspection.Config.Labels ?? {}) }
  const id = labels[WORKLOAD_LABEL] ?? ''
  delete labels[WORKLOAD_LABEL]
  delete labels[SERVER_LABEL]
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
    labels,
  }
}
