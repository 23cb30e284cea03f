import { AppError } from '../../shared/app-error.js'
import {
  sharedVolumeStorageUnenforced,
  withDataCenterLimits,
  type ContainedLimit,
  type UnenforcedLimit,
} from '../../shared/contained-limits.js'
import { hostPublicIp, type Host } from '../catalog/fleet.js'
import { GLOBAL_NETWORK_CIDR, type Pod } from '../pods/pod.js'
import type { GpuBoard, GpuStatus } from './gpu-board.js'
import { memoryUsePercent } from './gpu-health.js'
import type { HostBoard } from './host-board.js'
import { unplaceableReason, type HostFacts, type HostStateRecord } from './host-state.js'

/** A host as the admin API shows it (docs/fleet.md, "Host state"). */
export interface HostView {
  id: string
  dataCenterId: string
  cloud: string
  gpu: { typeId: string; count: number; cudaVersion: string | null } | null
  vcpus: number
  memoryGb: number
  diskGb: number
  driver: string
  simulated: boolean
  /** Added at runtime (the database), not declared in the configured fleet (read-only). */
  addedAtRuntime: boolean
  /** Where its workloads run: `this machine`, or its engine's URL. */
  runtime: string
  publicIp: string
  /** The admin's labels (`pool=team-a`, `ib=true`); {} when none. */
  labels: Record<string, string>
  /** DEGRADED: UP, with a GPU withdrawn for its health (stateReason names it). */
  state: HostStateRecord['state'] | 'DEGRADED'
  stateReason: string | null
  stateSince: string
  checkedAt: string | null
  schedule: HostStateRecord['schedule']
  /** Whether new pods and workers may be placed on it now, and if not, why. */
  placeable: boolean
  unplaceableReason: string | null
  reported: Omit<HostFacts, 'unenforced'> | null
  /**
   * What it offers to catalog stock and placement: the declaration lowered to what it reported
   * (docs/fleet.md, "Declared and reported"); `warnings` says why where they differ.
   */
  offered: {
    gpu: { typeId: string; count: number; cudaVersion: string | null } | null
    vcpus: number
    memoryGb: number
  }
  /**
   * The limits of a workload this host does not enforce, as its engine last reported them,
   * each with why and whether the operator accepted the risk (`containment.acceptUnenforced`):
   * while one is not accepted, only the admin account's workloads start here (docs/security.md,
   * "Containment"). Empty for a host that enforces them all, or reports nothing (a
   * process-driver host).
   */
  unenforcedLimits: Array<{ limit: ContainedLimit; reason: string; accepted: boolean }>
  warnings: string[]
  /** Pods (not terminated) that hold a place on it. */
  podCount: number
  /**
   * Global networking here: whether its data center offers it, the range of the pods'
   * addresses (each account's network has it to itself), and the pods on it (not terminated)
   * with global networking, and how many accounts' networks they make.
   */
  globalNetworking: { offered: boolean; subnet: string | null; members: number; accounts: number }
  /** Its GPUs as the host's sampler read them (none for simulated GPUs: docs/gpus.md). */
  gpus: GpuView[]
}

/** One sampled GPU of a host, its last reading and health. */
export interface GpuView {
  index: number
  uuid: string | null
  health: GpuStatus['health']
  reason: string | null
  withdrawnAt: string | null
  warnings: string[]
  sampledAt: string | null
  responding: boolean
  utilPercent: number | null
  memoryUsedPercent: number | null
  memoryUsedMib: number | null
  memoryTotalMib: number | null
  temperatureC: number | null
  powerDrawW: number | null
}

/** What /metrics reads of the GPUs: gauges per GPU, and which pod holds which GPU. */
export interface GpuMetricsSnapshot {
  gpus: Array<GpuView & { hostId: string; type: string }>
  assigned: Array<{ hostId: string; index: number; podId: string }>
}

/** A pod still on a host, as a drain lists it. */
export interface PodOnHost {
  id: string
  name: string
  accountId: string
  status: string
}

/**
 * Called when a host starts draining: the serverless workers' part moves its workers off;
 * pods stay and are listed for the operator.
 */
export type DrainHook = (hostId: string) => Promise<void>

/** What `drain --migrate` did with one pod: where it went, or why it stayed. */
/** A pod `drain --migrate` started on another host. */
export interface PodMoved extends PodOnHost {
  movedTo: string
}

export interface PodMoveOutcome {
  podId: string
  /** The host it runs on now; null when it was not moved. */
  movedTo: string | null
  reason: string | null
}

/** A pod left on a draining host, and (with --migrate) why it was not moved. */
export interface PodLeftOnHost extends PodOnHost {
  notMovedBecause?: string
}

export interface HostServiceDeps {
  board: HostBoard
  /** Sampled GPUs and their health; absent: no host's GPUs are sampled. */
  gpus?: GpuBoard
  /** The server's own address, for hosts that run here. */
  localPublicIp: string
  /** Where a host's workloads run, for people. */
  runtimeOf: (hostId: string) => string
  pods: () => Promise<Pod[]>
  /** Whether a host was added at runtime (docs/fleet.md, "Adding a machine"). */
  addedAtRuntime?: (hostId: string) => boolean
  drainHooks: DrainHook[]
  /** Moves a draining host's pods to other hosts (`drain --migrate`); absent, none move. */
  movePods?: (hostId: string, pods: Pod[]) => Promise<PodMoveOutcome[]>
  /** Whether a data center offers global networking (its fleet entry's `globalNetwork`). */
  globalNetworkOffered?: (dataCenterId: string) => boolean
  /** `containment.acceptUnenforced`: the limits the operator lets hosts leave unenforced. */
  acceptUnenforced?: readonly ContainedLimit[]
  /**
   * What a host without an engine (the process driver's) leaves unenforced, as its driver
   * says; its probe reports nothing.
   */
  driverUnenforced?: (hostId: string) => readonly UnenforcedLimit[] | undefined
  /**
   * Whether a data center keeps its network volumes on shared storage (its fleet entry's
   * `networkVolumeRoot`): their sizes are enforced on none of its hosts.
   */
  sharedVolumeStorage?: (dataCenterId: string) => boolean
}

/** The operator's view of the hosts and their schedule: cordon, uncordon, drain. */
export class HostService {
  constructor(private readonly deps: HostServiceDeps) {}

  /** Every host's state and schedule, as this replica knows them (for /metrics). */
  states(): Array<Pick<HostView, 'state' | 'schedule'>> {
    return this.deps.board.states().map((record) => ({
      state: this.degraded(record) ? 'DEGRADED' : record.state,
      schedule: record.schedule,
    }))
  }

  /**
   * The operator says the GPU is fixed: it takes pods again (docs/gpus.md, "Resetting a GPU").
   * Error counts it had are accepted; a new problem withdraws it again.
   */
  async gpuReset(hostId: string, index: number): Promise<HostView> {
    this.host(hostId)
    if (!this.deps.gpus) throw new AppError('NOT_FOUND', `host ${hostId} has no sampled GPUs`)
    await this.deps.gpus.reset(hostId, index)
    return this.viewOf(hostId)
  }

  /** Every sampled GPU with its host's type, and the live pods' GPUs. */
  async gpuMetrics(): Promise<GpuMetricsSnapshot> {
    const board = this.deps.gpus
    if (!board) return { gpus: [], assigned: [] }
    const hostIds = board.hostIds()
    const gpus = hostIds.flatMap((hostId) => {
      const type = this.deps.board.host(hostId)?.gpu?.typeId ?? 'unknown'
      return board.statuses(hostId).map((s) => ({ ...gpuView(s), hostId, type }))
    })
    const sampled = new Set(hostIds)
    const assigned = (await this.livePods())
      .filter((p) => p.hostId !== null && sampled.has(p.hostId))
      .flatMap((p) => p.gpuIndices.map((index) => ({ hostId: p.hostId!, index, podId: p.id })))
    return { gpus, assigned }
  }

  private degraded(record: HostStateRecord): string | undefined {
    if (record.state !== 'UP') return undefined
    const withdrawn = this.deps.gpus
      ?.statuses(record.hostId)
      .filter((g) => g.health === 'WITHDRAWN')
    if (!withdrawn || withdrawn.length === 0) return undefined
    return withdrawn.map((g) => `GPU ${g.index} withdrawn: ${g.reason}`).join('; ')
  }

  async list(): Promise<HostView[]> {
    const pods = await this.livePods()
    return this.deps.board.hosts.map((host) => this.view(host, pods))
  }

  async get(hostId: string): Promise<HostView & { pods: PodOnHost[] }> {
    const host = this.host(hostId)
    const pods = await this.livePods()
    return { ...this.view(host, pods), pods: podsOn(host.id, pods) }
  }

  async cordon(hostId: string): Promise<HostView> {
    this.host(hostId)
    await this.deps.board.setSchedule(hostId, 'CORDONED')
    return this.viewOf(hostId)
  }

  /** Back to ACTIVE, from CORDONED or DRAINING. */
  async uncordon(hostId: string): Promise<HostView> {
    this.host(hostId)
    await this.deps.board.setSchedule(hostId, 'ACTIVE')
    return this.viewOf(hostId)
  }

  /**
   * No new placements, the drain hooks told (serverless workers move off); pods are not
   * touched: they are listed, and the operator stops or terminates them.
   */
  /**
   * No new placements on the host; its serverless workers move off (the drain hooks), and with
   * `migrate` its pods that can move are started again on other hosts.
   */
  async drain(
    hostId: string,
    { migrate = false }: { migrate?: boolean } = {},
  ): Promise<{ host: HostView; podsLeft: PodLeftOnHost[]; podsMoved: PodMoved[] }> {
    this.host(hostId)
    await this.deps.board.setSchedule(hostId, 'DRAINING')
    for (const hook of this.deps.drainHooks) await hook(hostId)
    const before = await this.livePods()
    const outcomes =
      migrate && this.deps.movePods
        ? await this.deps.movePods(
            hostId,
            before.filter((p) => p.hostId === hostId),
          )
        : []
    const pods = await this.livePods()
    const why = new Map(outcomes.map((o) => [o.podId, o.reason]))
    const podsMoved = outcomes.flatMap((o) => {
      const pod = pods.find((p) => p.id === o.podId)
      return o.movedTo && pod
        ? [
            {
              id: pod.id,
              name: pod.name,
              accountId: pod.accountId,
              status: pod.status,
              movedTo: o.movedTo,
            },
          ]
        : []
    })
    const podsLeft = podsOn(hostId, pods).map((p) => {
      const reason = why.get(p.id)
      return reason ? { ...p, notMovedBecause: reason } : p
    })
    return { host: this.view(this.host(hostId), pods), podsLeft, podsMoved }
  }

  private async viewOf(hostId: string): Promise<HostView> {
    return this.view(this.host(hostId), await this.livePods())
  }

  private host(hostId: string): Host {
    const host = this.deps.board.hosts.find((h) => h.id === hostId)
    if (!host) throw new AppError('NOT_FOUND', `host ${hostId} not found`)
    return host
  }

  private async livePods(): Promise<Pod[]> {
    return (await this.deps.pods()).filter((p) => p.status !== 'TERMINATED')
  }

  private view(host: Host, pods: Pod[]): HostView {
    const record = this.deps.board.state(host.id)!
    const reason = unplaceableReason(record)
    const { unenforced: engineUnenforced, ...reported } = record.facts ?? { unenforced: [] }
    const unenforced = withDataCenterLimits(
      record.facts ? (engineUnenforced ?? []) : (this.deps.driverUnenforced?.(host.id) ?? []),
      this.deps.sharedVolumeStorage?.(host.dataCenterId)
        ? [sharedVolumeStorageUnenforced(host.dataCenterId)]
        : [],
    )
    const accepted = this.deps.acceptUnenforced ?? []
    const offered = this.deps.board.offered(host.id) ?? host
    const degraded = this.degraded(record)
    const gpuSource = this.deps.gpus?.sourceProblem(host.id)
    return {
      id: host.id,
      dataCenterId: host.dataCenterId,
      cloud: host.cloud,
      gpu: host.gpu,
      vcpus: host.vcpus,
      memoryGb: host.memoryGb,
      diskGb: host.diskGb,
      driver: host.driver,
      simulated: host.simulated,
      addedAtRuntime: this.deps.addedAtRuntime?.(host.id) ?? false,
      runtime: this.deps.runtimeOf(host.id),
      publicIp: hostPublicIp(host, this.deps.localPublicIp),
      labels: { ...host.labels },
      state: degraded ? 'DEGRADED' : record.state,
      stateReason: degraded ?? record.reason,
      stateSince: record.since,
      checkedAt: record.checkedAt,
      schedule: record.schedule,
      placeable: reason === undefined,
      unplaceableReason: reason ?? null,
      reported: record.facts ? (reported as Omit<HostFacts, 'unenforced'>) : null,
      offered: { gpu: offered.gpu, vcpus: offered.vcpus, memoryGb: offered.memoryGb },
      unenforcedLimits: unenforced.map((u) => ({ ...u, accepted: accepted.includes(u.limit) })),
      warnings: [...record.warnings, ...(gpuSource ? [gpuSource] : [])],
      podCount: pods.filter((p) => p.hostId === host.id).length,
      globalNetworking: this.globalNetworking(host, pods),
      gpus: (this.deps.gpus?.statuses(host.id) ?? []).map(gpuView),
    }
  }

  private globalNetworking(host: Host, pods: Pod[]): HostView['globalNetworking'] {
    const offered = this.deps.globalNetworkOffered?.(host.dataCenterId) ?? false
    const members = pods.filter((p) => p.hostId === host.id && p.globalNetworking)
    return {
      offered,
      subnet: offered || members.length > 0 ? GLOBAL_NETWORK_CIDR : null,
      members: members.length,
      accounts: new Set(members.map((p) => p.accountId)).size,
    }
  }
}

function gpuView(status: GpuStatus): GpuView {
  const r = status.reading
  return {
    index: status.index,
    uuid: status.uuid,
    health: status.health,
    reason: status.reason,
    withdrawnAt: status.withdrawnAt,
    warnings: status.warnings,
    sampledAt: status.sampledAt,
    responding: r?.responding ?? false,
    utilPercent: r?.utilPercent ?? null,
    memoryUsedPercent: r && r.memoryTotalMib !== null ? memoryUsePercent(r) : null,
    memoryUsedMib: r?.memoryUsedMib ?? null,
    memoryTotalMib: r?.memoryTotalMib ?? null,
    temperatureC: r?.temperatureC ?? null,
    powerDrawW: r?.powerDrawW ?? null,
  }
}

function podsOn(hostId: string, pods: Pod[]): PodOnHost[] {
  return pods
    .filter((p) => p.hostId === hostId)
    .map((p) => ({ id: p.id, name: p.name, accountId: p.accountId, status: p.status }))
}
