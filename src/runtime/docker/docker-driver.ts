import { randomBytes } from 'node:crypto'
import { mkdir } from 'node:fs/promises'
import { Readable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import Docker from 'dockerode'
import type { EngineConnectionOptions } from './docker-endpoint.js'
import { AppError } from '../../shared/app-error.js'
import type { UnenforcedLimit } from '../../shared/contained-limits.js'
import type {
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
import type { SmiGpuDetail } from '../host-discovery.js'
import type { RuntimeFacts } from '../host-runtime.js'
import { workloadStatsOf, type DockerStats } from './container-stats.js'
import { EngineGpuProbe } from './gpu-probe.js'
import {
  containerName,
  logPositionOf,
  pullFailureMessage,
  previousVolumeNames,
  pullProgressLine,
  registryAuthHeader,
  SERVER_LABEL,
  toContainerCreateBody,
  WORKLOAD_LABEL,
  withDefaultTag,
  workloadStateOf,
  type ContainerInspection,
  type PullProgressEvent,
} from './container-spec.js'
import {
  containmentKey,
  DISK_TRIAL_SIZE,
  diskQuotaTrialOf,
  isSettled,
  unenforcedLimitsOf,
  type DiskQuotaTrial,
  type EngineInfo,
} from './engine-containment.js'
import { installHostFirewall, type HostFirewallRules } from './host-firewall.js'
import { NetworkUse } from './network-use.js'
import { containerLogLines, selectStreamedLines } from './container-log-reader.js'
import { LogFrameDecoder, selectLines } from './log-frames.js'
import {
  networkCreateBody,
  networkIsCurrent,
  tenantNetworkOf,
  type TenantNetwork,
} from './tenant-network.js'
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
  /** The image GPU probe containers run (gpu-probe.ts); DEFAULT_GPU_PROBE_IMAGE by default. */
  gpuProbeImage?: string
  /**
   * The engine's GPUs when known without a probe container: this machine's engine, whose GPUs
   * nvidia-smi listed at start (host-discovery.ts).
   */
  knownGpus?: { gpus: SmiGpuDetail[]; cudaVersion: string | null }
}

/** The engine's words for a published port another process holds (docker-proxy or iptables). */
function publishedPortTaken(error: unknown): boolean {
  return /port is already allocated|address already in use/i.test((error as Error)?.message ?? '')
}

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
/**
 * The repository of the empty image a disk size trial creates its container from (tagged at
 * random per trial, so that replicas trying one engine at once never remove each other's).
 */
export const DISK_TRIAL_IMAGE = 'podyard-disk-trial'
/** How long an inconclusive disk trial stands before it is made again. */
const DISK_TRIAL_RETRY_MS = 60_000
/** An empty tar archive (two zero blocks): the trial image has no files at all. */
const EMPTY_TAR = Buffer.alloc(1024)
/** After SIGKILL the engine reaps the container quickly; past this stop() gives up waiting. */
const KILL_WAIT_MS = 10_000

function statusOf(error: unknown): number | undefined {
  const status = (error as { statusCode?: unknown } | null)?.statusCode
  return typeof status === 'number' ? status : undefined
}

/** 404 (no such container/image) and 409 (not running, already being removed) are outcomes. */
async function ignoring<T>(statuses: number[], action: () => Promise<T>): Promise<T | undefined> {
  try {
    return await action()
  } catch (error) {
    if (statuses.includes(statusOf(error) ?? 0)) return undefined
    throw error
  }
}

/**
 * The log of an image pull, numbered on from the workload's log; kept here while the pull runs
 * (and after it failed), then on the container it was for (PULL_LOG_LABEL).
 */
interface PullLog {
  lines: LogLine[]
  done: boolean
  /** Wakes followers when a line arrives or the pull ends. */
  changed: Set<() => void>
}

/**
 * Runs workloads as Docker containers through the Engine API. The container disk is the
 * container's writable layer (a new container per start, so it begins empty);
 * `containerDiskPath` is not used. Persistent mounts are named volumes that outlive the
 * container and go with remove(). Translation lives in container-spec.ts, container-stats.ts
 * and log-frames.ts; this class only talks to the engine.
 */
export class DockerDriver implements RuntimeDriver {
  readonly name = 'docker'
  private readonly docker: Docker
  private readonly follows = new Set<NodeJS.ReadableStream>()
  private readonly pulls = new Map<string, PullLog>()
  /**
   * Where the log of a workload ends whose start failed after its exited container was removed
   * (nothing in the engine remembers it then); the next start numbers on from it.
   */
  private readonly logEnds = new Map<string, number>()
  /**
   * What the engine enforces (engine-containment.ts), kept while its containmentKey holds, or
   * until `retryAt` when the disk trial told nothing.
   */
  private containment: { key: string; unenforced: UnenforcedLimit[]; retryAt?: number } | undefined
  /** The finding-out under way: one disk trial at a time. */
  private finding: Promise<UnenforcedLimit[]> | undefined
  /** Why the host firewall is not in place (undefined: it is, or not tried yet). */
  private firewallProblem: string | undefined
  private firewallTried = false
  /**
   * Networks being made: two starts on one network at once would each create it (the engine's
   * CheckDuplicate is not atomic), leaving two of one name that no later start can join.
   */
  private readonly networksMade = new Map<string, Promise<void>>()
  private readonly networkUse = new NetworkUse()
  /** The engine's NVIDIA GPUs, read by a probe container (gpu-probe.ts). */
  private readonly gpus: EngineGpuProbe

  constructor(private readonly options: DockerDriverOptions) {
    this.docker = new Docker(
      options.connection?.options ??
        (options.socketPath ? { socketPath: options.socketPath } : undefined),
    )
    this.gpus = new EngineGpuProbe(
      this.docker,
      options.serverId,
      options.gpuProbeImage,
      Date.now,
      options.knownGpus,
    )
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
      cpus: info.NCPU ?? 0,
      memoryBytes: info.MemTotal ?? 0,
      serverVersion: info.ServerVersion ?? '',
      runtimes,
      unenforced: await this.unenforcedLimits(info),
      ...(readGpus ? this.gpus.current() : {}),
    }
  }

  async start(spec: WorkloadSpec): Promise<WorkloadState> {
    const existing = await this.find(spec.id)
    if (existing && workloadStateOf(existing.inspection).phase === 'running') {
      throw new AppError('INVALID_STATE', `workload ${spec.id} is already running`)
    }
    // The new container's log goes on where the workload's ended: the exited container's last
    // line, or the last line of a pull (or a start) that failed since.
    const logEnd = Math.max(
      existing ? await this.logEndOf(existing) : 0,
      this.pulls.get(spec.id)?.lines.at(-1)?.seq ?? 0,
      this.logEnds.get(spec.id) ?? 0,
    )
    // Pulled before the exited container goes: a failed pull leaves it (and its log) in place.
    const { image, pullLines } = await this.ensureImage(spec, logEnd)
    const base = logEnd + pullLines.length
    this.logEnds.set(spec.id, base)
    // A workload's last container under a former id: the new one keeps its volumes.
    const former = [...(await this.serverIds())].filter((id) => id !== this.options.serverId)
    const volumeNames =
      existing && former.length > 0
        ? previousVolumeNames(spec, existing.inspection, former)
        : undefined
    for (const summary of await this.containersOf([`${WORKLOAD_LABEL}=${spec.id}`])) {
      await ignoring([404, 409], () => this.docker.getContainer(summary.Id).remove({ force: true }))
    }
    const body = toContainerCreateBody(spec, {
      serverId: this.options.serverId,
      ...(volumeNames ? { volumeNames } : {}),
      imageHasCommand: Boolean(image.Config?.Cmd?.length || image.Config?.Entrypoint?.length),
      diskLimit: await this.diskEnforced(),
      ...(this.options.logMaxBytes ? { logMaxBytes: this.options.logMaxBytes } : {}),
      simulatedGpus: this.options.simulatedGpus ?? false,
      gpuUuids: this.gpus.uuids(),
      log: { base, pullLines },
    })
    // A bind's source must exist; create it as the server (Docker would refuse or make it root's).
    for (const mount of spec.mounts) {
      if (mount.kind !== 'persistent') await mkdir(mount.hostPath, { recursive: true })
    }
    const network = tenantNetworkOf(spec, this.options.serverId)
    const launch = async (): Promise<Docker.Container> => {
      if (network) await this.ensureNetwork(network)
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
    if (network) this.ensureFirewall()
    const container = network
      ? await this.networkUse.whileStarting(network.docker, launch)
      : await launch()
    // The container holds the position now.
    this.logEnds.delete(spec.id)
    return workloadStateOf((await container.inspect()) as ContainerInspection)
  }

  async stop(id: string, options: { graceMs?: number } = {}): Promise<void> {
    const found = await this.find(id)
    if (!found || workloadStateOf(found.inspection).phase !== 'running') return
    const { container } = found
    // kill + our own timer rather than POST /stop, whose timeout is in whole seconds.
    await ignoring([404, 409], () => container.kill({ signal: 'SIGTERM' }))
    if (await this.waitExited(container, options.graceMs ?? DEFAULT_STOP_GRACE_MS)) return
    await ignoring([404, 409], () => container.kill({ signal: 'SIGKILL' }))
    await this.waitExited(container, KILL_WAIT_MS)
  }

  async inspect(id: string): Promise<WorkloadState | undefined> {
    const found = await this.find(id)
    return found ? workloadStateOf(found.inspection) : undefined
  }

  async list(filter?: WorkloadFilter): Promise<WorkloadState[]> {
    const wanted = Object.entries(filter?.labels ?? {}).map(([key, value]) => `${key}=${value}`)
    const states: WorkloadState[] = []
    const listed = new Set<string>()
    for (const summary of await this.containersOf(wanted)) {
      // A workload is one container: the others are left over from when the platform's
      // replicas had ids of their own and each started it (the first one is the one in use).
      const workload = summary.Labels?.[WORKLOAD_LABEL] ?? ''
      if (listed.has(workload)) {
        await ignoring([404, 409], () =>
          this.docker.getContainer(summary.Id).remove({ force: true }),
        )
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
    const found = await this.find(id)
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
    const found = await this.find(id)
    const pending = this.pulls.get(id)?.lines ?? []
    if (!found) return selectLines(pending, query)
    // Streamed: only the lines returned are kept, never the whole retained log.
    const own = await selectStreamedLines(this.containerLines(found), query)
    return selectLines([...own, ...pending], query)
  }

  async *followLogs(id: string, afterSeq: number, signal: AbortSignal): AsyncIterable<LogLine> {
    const found = await this.find(id)
    if (signal.aborted) return
    const pull = this.pulls.get(id)
    if (pull) {
      // The container (if any) has exited; a pull for its next start is the log's end.
      let last = afterSeq
      for await (const line of found ? this.containerLines(found) : []) {
        if (line.seq > last) yield line
        last = Math.max(last, line.seq)
      }
      yield* this.followPull(pull, last, signal)
      return
    }
    if (!found) return
    const { base, pullLines } = logPositionOf(found.inspection.Config.Labels)
    for (const line of pullLines) if (line.seq > afterSeq && !signal.aborted) yield line
    const stream = await ignoring([404], () =>
      found.container.logs({ stdout: true, stderr: true, timestamps: true, follow: true }),
    )
    if (!stream) return
    this.follows.add(stream)
    const destroy = (): void => void (stream as unknown as { destroy(): void }).destroy()
    signal.addEventListener('abort', destroy, { once: true })
    const decoder = new LogFrameDecoder(base)
    try {
      try {
        for await (const chunk of stream) {
          for (const line of decoder.push(chunk as Buffer)) if (line.seq > afterSeq) yield line
        }
      } catch (error) {
        // Destroying the response on abort or close ends the iteration with an error.
        if (signal.aborted || !this.follows.has(stream)) return
        throw error
      }
      if (signal.aborted) return
      for (const line of decoder.end()) if (line.seq > afterSeq) yield line
    } finally {
      signal.removeEventListener('abort', destroy)
      this.follows.delete(stream)
      destroy()
    }
  }

  /** The container, its named volumes (also when the container is gone) and its pull log. */
  async remove(id: string): Promise<void> {
    this.pulls.delete(id)
    this.logEnds.delete(id)
    const ids = await this.serverIds()
    for (const summary of await this.containersOf([`${WORKLOAD_LABEL}=${id}`], ids)) {
      const container = this.docker.getContainer(summary.Id)
      await ignoring([404, 409], () => container.remove({ force: true, v: true }))
      const network = summary.HostConfig?.NetworkMode
      if (network) await this.removeNetworkIfUnused(network, ids)
    }
    const { Volumes: volumes } = await this.docker.listVolumes({
      filters: { label: [this.serverFilter(ids), `${WORKLOAD_LABEL}=${id}`] },
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
      detail: `Docker containers; ${this.networkIsolation()}`,
    }
    try {
      return {
        ...isolation,
        unenforced: this.containment?.unenforced ?? (await this.unenforcedLimits()),
      }
    } catch {
      return isolation
    }
  }

  /**
   * The limits the engine does not enforce: its cgroup controllers from /info, and one trial of
   * a container disk size. A definite answer is kept until the engine changes (containmentKey);
   * an inconclusive trial is made again after DISK_TRIAL_RETRY_MS.
   */
  private async unenforcedLimits(known?: EngineInfo): Promise<UnenforcedLimit[]> {
    const info = known ?? ((await this.docker.info()) as EngineInfo)
    const key = containmentKey(info)
    const kept = this.containment
    if (kept?.key === key && (kept.retryAt === undefined || Date.now() < kept.retryAt))
      return kept.unenforced
    this.finding ??= (async () => {
      const trial = await this.tryDiskSize()
      const unenforced = unenforcedLimitsOf(info, trial)
      this.containment = {
        key,
        unenforced,
        ...(isSettled(trial) ? {} : { retryAt: Date.now() + DISK_TRIAL_RETRY_MS }),
      }
      return unenforced
    })().finally(() => (this.finding = undefined))
    return this.finding
  }

  /** Whether the engine enforces a container disk size: StorageOpt.size is sent only then. */
  private async diskEnforced(): Promise<boolean> {
    const unenforced = this.containment?.unenforced ?? (await this.unenforcedLimits())
    return !unenforced.some((u) => u.limit === 'disk')
  }

  /**
   * Creates (never starts) a container with a writable layer of DISK_TRIAL_SIZE from an empty
   * image of its own, then removes both: whether the storage driver enforces sizes is known
   * only by asking it (overlay2 does on xfs mounted with pquota, which /info does not say).
   */
  private async tryDiskSize(): Promise<DiskQuotaTrial> {
    const tag = randomBytes(6).toString('hex')
    const image = `${DISK_TRIAL_IMAGE}:${tag}`
    try {
      const progress = await this.docker.importImage(Readable.from([EMPTY_TAR]), {
        repo: DISK_TRIAL_IMAGE,
        tag,
      })
      await new Promise<void>((resolve, reject) =>
        this.docker.modem.followProgress(
          progress,
          (error: Error | null, events: Array<{ error?: string }> | undefined) => {
            // The engine reports a failed import as an event of the stream, not an HTTP error.
            const failed = events?.find((event) => event.error)?.error
            if (error || failed) reject(error ?? new Error(failed))
            else resolve()
          },
        ),
      )
    } catch (error) {
      return { outcome: 'unknown', message: `no trial image: ${(error as Error).message}` }
    }
    let created: Docker.Container | undefined
    let failure: unknown
    try {
      created = await this.docker.createContainer({
        name: `${DISK_TRIAL_IMAGE}-${tag}`,
        Image: image,
        Cmd: ['/never-run'],
        HostConfig: { StorageOpt: { size: DISK_TRIAL_SIZE } },
      })
    } catch (error) {
      failure = error
    }
    // Clean-up failures change nothing of the answer: the leftovers are a few bytes.
    await created?.remove({ force: true }).catch(() => undefined)
    await this.docker
      .getImage(image)
      .remove()
      .catch(() => undefined)
    return diskQuotaTrialOf(created ? undefined : failure)
  }

  /** What keeps a tenant's containers from the host's services and the metadata range. */
  private networkIsolation(): string {
    if (!this.options.hostFirewall) {
      return (
        'a bridge per tenant; the host firewall is not podyard-managed on this engine ' +
        '(remote: install it as docs/security.md says)'
      )
    }
    this.ensureFirewall()
    if (this.firewallProblem) {
      return `a bridge per tenant; host firewall NOT in place (${this.firewallProblem})`
    }
    return 'a bridge per tenant; host firewall in place (no host services, no metadata range)'
  }

  /**
   * Installs the host firewall once per driver (it is idempotent: every server start installs
   * it again); a failure is kept and reported by isolation().
   */
  private ensureFirewall(): void {
    if (!this.options.hostFirewall || this.firewallTried) return
    this.firewallTried = true
    this.firewallProblem = installHostFirewall(this.options.hostFirewall)
  }

  /** Ends its log follows and, for a remote engine, every connection to it (TLS sockets, SSH). */
  async close(): Promise<void> {
    const open = [...this.follows]
    this.follows.clear()
    for (const stream of open) (stream as unknown as { destroy(): void }).destroy()
    this.options.connection?.options.agent?.destroy()
  }

  /** A container's part of the workload's log: its pull lines, then its own output. */
  private async *containerLines(found: {
    container: Docker.Container
    inspection: ContainerInspection
  }): AsyncGenerator<LogLine> {
    const { base, pullLines } = logPositionOf(found.inspection.Config.Labels)
    yield* pullLines
    yield* containerLogLines(found.container, base)
  }

  /** The seq of the last line of an exited container's log (its base when it wrote nothing). */
  private async logEndOf(found: {
    container: Docker.Container
    inspection: ContainerInspection
  }): Promise<number> {
    let end = logPositionOf(found.inspection.Config.Labels).base
    for await (const line of this.containerLines(found)) end = Math.max(end, line.seq)
    return end
  }

  /** This server's id and the platform's former ones (DockerDriverOptions.formerServerIds). */
  private async serverIds(): Promise<ReadonlySet<string>> {
    return new Set([this.options.serverId, ...((await this.options.formerServerIds?.()) ?? [])])
  }

  /** The engine's label filter for `ids`: exact with one id; with several, checked by the caller. */
  private serverFilter(ids: ReadonlySet<string>): string {
    return ids.size === 1 ? `${SERVER_LABEL}=${this.options.serverId}` : SERVER_LABEL
  }

  /**
   * The containers of ours (labelled with one of `ids`) that carry `labels`, each workload's
   * to use first ahead of its others: running ones, then the newest (the last start, whose
   * ports the platform recorded), then this server's id. Others' containers are invisible.
   */
  private async containersOf(
    labels: string[],
    ids?: ReadonlySet<string>,
  ): Promise<Docker.ContainerInfo[]> {
    const ours = ids ?? (await this.serverIds())
    const summaries = await this.docker.listContainers({
      all: true,
      filters: { label: [this.serverFilter(ours), ...labels] },
    })
    const stopped = (s: Docker.ContainerInfo): number => (s.State === 'running' ? 0 : 1)
    const former = (s: Docker.ContainerInfo): number =>
      s.Labels?.[SERVER_LABEL] === this.options.serverId ? 0 : 1
    return summaries
      .filter((s) => ours.has(s.Labels?.[SERVER_LABEL] ?? ''))
      .sort((a, b) => stopped(a) - stopped(b) || b.Created - a.Created || former(a) - former(b))
  }

  /** The container of a workload in use (containersOf's first). */
  private async find(
    id: string,
  ): Promise<{ container: Docker.Container; inspection: ContainerInspection } | undefined> {
    const summary = (await this.containersOf([`${WORKLOAD_LABEL}=${id}`]))[0]
    if (!summary) return undefined
    const container = this.docker.getContainer(summary.Id)
    const inspection = await ignoring([404], () => container.inspect())
    return inspection ? { container, inspection: inspection as ContainerInspection } : undefined
  }

  /**
   * The image's inspection; an absent image is pulled first (with the spec's credentials), its
   * progress numbered after `logEnd` and kept as the end of the workload's log until the
   * container exists, which then carries the lines returned. A failed pull throws an Error
   * whose message says why (it becomes the pod's ERROR reason) and never holds secrets.
   */
  private async ensureImage(
    spec: WorkloadSpec,
    logEnd: number,
  ): Promise<{ image: Docker.ImageInspectInfo; pullLines: LogLine[] }> {
    const present = await ignoring([404], () => this.docker.getImage(spec.image).inspect())
    if (present) return { image: present, pullLines: [] }
    const pull: PullLog = { lines: [], done: false, changed: new Set() }
    this.pulls.set(spec.id, pull)
    const log = (line: string): void => {
      pull.lines.push({ seq: logEnd + pull.lines.length + 1, ts: new Date().toISOString(), line })
      for (const wake of pull.changed) wake()
    }
    const reference = withDefaultTag(spec.image)
    log(`pulling image ${reference}${spec.registryAuth ? ' with the registry credentials' : ''}`)
    const options = spec.registryAuth
      ? { authconfig: { key: registryAuthHeader(spec.image, spec.registryAuth) } }
      : {}
    try {
      const progress = await this.docker.pull(reference, options)
      await new Promise<void>((resolve, reject) => {
        this.docker.modem.followProgress(
          progress,
          (error: Error | null) => (error ? reject(error) : resolve()),
          (event: PullProgressEvent) => {
            const line = pullProgressLine(event)
            if (line !== undefined) log(line)
          },
        )
      })
      log(`pulled image ${reference}`)
      return { image: await this.docker.getImage(spec.image).inspect(), pullLines: pull.lines }
    } catch (error) {
      const message = pullFailureMessage(spec.image, error, spec.registryAuth)
      log(message)
      throw new Error(message)
    } finally {
      pull.done = true
      for (const wake of pull.changed) wake()
    }
  }

  private async *followPull(
    pull: PullLog,
    afterSeq: number,
    signal: AbortSignal,
  ): AsyncIterable<LogLine> {
    let next = afterSeq
    for (;;) {
      for (const line of pull.lines) if (line.seq > next) yield line
      next = Math.max(next, pull.lines.at(-1)?.seq ?? 0)
      if (pull.done || signal.aborted) return
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          pull.changed.delete(wake)
          signal.removeEventListener('abort', wake)
          resolve()
        }
        pull.changed.add(wake)
        signal.addEventListener('abort', wake, { once: true })
      })
    }
  }

  /**
   * A tenant's bridge network, created on first use. One made by an earlier version (a bridge
   * the host firewall does not cover) is made again when no container uses it.
   */
  private async ensureNetwork(network: TenantNetwork): Promise<void> {
    let made = this.networksMade.get(network.docker)
    if (!made) {
      made = this.makeNetwork(network).finally(() => this.networksMade.delete(network.docker))
      this.networksMade.set(network.docker, made)
    }
    await made
  }

  private async makeNetwork(network: TenantNetwork): Promise<void> {
    const existing = this.docker.getNetwork(network.docker)
    const info = (await ignoring([404], () => existing.inspect())) as
      { Options?: Record<string, string>; Containers?: Record<string, unknown> } | undefined
    if (info) {
      if (networkIsCurrent(network, info.Options)) return
      if (Object.keys(info.Containers ?? {}).length > 0) return
      await ignoring([403, 404, 409], () => existing.remove())
    }
    // 409: another start created it meanwhile.
    await ignoring([409], () =>
      this.docker.createNetwork(
        networkCreateBody(network, { [SERVER_LABEL]: this.options.serverId }),
      ),
    )
  }

  /** A network of ours that no container uses any more goes; one still in use stays (403/409). */
  private async removeNetworkIfUnused(name: string, ids: ReadonlySet<string>): Promise<void> {
    const network = this.docker.getNetwork(name)
    const info = (await ignoring([404], () => network.inspect())) as
      { Labels?: Record<string, string>; Containers?: Record<string, unknown> } | undefined
    if (!info || !ids.has(info.Labels?.[SERVER_LABEL] ?? '')) return
    if (Object.keys(info.Containers ?? {}).length > 0) return
    await this.networkUse.removeUnlessStarting(name, async () => {
      await ignoring([403, 404, 409], () => network.remove())
    })
  }

  private async waitExited(container: Docker.Container, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const inspection = await ignoring([404], () => container.inspect())
      if (!inspection) return true
      if (workloadStateOf(inspection as ContainerInspection).phase === 'exited') return true
      if (Date.now() >= deadline) return false
      await sleep(Math.min(25, Math.max(1, deadline - Date.now())))
    }
  }
}
