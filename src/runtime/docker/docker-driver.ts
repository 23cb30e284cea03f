import { mkdir } from 'node:fs/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import Docker from 'dockerode'
import type { EngineConnectionOptions } from './docker-endpoint.js'
import { AppError } from '../../shared/app-error.js'
import type { UnenforcedLimit } from '../../shared/contained-limits.js'
import type {
  ImagePreparer,
  LogLine,
  LogQuery,
  RuntimeDriver,
  WorkloadIsolation,
  WorkloadFilter,
  WorkloadSpec,
  WorkloadState,
  WorkloadStats,
} from '../driver.js'
import { hasLabels, PublishedPortTakenError } from '../driver.js'
import type { DiskBounds } from '../disk-bounds/disk-bounds.js'
import type { SmiGpuDetail } from '../host-discovery.js'
import type { RuntimeFacts } from '../host-runtime.js'
import { DEFAULT_DISK_WRITE_RULE, type DiskWriteRule } from '../workload-limits.js'
import { workloadStatsOf, type DockerStats } from './container-stats.js'
import { DEFAULT_GPU_PROBE_IMAGE, EngineGpuProbe } from './gpu-probe.js'
import { NvidiaSmiContainer } from './nvidia-smi-container.js'
import {
  containerName,
  previousVolumeNames,
  SERVER_LABEL,
  toContainerCreateBody,
  WORKLOAD_LABEL,
  workloadStateOf,
  type ContainerInspection,
  type ContainerDiskWrite,
} from './container-spec.js'
import type { EngineInfo } from './engine-containment.js'
import { ignoring, publishedPortTaken, waitExited } from './engine-calls.js'
import { EngineLimits } from './engine-limits.js'
import type { HostFirewallRules } from './host-firewall.js'
import { ImagePulls } from './image-pulls.js'
import { OwnContainers } from './own-containers.js'
import { TenantNetworks } from './tenant-networks.js'
import { tenantNetworkOf } from './tenant-network.js'
import { bindSources, VolumeBounds } from './volume-bounds.js'
import type { LogNumbersKeeping } from './log-numbers-store.js'
import { WorkloadLogs } from './workload-logs.js'
import { StartupRefusal } from '../../shared/startup-refusal.js'

export interface DockerDriverOptions {
  /**
   * This server's id: every container it creates carries it in SERVER_LABEL, and it lists,
   * stops and removes only containers that do (never anyone else's).
   */
  serverId: string
  /**
   * The platform's former ids (docs/runtime.md, "The server id"): ids its replicas had each
   * kept in their own data directory. Containers and volumes labelled with one are the
   * platform's too: found, listed, stopped and removed like those of `serverId` (a workload
   * with containers under two ids keeps the newest, running one first; list() removes the
   * others), and a workload started again keeps its volume. Nothing new is labelled with them.
   * Asked on every call (the caller caches it): a replica that starts later may add one.
   */
  formerServerIds?: () => Promise<readonly string[]>
  /** The engine's socket; /var/run/docker.sock (or DOCKER_HOST) by default. */
  socketPath?: string
  /**
   * A remote engine instead (docker-endpoint.ts: SSH or TLS), with `where` naming it in
   * messages; socketPath is then ignored.
   */
  connection?: { options: EngineConnectionOptions; where: string }
  /**
   * Where the log numbers of its containers are kept, for every replica and across restarts
   * (log-numbers-store.ts: the store's table); absent: in memory only.
   */
  logNumbers?: LogNumbersKeeping
  /** What a container's log may take (HostConfig.LogConfig); DEFAULT_WORKLOAD_LOG_MAX_BYTES. */
  logMaxBytes?: number
  /**
   * The hosts this driver serves have simulated GPUs: workloads are told their virtual GPU
   * indices in the env and get no device request (see ContainerSpecOptions.simulatedGpus).
   */
  simulatedGpus?: boolean
  /**
   * The engine runs on this machine: the driver installs the host firewall for its networks
   * (host-firewall.ts) before the first workload starts. Absent (a remote engine): nothing
   * keeps containers from the engine host's own services, and isolation() says so.
   */
  hostFirewall?: HostFirewallRules
  /**
   * The engine runs on this machine and its network volumes are on this machine's storage:
   * those with a size are bounded at it with these disk bounds (volume-bounds.ts). Absent (a
   * remote engine): a network volume is a plain bind.
   */
  volumeBounds?: DiskBounds
  /**
   * Each container's disk write limits per vCPU (containment.diskWrite);
   * DEFAULT_DISK_WRITE_RULE by default. Set on the disk of the engine's data root where the
   * engine throttles block I/O and that disk is known (found on this machine, or `dataDisk`);
   * reported unenforced elsewhere.
   */
  diskWriteRule?: DiskWriteRule
  /** The disk under a remote engine's data root, as its host declares it (docker.dataDisk). */
  dataDisk?: string
  /** The image GPU probe containers run (gpu-probe.ts); DEFAULT_GPU_PROBE_IMAGE by default. */
  gpuProbeImage?: string
  /**
   * The runtime of a remote engine's GPU sampler container (nvidia-smi-container.ts): `nvidia`
   * by default; null, the engine's default (tests, with a stand-in nvidia-smi in the image).
   */
  gpuSamplerRuntime?: string | null
  /**
   * The engine's GPUs when known without a probe container: this machine's engine, whose GPUs
   * nvidia-smi listed at start (host-discovery.ts).
   */
  knownGpus?: { gpus: SmiGpuDetail[]; cudaVersion: string | null }
}

/** The wait before following a running container's log again after the engine ended a follow. */
const REFOLLOW_FIRST_PAUSE_MS = 100
const REFOLLOW_MAX_PAUSE_MS = 5_000

/** The engine did not answer: the server refuses to start rather than fail every pod later. */
export class DockerEngineUnreachableError extends StartupRefusal {
  constructor(where: string, cause: unknown) {
    super(
      `the docker driver is configured but the Docker engine at ${where} does not answer ` +
        `(${(cause as Error)?.message ?? String(cause)}); start dockerd, fix docker.socketPath ` +
        '(PODYARD_DOCKER_SOCKET), or use the process driver',
    )
    this.name = 'DockerEngineUnreachableError'
  }
}

export const DEFAULT_STOP_GRACE_MS = 10_000
/** After SIGKILL the engine reaps the container quickly; past this stop() gives up waiting. */
const KILL_WAIT_MS = 10_000

/**
 * Runs workloads as Docker containers through the Engine API. The container disk is the
 * container's writable layer (a new container per start, so it begins empty);
 * `containerDiskPath` is not used. Persistent mounts are named volumes that outlive the
 * container and go with remove(). Translation lives in container-spec.ts, container-stats.ts
 * and log-frames.ts; the driver's parts in own-containers.ts (which containers are ours),
 * image-pulls.ts, workload-logs.ts, tenant-networks.ts and engine-limits.ts; this class
 * puts them together behind the RuntimeDriver calls.
 */
export class DockerDriver implements RuntimeDriver, ImagePreparer {
  readonly name = 'docker'
  private readonly docker: Docker
  private readonly pulls: ImagePulls
  private readonly logs: WorkloadLogs
  private readonly own: OwnContainers
  private readonly networks: TenantNetworks
  /** Bounded network volumes, on this machine's engine. */
  private readonly volumes: VolumeBounds | undefined
  /** What the engine enforces (engine-containment.ts). */
  private readonly limits: EngineLimits
  /**
   * Where the log of a workload ends whose start failed after its exited container was removed
   * (nothing in the engine remembers it then); the next start numbers on from it.
   */
  private readonly logEnds = new Map<string, number>()
  /** The engine's NVIDIA GPUs, read by a probe container (gpu-probe.ts). */
  private readonly gpus: EngineGpuProbe
  /**
   * nvidia-smi on a remote engine's machine, for its host's GPU sampler (docs/gpus.md); absent
   * for this machine's engine, whose GPUs the local sampler reads directly.
   */
  readonly nvidiaSmi: NvidiaSmiContainer | undefined

  constructor(private readonly options: DockerDriverOptions) {
    this.docker = new Docker(
      options.connection?.options ??
        (options.socketPath ? { socketPath: options.socketPath } : undefined),
    )
    this.pulls = new ImagePulls(this.docker)
    this.logs = new WorkloadLogs(this.pulls, options.logNumbers)
    this.own = new OwnContainers(this.docker, options.serverId, options.formerServerIds)
    this.networks = new TenantNetworks(this.docker, options.serverId, options.hostFirewall)
    const dockerHost = process.env.DOCKER_HOST ?? ''
    this.limits = new EngineLimits(this.docker, {
      rule: options.diskWriteRule ?? DEFAULT_DISK_WRITE_RULE,
      onThisMachine:
        !options.connection &&
        (options.socketPath !== undefined || dockerHost === '' || dockerHost.startsWith('unix:')),
      where: this.where,
      ...(options.dataDisk ? { declaredDisk: options.dataDisk } : {}),
    })
    this.volumes = options.volumeBounds
      ? new VolumeBounds(options.volumeBounds, async () =>
          (await this.own.containersOf([])).flatMap(bindSources),
        )
      : undefined
    this.gpus = new EngineGpuProbe(
      this.docker,
      options.serverId,
      options.gpuProbeImage,
      Date.now,
      options.knownGpus,
    )
    this.nvidiaSmi = options.connection
      ? new NvidiaSmiContainer(this.docker, {
          serverId: options.serverId,
          image: options.gpuProbeImage ?? DEFAULT_GPU_PROBE_IMAGE,
          where: options.connection.where,
          ...(options.gpuSamplerRuntime !== undefined
            ? { runtime: options.gpuSamplerRuntime }
            : {}),
        })
      : undefined
  }

  /** Where the engine is, for messages. */
  get where(): string {
    return (
      this.options.connection?.where ??
      this.options.socketPath ??
      process.env.DOCKER_HOST ??
      '/var/run/docker.sock'
    )
  }

  /** Throws DockerEngineUnreachableError when the engine does not answer. */
  prepareImage(
    image: string,
    registryAuth: { username: string; password: string } | undefined,
    onBytes: (done: number, total: number) => void,
  ): Promise<'present' | 'pulled'> {
    return this.pulls.prepare(image, registryAuth, onBytes)
  }

  async ping(): Promise<void> {
    try {
      await this.docker.ping()
    } catch (error) {
      throw new DockerEngineUnreachableError(this.where, error)
    }
  }

  /**
   * What the engine says of its machine (GET /info), after a ping, with the limits it does not
   * enforce; throws when it does not answer.
   */
  async probe(): Promise<RuntimeFacts> {
    await this.docker.ping()
    const info = (await this.docker.info()) as EngineInfo
    const runtimes = Object.keys(info.Runtimes ?? {}).sort()
    // Simulated GPUs are not the machine's: none are read.
    const readGpus = runtimes.includes('nvidia') && !this.options.simulatedGpus
    return {
      name: info.Name ?? '',
      ...(info.ID ? { engineId: info.ID } : {}),
      cpus: info.NCPU ?? 0,
      memoryBytes: info.MemTotal ?? 0,
      serverVersion: info.ServerVersion ?? '',
      runtimes,
      unenforced: [...(await this.limits.unenforcedLimits(info)), ...(await this.volumeLimit())],
      ...(readGpus ? this.gpus.current() : {}),
    }
  }

  async start(spec: WorkloadSpec): Promise<WorkloadState> {
    const existing = await this.own.find(spec.id)
    if (existing && workloadStateOf(existing.inspection).phase === 'running') {
      throw new AppError('INVALID_STATE', `workload ${spec.id} is already running`)
    }
    // The new container's log goes on where the workload's ended: the exited container's last
    // line, or the last line of a pull (or a start) that failed since.
    const logEnd = Math.max(
      existing ? await this.logs.logEndOf(existing) : 0,
      this.pulls.get(spec.id)?.lines.at(-1)?.seq ?? 0,
      this.logEnds.get(spec.id) ?? 0,
    )
    // Pulled before the exited container goes: a failed pull leaves it (and its log) in place.
    const { image, pullLines } = await this.pulls.ensureImage(spec, logEnd)
    const base = logEnd + pullLines.length
    this.logEnds.set(spec.id, base)
    // A workload's last container under a former id: the new one keeps its volumes.
    const former = [...(await this.own.serverIds())].filter((id) => id !== this.options.serverId)
    const volumeNames =
      existing && former.length > 0
        ? previousVolumeNames(spec, existing.inspection, former)
        : undefined
    for (const summary of await this.own.containersOf([`${WORKLOAD_LABEL}=${spec.id}`])) {
      await ignoring([404, 409], () => this.docker.getContainer(summary.Id).remove({ force: true }))
      await this.logs.forget(summary.Id)
    }
    const body = toContainerCreateBody(spec, {
      serverId: this.options.serverId,
      ...(volumeNames ? { volumeNames } : {}),
      imageHasCommand: Boolean(image.Config?.Cmd?.length || image.Config?.Entrypoint?.length),
      diskLimit: await this.limits.diskEnforced(),
      ...(await this.diskWriteOf()),
      ...(this.options.logMaxBytes ? { logMaxBytes: this.options.logMaxBytes } : {}),
      simulatedGpus: this.options.simulatedGpus ?? false,
      gpuUuids: this.gpus.uuids(),
      log: { base, pullLines },
    })
    // Bounded network volumes are mounted first (their directory is then the mount point).
    const unprepare = (await this.volumes?.prepare(spec)) ?? (async () => {})
    // A bind's source must exist; create it as the server (Docker would refuse or make it root's).
    for (const mount of spec.mounts) {
      if (mount.kind !== 'persistent') await mkdir(mount.hostPath, { recursive: true })
    }
    const network = tenantNetworkOf(spec, this.options.serverId)
    const launch = async (): Promise<Docker.Container> => {
      if (network) await this.networks.ensureNetwork(network)
      const container = await this.docker.createContainer({
        name: containerName(this.options.serverId, spec.id),
        ...(body as Docker.ContainerCreateOptions),
      })
      this.pulls.delete(spec.id)
      try {
        await container.start()
      } catch (error) {
        await ignoring([404, 409], () => container.remove({ force: true }))
        throw publishedPortTaken(error)
          ? new PublishedPortTakenError((error as Error).message, { cause: error })
          : error
      }
      return container
    }
    if (network) this.networks.ensureFirewall()
    const container = await (
      network ? this.networks.whileStarting(network.docker, launch) : launch()
    ).catch(async (error: unknown) => {
      await unprepare()
      // A network made for a container that was never created, or did not start, has no user.
      if (network) {
        const ids = await this.own.serverIds().catch(() => new Set([this.options.serverId]))
        await this.networks.removeNetworkIfUnused(network.docker, ids).catch(() => undefined)
      }
      throw error
    })
    // The container holds the position now.
    this.logEnds.delete(spec.id)
    return workloadStateOf((await container.inspect()) as ContainerInspection)
  }

  /** Where the engine enforces disk write limits: the disk and rule containers get. */
  private async diskWriteOf(): Promise<{ diskWrite?: ContainerDiskWrite }> {
    const device = await this.limits.diskWriteDevice()
    if (!device) return {}
    return { diskWrite: { device, rule: this.options.diskWriteRule ?? DEFAULT_DISK_WRITE_RULE } }
  }

  async stop(id: string, options: { graceMs?: number } = {}): Promise<void> {
    const found = await this.own.find(id)
    if (!found || workloadStateOf(found.inspection).phase !== 'running') return
    const { container } = found
    // kill + our own timer rather than POST /stop, whose timeout is in whole seconds.
    await ignoring([404, 409], () => container.kill({ signal: 'SIGTERM' }))
    if (await waitExited(container, options.graceMs ?? DEFAULT_STOP_GRACE_MS)) return
    await ignoring([404, 409], () => container.kill({ signal: 'SIGKILL' }))
    await waitExited(container, KILL_WAIT_MS)
  }

  async inspect(id: string): Promise<WorkloadState | undefined> {
    const found = await this.own.find(id)
    return found ? workloadStateOf(found.inspection) : undefined
  }

  async list(filter?: WorkloadFilter): Promise<WorkloadState[]> {
    const wanted = Object.entries(filter?.labels ?? {}).map(([key, value]) => `${key}=${value}`)
    const states: WorkloadState[] = []
    const listed = new Set<string>()
    for (const summary of await this.own.containersOf(wanted)) {
      // A workload is one container: the others are left over from when the platform's
      // replicas had ids of their own and each started it (the first one is the one in use).
      const workload = summary.Labels?.[WORKLOAD_LABEL] ?? ''
      if (listed.has(workload)) {
        await ignoring([404, 409], () =>
          this.docker.getContainer(summary.Id).remove({ force: true }),
        )
        await this.logs.forget(summary.Id)
        continue
      }
      listed.add(workload)
      const inspection = await ignoring([404], () => this.docker.getContainer(summary.Id).inspect())
      if (!inspection) continue
      const state = workloadStateOf(inspection as ContainerInspection)
      // Docker's filter also sees the image's labels; the spec's own must match.
      if (hasLabels(state.labels, filter)) states.push(state)
    }
    return states
  }

  async stats(id: string): Promise<WorkloadStats | undefined> {
    const found = await this.own.find(id)
    if (!found || workloadStateOf(found.inspection).phase !== 'running') return undefined
    // stream=false waits for a second sample (about 1 s) so that the CPU delta means something.
    const stats = await ignoring([404, 409], () => found.container.stats({ stream: false }))
    if (!stats) return undefined
    const limits = (await found.container.inspect()).HostConfig
    return workloadStatsOf(stats as DockerStats, (limits.NanoCpus ?? 0) / 1e9, limits.Memory ?? 0)
  }

  /**
   * The container's pull lines and its own log, then a pull under way (or failed) for its next
   * start: the workload's log, numbered on across its containers.
   */
  async readLogs(id: string, query?: LogQuery): Promise<LogLine[]> {
    return this.logs.read(id, await this.own.find(id), query)
  }

  /**
   * The workload's log from after `afterSeq`, as it is written, until its container exits. The
   * engine may end or break a follow while the container runs (a json-file rotation under a
   * slow reader, a dropped connection to a remote engine): it is followed again from the last
   * line sent, waiting longer each time a follow brought nothing. An engine that no longer
   * answers ends the follow with its error.
   */
  async *followLogs(id: string, afterSeq: number, signal: AbortSignal): AsyncIterable<LogLine> {
    let last = afterSeq
    let pauseMs = REFOLLOW_FIRST_PAUSE_MS
    for (;;) {
      const found = await this.own.find(id)
      if (signal.aborted) return
      // A container that had exited when found: its follow read its log to the end.
      const running = found !== undefined && workloadStateOf(found.inspection).phase === 'running'
      const before = last
      try {
        for await (const line of this.logs.follow(id, found, last, signal)) {
          last = Math.max(last, line.seq)
          yield line
        }
      } catch (error) {
        // The stream broke: follow again while the container runs. An engine's refusal
        // (an HTTP status) is not a broken stream.
        const refused = typeof (error as { statusCode?: unknown }).statusCode === 'number'
        if (refused || !running) throw error
      }
      if (signal.aborted || !running) return
      pauseMs =
        last > before ? REFOLLOW_FIRST_PAUSE_MS : Math.min(pauseMs * 2, REFOLLOW_MAX_PAUSE_MS)
      await sleep(pauseMs, undefined, { signal }).catch(() => undefined)
    }
  }

  /** The container, its named volumes (also when the container is gone) and its pull log. */
  async remove(id: string): Promise<void> {
    this.pulls.delete(id)
    this.logEnds.delete(id)
    const ids = await this.own.serverIds()
    const removed = await this.own.containersOf([`${WORKLOAD_LABEL}=${id}`], ids)
    for (const summary of removed) {
      const container = this.docker.getContainer(summary.Id)
      await ignoring([404, 409], () => container.remove({ force: true, v: true }))
      await this.logs.forget(summary.Id)
      const network = summary.HostConfig?.NetworkMode
      if (network) await this.networks.removeNetworkIfUnused(network, ids)
    }
    if (this.volumes && removed.length > 0) {
      await this.volumes.release(id, removed, await this.own.containersOf([], ids))
    }
    const { Volumes: volumes } = await this.docker.listVolumes({
      filters: { label: [this.own.serverFilter(ids), `${WORKLOAD_LABEL}=${id}`] },
    })
    for (const volume of volumes ?? []) {
      if (!ids.has(volume.Labels?.[SERVER_LABEL] ?? '')) continue
      await ignoring([404, 409], () => this.docker.getVolume(volume.Name).remove())
    }
  }

  /**
   * Containers, with the limits this engine does not enforce (as last found out; the host
   * monitor's probe keeps it current). An engine that does not answer says nothing of them:
   * a start there fails anyway, with the engine's reason.
   */
  async isolation(): Promise<WorkloadIsolation> {
    const isolation: WorkloadIsolation = {
      level: 'container',
      detail: `Docker containers; ${this.networks.networkIsolation()}`,
    }
    try {
      return {
        ...isolation,
        unenforced: [
          ...(this.limits.known ?? (await this.limits.unenforcedLimits())),
          ...(await this.volumeLimit()),
        ],
      }
    } catch {
      return isolation
    }
  }

  /**
   * The `volume` limit when this engine's network volumes are not bounded at their size: on
   * another machine (a bind of a plain directory there), or where this machine bounds no disks.
   */
  private async volumeLimit(): Promise<UnenforcedLimit[]> {
    if (!this.volumes)
      return [
        {
          limit: 'volume',
          reason: `network volumes on the engine's machine (${this.where}) are plain directories bound into its containers: their sizes are billed, not enforced (docs/volumes.md)`,
        },
      ]
    return (await this.volumes.unenforced()).filter((u) => u.limit === 'volume')
  }

  /** Ends its log follows and, for a remote engine, every connection to it (TLS sockets, SSH). */
  async close(): Promise<void> {
    await this.logs.close()
    this.options.connection?.options.agent?.destroy()
  }
}
