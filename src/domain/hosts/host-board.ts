import type { Fleet, Host } from '../catalog/fleet.js'
import { hostRuntimeKind } from '../catalog/fleet.js'
import { unplaceableReason, type HostSchedule, type HostStateRecord } from './host-state.js'
import { offeredHost } from './offered-host.js'
import type { HostStateRepo } from './ports.js'

/**
 * How long a probe that changed nothing but its time may go unwritten: the store's `checkedAt`
 * (what other replicas and a restarted server see) lags this replica's by at most this much,
 * and a fleet of ten thousand hosts probed every few seconds does not write ten thousand rows
 * each time.
 */
export const CHECKED_AT_WRITE_INTERVAL_MS = 60_000

/** Everything of a record but its probe time: a change here is written at once. */
function sameExceptCheckedAt(a: Omit<HostStateRecord, 'schedule'>, b: HostStateRecord): boolean {
  return (
    a.state === b.state &&
    a.reason === b.reason &&
    a.since === b.since &&
    JSON.stringify(a.facts) === JSON.stringify(b.facts) &&
    a.warnings.join('\n') === b.warnings.join('\n')
  )
}

/**
 * The hosts' states as this replica knows them: what the store says, read again every few
 * seconds (and at once after this replica's own writes). Synchronous reads, so that placement
 * (inside the store's exclusive unit, which must not wait for another read) and catalog stock
 * can ask it freely; each costs the same whatever the size of the fleet. A host that runs here
 * (the local host, simulated hosts) counts as UP until probed: if this server runs, so does
 * this machine.
 */
export class HostBoard {
  private records = new Map<string, HostStateRecord>()
  private hostById: ReadonlyMap<string, Host> = new Map()
  private positionOf: ReadonlyMap<string, number> = new Map()
  /** The fleet's hosts the maps above were built from: another array, hosts were added or removed. */
  private indexed: readonly Host[] | undefined
  /** unplaceable(), kept until a record changes. */
  private unplaceableCache: Readonly<Record<string, string>> | undefined
  /** When each host's probe time was last written to the store (ms). */
  private readonly writtenAt = new Map<string, number>()
  /** offeredHosts(), kept until a record changes; the same array while nothing it says does. */
  private offeredCache: readonly Host[] | undefined
  private offeredValid = false
  /** Each host's offer and the facts it was computed from (as JSON). */
  private readonly offers = new Map<string, { facts: string; host: Host }>()

  constructor(
    private readonly fleet: Fleet,
    private readonly repo: HostStateRepo,
    private readonly now: () => string,
    private readonly startedAt: string = now(),
  ) {
    this.reindex()
  }

  /** Follows the fleet's hosts when they changed (hosts added or removed at runtime). */
  private reindex(): void {
    const hosts = this.fleet.hosts
    if (this.indexed === hosts) return
    this.hostById = new Map(hosts.map((h) => [h.id, h]))
    this.positionOf = new Map(hosts.map((h, i) => [h.id, i]))
    this.indexed = hosts
    this.unplaceableCache = undefined
    this.offeredCache = undefined
    this.offeredValid = false
  }

  get hosts(): readonly Host[] {
    return this.fleet.hosts
  }

  /** The fleet's host of that id. */
  host(hostId: string): Host | undefined {
    this.reindex()
    return this.hostById.get(hostId)
  }

  async refresh(): Promise<void> {
    this.reindex()
    const next = new Map<string, HostStateRecord>()
    for (const record of await this.repo.list()) {
      if (this.hostById.has(record.hostId)) next.set(record.hostId, record)
    }
    this.records = next
    this.unplaceableCache = undefined
    this.offeredValid = false
  }

  /** The host's state; undefined for a host the fleet does not have. */
  state(hostId: string): HostStateRecord | undefined {
    this.reindex()
    const host = this.hostById.get(hostId)
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
  unplaceable(): Readonly<Record<string, string>> {
    this.reindex()
    if (this.unplaceableCache) return this.unplaceableCache
    const out: Record<string, string> = {}
    for (const record of this.states()) {
      const reason = unplaceableReason(record)
      if (reason !== undefined) out[record.hostId] = reason
    }
    this.unplaceableCache = Object.freeze(out)
    return this.unplaceableCache
  }

  /**
   * The hosts as they offer themselves: the fleet file's declaration lowered to what each
   * host's engine last reported (offered-host.ts). Catalog stock and placement read these. The
   * same array is returned for as long as no host's offer changes, so that what is built over
   * it (the capacity index) is built again only then.
   */
  offeredHosts(): readonly Host[] {
    this.reindex()
    if (this.offeredValid && this.offeredCache) return this.offeredCache
    let changed = this.offeredCache === undefined
    const hosts = this.fleet.hosts.map((declared, i) => {
      const facts = this.records.get(declared.id)?.facts ?? null
      const key = JSON.stringify(facts)
      let offer = this.offers.get(declared.id)
      if (!offer || offer.facts !== key) {
        offer = { facts: key, host: offeredHost(declared, facts).host }
        this.offers.set(declared.id, offer)
      }
      if (this.offeredCache?.[i] !== offer.host) changed = true
      return offer.host
    })
    if (changed) this.offeredCache = hosts
    this.offeredValid = true
    return this.offeredCache!
  }

  /** The host as it offers itself (offeredHosts()). */
  offered(hostId: string): Host | undefined {
    this.reindex()
    const at = this.positionOf.get(hostId)
    return at === undefined ? undefined : this.offeredHosts()[at]
  }

  /** The host's record when it is DOWN. */
  down(hostId: string): HostStateRecord | undefined {
    const record = this.state(hostId)
    return record?.state === 'DOWN' ? record : undefined
  }

  /**
   * Keeps probes' results, and writes to the store those that changed anything but the probe
   * time, or whose stored probe time is older than CHECKED_AT_WRITE_INTERVAL_MS, in one go.
   */
  async saveProbes(records: ReadonlyArray<Omit<HostStateRecord, 'schedule'>>): Promise<void> {
    const writes: Array<Omit<HostStateRecord, 'schedule'>> = []
    let changedAny = false
    for (const record of records) {
      const previous = this.records.get(record.hostId)
      const nowMs = Date.parse(record.checkedAt ?? this.now())
      const changed = previous === undefined || !sameExceptCheckedAt(record, previous)
      const writtenAt = this.writtenAt.get(record.hostId) ?? -Infinity
      if (changed || nowMs - writtenAt >= CHECKED_AT_WRITE_INTERVAL_MS) {
        writes.push(record)
        this.writtenAt.set(record.hostId, nowMs)
      }
      this.records.set(record.hostId, { ...record, schedule: previous?.schedule ?? 'ACTIVE' })
      changedAny ||= changed
    }
    if (changedAny) {
      this.unplaceableCache = undefined
      this.offeredValid = false
    }
    await this.repo.saveProbes(writes)
  }

  async setSchedule(hostId: string, schedule: HostSchedule): Promise<void> {
    await this.repo.setSchedule(hostId, schedule, this.now())
    await this.refresh()
  }
}
