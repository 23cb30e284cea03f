import type { UnenforcedLimit } from '../shared/contained-limits.js'

/**
 * The runtime contract. A driver runs workloads on one host; it knows WorkloadSpecs, never
 * pods or workers (the control loops translate). Every driver passes the conformance suite in
 * test/runtime/runtime-conformance.test.ts.
 */

export interface WorkloadMount {
  /** Directory on the host. */
  hostPath: string
  /** Where the workload sees it. */
  containerPath: string
  /** `platform`: podyard's own code, shown to the workers of its public models. */
  kind: 'persistent' | 'network' | 'platform'
  /** The workload may only read it (a sandbox binds it read-only). */
  readOnly?: boolean
  /**
   * What the mount was rented at (a pod's volume): a driver that bounds disks keeps writes
   * within it; absent: no bound.
   */
  sizeGb?: number
}

export interface WorkloadPort {
  /** The port the workload declares (`8888/http` -> 8888). */
  private: number
  protocol: 'http' | 'tcp' | 'udp'
  /** The host port assigned to it; the control loop picks it, the driver honours it. */
  public: number
}

/**
 * A host port the workload was to publish is held by another process (the engine said so in
 * its own words; drivers translate them). The caller may try other ports.
 */
export class PublishedPortTakenError extends Error {
  override name = 'PublishedPortTakenError'
}

/**
 * A private network the workload joins (pods with globalNetworking: one per account). The
 * docker driver honours it, and so does the process driver for workloads in network
 * namespaces of their own (a bridge per network); in the host's network it is ignored.
 */
export interface WorkloadNetwork {
  /** Names the network; workloads with the same name share it, others cannot reach them. */
  name: string
  /** Host names that resolve to the workload inside the network (`<pod_id>.runpod.internal`). */
  aliases: string[]
  /**
   * The workload's address in the network (the pod's `globalNetworking.ip`, unique within the
   * account), for drivers that assign addresses themselves (the process driver); Docker's
   * assigns its own.
   */
  address?: string
}

export interface WorkloadSpec {
  /** Stable id (a pod id, a worker id); one live workload per id. */
  id: string
  /** Container image reference; drivers without images map it to a command (config `images:`). */
  image: string
  /** Shell command; null runs the image's default (or the driver's documented idle process). */
  command: string | null
  /**
   * The image's entrypoint and command replaced by argument lists, run without a shell (RunPod's
   * JSON dockerArgs); only with `command` null. The process driver, which has no image
   * entrypoints, runs the entrypoint followed by the command.
   */
  imageCommand?: { entrypoint?: string[]; cmd?: string[] }
  env: Record<string, string>
  /**
   * Ephemeral container disk: the driver empties it before every start, so restart and reset
   * begin from nothing.
   */
  containerDiskPath: string
  diskGb: number
  mounts: WorkloadMount[]
  ports: WorkloadPort[]
  /** Host GPU indices assigned to the workload (empty for CPU workloads). */
  gpuIndices: number[]
  vcpus: number
  memoryGb: number
  /**
   * Credentials for pulling `image` from a private registry, decrypted for the driver alone;
   * a driver must never persist or log them (the process driver has no images to pull).
   */
  registryAuth?: { username: string; password: string }
  /** Free-form labels the driver stores with the workload and returns from list(). */
  labels: Record<string, string>
  /**
   * Whom the workload belongs to, as an opaque name: workloads of one tenant may share files
   * (their volumes), workloads of different tenants never share a user. A driver that runs
   * workloads as host users (the process driver's sandbox started by root) gives each tenant
   * its own; absent: the driver's default user. The control loops name the account here.
   */
  tenant?: string
  /** The private network to join; absent: the driver's default network. */
  network?: WorkloadNetwork
  /**
   * The workload shares the host's network namespace, its loopback included: a serverless
   * worker on this machine's engine whose job API address is a loopback one. Drivers with
   * their own network namespaces (docker) honour it, ahead of `network`; the process driver
   * ignores it (its workloads reach a loopback job API through `loopbackPorts`). A workload
   * with it publishes no ports.
   */
  hostNetwork?: boolean
  /**
   * Host loopback TCP ports the workload reaches at the same address from a network namespace
   * of its own (the job API of a worker on this machine). Only the process driver's isolated
   * network uses it; the others reach loopback through `hostNetwork`.
   */
  loopbackPorts?: number[]
}

/** How a driver keeps the workloads it starts from the host and from each other. */
export interface WorkloadIsolation {
  /**
   * `none`: a plain process of the server's user, which can read and signal what that user
   * can; `sandbox`: its own namespaces, a minimal read-only view of the host and an
   * unprivileged user (bubblewrap); `container`: a container of an engine (docs/security.md).
   */
  level: 'none' | 'sandbox' | 'container'
  /** What it is and, for `none`, why: shown in the start banner and in refusals. */
  detail: string
  /**
   * The limits of what a workload rented (its memory, vCPUs, processes, container disk) that
   * this driver cannot enforce on its host, each with why; empty when it enforces them all.
   * Absent: the driver does not say (the process driver, or an engine that did not answer);
   * the control loops then refuse nothing for it (docs/security.md, "Containment").
   */
  unenforced?: UnenforcedLimit[]
}

export type WorkloadPhase = 'running' | 'exited'

export interface WorkloadState {
  id: string
  phase: WorkloadPhase
  /** When the workload's process started (ISO); set while running and after exit. */
  startedAt: string
  /** Set when exited: the exit code, or null when it was killed by a signal. */
  exitCode: number | null
  /** When exited (ISO). */
  finishedAt: string | null
  /**
   * Set when exited: the kernel killed it, or a process of it, for reaching its memory limit
   * (Docker's State.OOMKilled). The control loops tell the tenant so.
   */
  outOfMemory?: boolean
  labels: Record<string, string>
}

export interface WorkloadStats {
  /** Percent of the workload's vCPU allotment, 0-100. */
  cpuPercent: number
  /** Percent of the workload's memory allotment, 0-100. */
  memoryPercent: number
}

export interface LogLine {
  /**
   * Monotonic position of the line in the workload's log, from 1. It keeps increasing across
   * starts of the same id (and across drivers on the same state), until remove(): log streams
   * resume after the last seq a client saw.
   */
  seq: number
  /** When the line was read from the workload (ISO). */
  ts: string
  line: string
}

/**
 * What a workload's log may take on disk when nothing else is configured (config
 * `workloadLogs.maxMb`): past it the oldest lines go (docs/runtime.md, "Logs").
 */
export const DEFAULT_WORKLOAD_LOG_MAX_BYTES = 50 * 1024 * 1024

export interface LogQuery {
  /** Only lines with seq greater than this (resume after Last-Event-ID). */
  afterSeq?: number
  /** Only the last N lines of the history (applied after afterSeq). */
  tail?: number
  /** Only lines at or after this time (ISO). */
  since?: string
}

export interface RuntimeDriver {
  readonly name: string
  /**
   * Starts the workload and returns once it is launched (not necessarily healthy). Starting an
   * id that is running is an error; an exited one is replaced.
   */
  start(spec: WorkloadSpec): Promise<WorkloadState>
  /** SIGTERM to everything the workload runs, SIGKILL after `graceMs`; resolves when gone. */
  stop(id: string, options?: { graceMs?: number }): Promise<void>
  /** Current state, or undefined when the driver has no such workload. */
  inspect(id: string): Promise<WorkloadState | undefined>
  /**
   * Every workload the driver knows on this host, including ones started before a restart; with
   * `filter.labels`, only those whose spec carries each of these labels (the driver skips the
   * others before it reads their state: a host of thousands of pods lists its few workers).
   */
  list(filter?: WorkloadFilter): Promise<WorkloadState[]>
  /** Live usage; undefined when not running. */
  stats(id: string): Promise<WorkloadStats | undefined>
  /** Lines the workload has written (stdout and stderr), oldest first. */
  readLogs(id: string, query?: LogQuery): Promise<LogLine[]>
  /** New lines as they arrive, until the signal aborts. */
  followLogs(id: string, afterSeq: number, signal: AbortSignal): AsyncIterable<LogLine>
  /** Stops it if running and forgets it, its logs and its container disk. */
  remove(id: string): Promise<void>
  /** How the workloads this driver starts now are isolated. */
  isolation(): Promise<WorkloadIsolation>
  /** Releases watchers and timers; running workloads keep running (they are re-adopted). */
  close(): Promise<void>
}

/**
 * An optional power: drivers that learn of a workload's end as it happens (process) tell it.
 * The pod lifecycle then reads such a driver's workloads one by one as they change, and lists
 * them all only now and then; a driver without it is listed on every reconcile pass.
 */
export interface WorkloadWatcher {
  /**
   * Calls `listener` with a workload's id when it ended on its own (or was found ended), until
   * the returned function is called.
   */
  watch(listener: (id: string) => void): () => void
}

export function canWatchWorkloads(
  driver: RuntimeDriver,
): driver is RuntimeDriver & WorkloadWatcher {
  return typeof (driver as Partial<WorkloadWatcher>).watch === 'function'
}

/**
 * An optional power: drivers with images (docker) pull one ahead of time, so that a workload's
 * start on the host does no pull (docs/fleet.md, "Images ahead of time").
 */
export interface ImagePreparer {
  /**
   * Pulls the image unless the host has it ('present'); joins a pull of it in flight. Throws
   * an Error saying why a pull failed (never the credentials).
   */
  prepareImage(
    image: string,
    registryAuth: { username: string; password: string } | undefined,
    onBytes: (done: number, total: number) => void,
  ): Promise<'present' | 'pulled'>
}

export function canPrepareImages(driver: RuntimeDriver): driver is RuntimeDriver & ImagePreparer {
  return typeof (driver as Partial<ImagePreparer>).prepareImage === 'function'
}

/** Which workloads `RuntimeDriver.list` answers. */
export interface WorkloadFilter {
  /** Labels a workload's spec must carry, each with this value. */
  labels?: Readonly<Record<string, string>>
}

/** Whether `labels` carry every label of `filter` (all of them when it names none). */
export function hasLabels(
  labels: Readonly<Record<string, string>>,
  filter: WorkloadFilter | undefined,
): boolean {
  if (!filter?.labels) return true
  for (const [key, value] of Object.entries(filter.labels)) if (labels[key] !== value) return false
  return true
}
