import { AppError } from '../../shared/app-error.js'
import type { ContainedLimit, UnenforcedLimit } from '../../shared/contained-limits.js'
import { hostPublicIp, type Host } from '../catalog/fleet.js'
import type { Pod } from '../pods/pod.js'
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
  /** Where its workloads run: `this machine`, or its engine's URL. */
  runtime: string
  publicIp: string
  state: HostStateRecord['state']
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

export interface HostServiceDeps {
  board: HostBoard
  /** The server's own address, for hosts that run here. */
  localPublicIp: string
  /** Where a host's workloads run, for people. */
  runtimeOf: (hostId: string) => string
  pods: () => Promise<Pod[]>
  drainHooks: DrainHook[]
  /** `containment.acceptUnenforced`: the limits the operator lets hosts leave unenforced. */
  acceptUnenforced?: readonly ContainedLimit[]
  /**
   * What a host without an engine (the process driver's) leaves unenforced, as its driver
   * says; its probe reports nothing.
   */
  driverUnenforced?: (hostId: string) => readonly UnenforcedLimit[] | undefined
}

/** The operator's view of the hosts and their schedule: cordon, uncordon, drain. */
export class HostService {
  constructor(private readonly deps: HostServiceDeps) {}

  /** Every host's state and schedule, as this replica knows them (for /metrics). */
  states(): HostStateRecord[] {
    return this.deps.board.states()
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
  async drain(hostId: string): Promise<{ host: HostView; podsLeft: PodOnHost[] }> {
    this.host(hostId)
    await this.deps.board.setSchedule(hostId, 'DRAINING')
    for (const hook of this.deps.drainHooks) await hook(hostId)
    const pods = await this.livePods()
    return { host: this.view(this.host(hostId), pods), podsLeft: podsOn(hostId, pods) }
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
    const unenforced = record.facts
      ? (engineUnenforced ?? [])
      : (this.deps.driverUnenforced?.(host.id) ?? [])
    const accepted = this.deps.acceptUnenforced ?? []
    const offered = this.deps.board.offered(host.id) ?? host
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
      runtime: this.deps.runtimeOf(host.id),
      publicIp: hostPublicIp(host, this.deps.localPublicIp),
      state: record.state,
      stateReason: record.reason,
      stateSince: record.since,
      checkedAt: record.checkedAt,
      schedule: record.schedule,
      placeable: reason === undefined,
      unplaceableReason: reason ?? null,
      reported: record.facts ? (reported as Omit<HostFacts, 'unenforced'>) : null,
      offered: { gpu: offered.gpu, vcpus: offered.vcpus, memoryGb: offered.memoryGb },
      unenforcedLimits: unenforced.map((u) => ({ ...u, accepted: accepted.includes(u.limit) })),
      warnings: record.warnings,
      podCount: pods.filter((p) => p.hostId === host.id).length,
    }
  }
}

function podsOn(hostId: string, pods: Pod[]): PodOnHost[] {
  return pods
    .filter((p) => p.hostId === hostId)
    .map((p) => ({ id: p.id, name: p.name, accountId: p.accountId, status: p.status }))
}
