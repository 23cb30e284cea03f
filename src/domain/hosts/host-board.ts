import type { Fleet, Host } from '../catalog/fleet.js'
import { hostRuntimeKind } from '../catalog/fleet.js'
import { unplaceableReason, type HostSchedule, type HostStateRecord } from './host-state.js'
import type { HostStateRepo } from './ports.js'

/**
 * The hosts' states as this replica knows them: what the store says, read again every few
 * seconds (and at once after this replica's own writes). Synchronous reads, so that placement
 * (inside the store's exclusive unit, which must not wait for another read) and catalog stock
 * can ask it freely. A host that runs here (the local host, simulated hosts) counts as UP
 * until probed: if this server runs, so does this machine.
 */
export class HostBoard {
  private records = new Map<string, HostStateRecord>()

  constructor(
    private readonly fleet: Fleet,
    private readonly repo: HostStateRepo,
    private readonly now: () => string,
    private readonly startedAt: string = now(),
  ) {}

  get hosts(): readonly Host[] {
    return this.fleet.hosts
  }

  async refresh(): Promise<void> {
    const known = new Set(this.fleet.hosts.map((h) => h.id))
    const next = new Map<string, HostStateRecord>()
    for (const record of await this.repo.list()) {
      if (known.has(record.hostId)) next.set(record.hostId, record)
    }
    this.records = next
  }

  /** The host's state; undefined for a host the fleet does not have. */
  state(hostId: string): HostStateRecord | undefined {
    const host = this.fleet.hosts.find((h) => h.id === hostId)
    if (!host) return undefined
    const stored = this.records.get(hostId)
    if (stored) return stored
    const here = hostRuntimeKind(host) === 'here'
    return {
      hostId,
      state: here ? 'UP' : 'UNKNOWN',
      reason: null,
      since: this.startedAt,
      checkedAt: null,
      facts: null,
      warnings: [],
      schedule: 'ACTIVE',
    }
  }

  states(): HostStateRecord[] {
    return this.fleet.hosts.map((h) => this.state(h.id)!)
  }

  /** The hosts new pods and workers may not be placed on, each with why (placement's input). */
  unplaceable(): Record<string, string> {
    const out: Record<string, string> = {}
    for (const record of this.states()) {
      const reason = unplaceableReason(record)
      if (reason !== undefined) out[record.hostId] = reason
    }
    return out
  }

  /** The host's record when it is DOWN. */
  down(hostId: string): HostStateRecord | undefined {
    const record = this.state(hostId)
    return record?.state === 'DOWN' ? record : undefined
  }

  async saveProbe(record: Omit<HostStateRecord, 'schedule'>): Promise<void> {
    await this.repo.saveProbe(record)
    const schedule = this.records.get(record.hostId)?.schedule ?? 'ACTIVE'
    this.records.set(record.hostId, { ...record, schedule })
  }

  async setSchedule(hostId: string, schedule: HostSchedule): Promise<void> {
    await this.repo.setSchedule(hostId, schedule, this.now())
    await this.refresh()
  }
}
