import type { Allocation, AllocationOwnerKind, FreeCapacity } from './capacity.js'
import type { Host } from './fleet.js'

/** Host ids in the order best fit breaks ties (code units, as `<` compares strings). */
class SortedIds {
  private readonly ids: string[] = []

  get size(): number {
    return this.ids.length
  }

  private position(id: string): number {
    let low = 0
    let high = this.ids.length
    while (low < high) {
      const middle = (low + high) >>> 1
      if (this.ids[middle]! < id) low = middle + 1
      else high = middle
    }
    return low
  }

  add(id: string): void {
    const at = this.position(id)
    if (this.ids[at] !== id) this.ids.splice(at, 0, id)
  }

  delete(id: string): void {
    const at = this.position(id)
    if (this.ids[at] === id) this.ids.splice(at, 1)
  }

  values(): readonly string[] {
    return this.ids
  }
}

/**
 * Hosts of one kind (a GPU type, or a CPU flavor), each filed under its free units (free GPUs,
 * or free vCPUs), overall and per data center: best fit reads the lowest level with room first.
 */
class Buckets {
  private readonly levels = new Map<string, Map<number, SortedIds>>()
  /** The most units a host of the kind has: no level above it exists. */
  top = 0

  private level(scope: string, units: number): SortedIds {
    let byUnits = this.levels.get(scope)
    if (!byUnits) {
      byUnits = new Map()
      this.levels.set(scope, byUnits)
    }
    let ids = byUnits.get(units)
    if (!ids) {
      ids = new SortedIds()
      byUnits.set(units, ids)
    }
    return ids
  }

  file(host: Host, units: number): void {
    this.level('', units).add(host.id)
    this.level(host.dataCenterId, units).add(host.id)
  }

  unfile(host: Host, units: number): void {
    this.levels.get('')?.get(units)?.delete(host.id)
    this.levels.get(host.dataCenterId)?.get(units)?.delete(host.id)
  }

  /**
   * Host ids with at least `units` free, fewest free first, then by id. Read as it is: the
   * index must not change before the iteration ends.
   */
  *from(units: number, dataCenterId: string | undefined): Iterable<string> {
    const byUnits = this.levels.get(dataCenterId ?? '')
    if (!byUnits) return
    for (let level = Math.max(0, units); level <= this.top; level++) {
      const ids = byUnits.get(level)
      if (ids && ids.size > 0) yield* ids.values()
    }
  }
}

interface HostLoad {
  host: Host
  vcpus: number
  memoryGb: number
  diskGb: number
  /** Allocations holding each GPU index (two only in a store written by hand). */
  gpuHolders: Map<number, number>
}

const ownerKey = (kind: AllocationOwnerKind, ownerId: string) => `${kind}:${ownerId}`

/**
 * The allocations of the fleet with each host's free capacity kept up to date as they come and
 * go, so that placement reads a host's free capacity without summing its allocations, and finds
 * the best fit for a request from the hosts with room for it rather than from every host
 * (scheduler/core/placement.ts). Free capacity means exactly what freeCapacity() says.
 */
export class CapacityIndex {
  private readonly loads = new Map<string, HostLoad>()
  private readonly byOwner = new Map<string, Allocation>()
  private readonly gpuKinds = new Map<string, Buckets>()
  private readonly cpuKinds = new Map<string, Buckets>()

  /**
   * @param hosts the fleet's hosts: placement uses the index for a snapshot of these very hosts
   */
  constructor(
    readonly hosts: readonly Host[],
    allocations: readonly Allocation[] = [],
  ) {
    for (const host of hosts) {
      this.loads.set(host.id, { host, vcpus: 0, memoryGb: 0, diskGb: 0, gpuHolders: new Map() })
      if (host.gpu) this.bucketsOf(this.gpuKinds, host.gpu.typeId, host.gpu.count)
      for (const flavor of host.cpuFlavors) this.bucketsOf(this.cpuKinds, flavor, host.vcpus)
      this.file(host.id)
    }
    for (const allocation of allocations) this.add(allocation)
  }

  private bucketsOf(kinds: Map<string, Buckets>, kind: string, units: number): Buckets {
    let buckets = kinds.get(kind)
    if (!buckets) {
      buckets = new Buckets()
      kinds.set(kind, buckets)
    }
    buckets.top = Math.max(buckets.top, units)
    return buckets
  }

  private file(hostId: string): void {
    const load = this.loads.get(hostId)
    if (!load) return
    const free = this.free(hostId)!
    if (load.host.gpu) this.gpuKinds.get(load.host.gpu.typeId)!.file(load.host, free.gpus)
    for (const flavor of load.host.cpuFlavors)
      this.cpuKinds.get(flavor)!.file(load.host, free.vcpus)
  }

  private unfile(hostId: string): void {
    const load = this.loads.get(hostId)
    if (!load) return
    const free = this.free(hostId)!
    if (load.host.gpu) this.gpuKinds.get(load.host.gpu.typeId)!.unfile(load.host, free.gpus)
    for (const flavor of load.host.cpuFlavors)
      this.cpuKinds.get(flavor)!.unfile(load.host, free.vcpus)
  }

  /** The fleet's host of that id. */
  host(hostId: string): Host | undefined {
    return this.loads.get(hostId)?.host
  }

  /** What is left on the host (freeCapacity's meaning); undefined for a host not in the fleet. */
  free(hostId: string): FreeCapacity | undefined {
    const load = this.loads.get(hostId)
    if (!load) return undefined
    const { host } = load
    const gpuIndices: number[] = []
    for (let i = 0; i < (host.gpu?.count ?? 0); i++) if (!load.gpuHolders.has(i)) gpuIndices.push(i)
    return {
      gpus: gpuIndices.length,
      gpuIndices,
      // Never negative: a fleet file shrunk under running pods leaves the host over-committed.
      vcpus: Math.max(0, host.vcpus - load.vcpus),
      memoryGb: Math.max(0, host.memoryGb - load.memoryGb),
      diskGb: Math.max(0, host.diskGb - load.diskGb),
    }
  }

  /** Every allocation, in the order they were added. */
  allocations(): Allocation[] {
    return [...this.byOwner.values()]
  }

  get size(): number {
    return this.byOwner.size
  }

  findByOwner(kind: AllocationOwnerKind, ownerId: string): Allocation | undefined {
    return this.byOwner.get(ownerKey(kind, ownerId))
  }

  /** Fails when the owner already holds an allocation (the store's rule). */
  add(allocation: Allocation): void {
    const key = ownerKey(allocation.ownerKind, allocation.ownerId)
    if (this.byOwner.has(key)) throw new Error(`${key} already holds an allocation`)
    this.byOwner.set(key, allocation)
    this.apply(allocation, 1)
  }

  remove(kind: AllocationOwnerKind, ownerId: string): Allocation | undefined {
    const key = ownerKey(kind, ownerId)
    const allocation = this.byOwner.get(key)
    if (!allocation) return undefined
    this.byOwner.delete(key)
    this.apply(allocation, -1)
    return allocation
  }

  private apply(allocation: Allocation, sign: 1 | -1): void {
    const load = this.loads.get(allocation.hostId)
    // A host gone from the fleet file: its allocations are kept, they hold no host's capacity.
    if (!load) return
    this.unfile(allocation.hostId)
    load.vcpus += sign * allocation.vcpus
    load.memoryGb += sign * allocation.memoryGb
    load.diskGb += sign * allocation.diskGb
    for (const index of new Set(allocation.gpuIndices)) {
      const holders = (load.gpuHolders.get(index) ?? 0) + sign
      if (holders > 0) load.gpuHolders.set(index, holders)
      else load.gpuHolders.delete(index)
    }
    this.file(allocation.hostId)
  }

  /**
   * Hosts of the GPU type with at least `count` free GPUs (in `dataCenterId` when given), fewest
   * free first, then by id: the order in which best fit prefers them. Valid until the index
   * changes.
   */
  *gpuCandidates(typeId: string, count: number, dataCenterId?: string): Iterable<Host> {
    for (const id of this.gpuKinds.get(typeId)?.from(count, dataCenterId) ?? []) {
      yield this.loads.get(id)!.host
    }
  }

  /** Hosts offering the CPU flavor with at least `vcpus` free vCPUs, in best fit's order. */
  *cpuCandidates(flavorId: string, vcpus: number, dataCenterId?: string): Iterable<Host> {
    for (const id of this.cpuKinds.get(flavorId)?.from(vcpus, dataCenterId) ?? []) {
      yield this.loads.get(id)!.host
    }
  }
}
