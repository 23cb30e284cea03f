import type { Kysely, Transaction } from 'kysely'
import type { Allocation, AllocationOwnerKind } from '../domain/catalog/capacity.js'
import { CapacityIndex } from '../domain/catalog/capacity-index.js'
import type { Host } from '../domain/catalog/fleet.js'
import type { AllocationRepo } from '../domain/catalog/ports.js'
import { KyselyAllocationRepo } from './allocation-repo.js'
import type { Database } from './database-schema.js'
import { podStatements } from './pod-statements.js'
import { rowsOf } from './raw-sql.js'

async function readEpoch(db: Kysely<Database>): Promise<number> {
  const [row] = await rowsOf<{ epoch: number | string }>(db, podStatements.allocationEpoch, [])
  return Number(row!.epoch)
}

/** One at a time, in the order asked. */
class Turns {
  private last: Promise<unknown> = Promise.resolve()

  run<T>(work: () => Promise<T>): Promise<T> {
    const run = this.last.then(work)
    this.last = run.catch(() => undefined)
    return run
  }
}

/**
 * The allocations as an index in memory (domain/catalog/capacity-index.ts), kept in step with
 * the store, so that a placement neither reads every allocation nor sums them per host.
 *
 * The store's `allocation_epoch` row counts every change of the allocations (triggers of
 * migration 0022, in the writing transaction). The index is trusted for as long as that count
 * is the one it was built at, plus the changes made through this ledger: a capacity unit reads
 * the count first, and when someone else (another replica, a tool) changed the allocations
 * meanwhile, reads again the owners those changes touched (migration 0031 keeps them), or
 * rebuilds the index from every allocation when they are no longer kept. This process's units
 * and writes take turns; when others wrote between them, the count the index is said to reflect
 * stays behind, and the next unit reads this process's own changes again with theirs.
 */
export class AllocationLedger {
  private index: CapacityIndex | undefined
  /** The epoch `index` reflects. */
  private epoch = -1
  private readonly turns = new Turns()
  /** Indexes built from the store (tests and the bench read it: after the first, a rebuild means someone else wrote). */
  rebuilds = 0
  /** Times the index was brought up to date with others' changes instead (catchUp). */
  caughtUp = 0

  /**
   * @param hosts the hosts the index is built over, or where to read them: the index is built
   *   again when that gives another array (a host's offer changed: host-board.ts)
   * @param sharedStore other processes may write the allocations while a unit runs (PostgreSQL:
   *   replicas' writes outside units); on SQLite a unit's transaction holds the one connection
   */
  constructor(
    private readonly db: Kysely<Database>,
    hosts: readonly Host[] | (() => readonly Host[]),
    private readonly sharedStore = true,
  ) {
    this.hosts = typeof hosts === 'function' ? hosts : () => hosts
  }

  private readonly hosts: () => readonly Host[]

  /**
   * Runs `work` in a transaction, after `lock` (what makes it exclusive for capacity), with a
   * repo whose writes keep the index current, and the index itself. A unit that wrote and
   * failed leaves the next one to rebuild the index.
   */
  async exclusive<T>(
    lock: (tx: Transaction<Database>) => Promise<void>,
    work: (tx: Transaction<Database>, allocations: UnitAllocations) => Promise<T>,
  ): Promise<T> {
    return this.turns.run(async () => {
      let unit: UnitAllocations | undefined
      try {
        const result = await this.db.transaction().execute(async (tx) => {
          await lock(tx)
          const start = await readEpoch(tx)
          const hosts = this.hosts()
          let index = this.index
          const current =
            index !== undefined &&
            index.hosts === hosts &&
            (start === this.epoch || (await this.catchUp(tx, index, start)))
          if (!current || index === undefined) {
            index = new CapacityIndex(hosts, await new KyselyAllocationRepo(tx).list())
            this.index = index
            this.rebuilds += 1
          }
          this.epoch = start
          unit = new UnitAllocations(tx, index)
          const value = await work(tx, unit)
          // Everything this unit changed, and nothing else: then the index is the store's.
          if (
            this.sharedStore &&
            unit.changes > 0 &&
            (await readEpoch(tx)) !== start + unit.changes
          ) {
            unit.foreign = true
          }
          return value
        })
        // Others wrote too: the epoch stays at the unit's start, so that the next unit takes
        // their changes in (catchUp), reading the owners of this unit's own again with them.
        if (unit && unit.changes > 0 && !unit.foreign) this.epoch += unit.changes
        return result
      } catch (error) {
        // Rolled back: the index holds what the unit wrote, the store does not.
        if (unit && unit.changes > 0) this.forget()
        throw error
      }
    })
  }

  /**
   * Brings `index` from this ledger's epoch to `to` with the changes others made meanwhile
   * (migration 0031 keeps the owners of the last 1 000): each owner they touched is read again.
   * False when they are no longer all kept (the caller reads every allocation instead).
   * Reading an owner's row as it is now, rather than replaying each change, makes a change read
   * twice (committed after `to` was read) harmless.
   */
  private async catchUp(tx: Kysely<Database>, index: CapacityIndex, to: number): Promise<boolean> {
    if (this.epoch < 0 || to < this.epoch) return false
    const changes = await rowsOf<{ epoch: number | string; owner_kind: string; owner_id: string }>(
      tx,
      podStatements.allocationChangesSince,
      [this.epoch, to],
    )
    const epochs = new Set(changes.map((c) => Number(c.epoch)))
    if (epochs.size !== to - this.epoch) return false
    const rows = new KyselyAllocationRepo(tx)
    const owners = new Map(changes.map((c) => [`${c.owner_kind}\0${c.owner_id}`, c]))
    for (const { owner_kind, owner_id } of owners.values()) {
      const kind = owner_kind as AllocationOwnerKind
      index.remove(kind, owner_id)
      const row = await rows.findByOwner(kind, owner_id)
      if (row) index.add(row)
    }
    this.caughtUp += 1
    return true
  }

  /** The repo for writes outside a capacity unit: each is its own transaction, in turn. */
  repo(): AllocationRepo {
    return new LedgerAllocations(this.db, this)
  }

  /** A write outside any unit, applied to the index too (see the class's comment). */
  async single(
    write: (tx: Transaction<Database>) => Promise<number>,
    apply: (index: CapacityIndex) => void,
  ): Promise<number> {
    return this.turns.run(async () => {
      const { changed, epoch } = await this.db.transaction().execute(async (tx) => {
        const changed = await write(tx)
        return { changed, epoch: changed > 0 ? await readEpoch(tx) : this.epoch }
      })
      if (changed === 0 || !this.index) return changed
      apply(this.index)
      // Others wrote in between: the epoch stays, and the next unit takes their changes in
      // (catchUp), reading this write's owner again with them.
      if (epoch === this.epoch + changed) this.epoch = epoch
      return changed
    })
  }

  /** The next unit rebuilds the index from the store. */
  private forget(): void {
    this.index = undefined
    this.epoch = -1
  }
}

/** The allocations inside a capacity unit: the store's rows, and the index kept in step. */
export class UnitAllocations implements AllocationRepo {
  /** Rows this unit changed, as the triggers count them. */
  changes = 0
  /** The epoch moved by more than this unit's own changes. */
  foreign = false
  private readonly rows: KyselyAllocationRepo

  constructor(
    tx: Transaction<Database>,
    readonly index: CapacityIndex,
  ) {
    this.rows = new KyselyAllocationRepo(tx)
  }

  async list(): Promise<Allocation[]> {
    return this.index.allocations()
  }

  async listByHost(hostId: string): Promise<Allocation[]> {
    return this.index.allocations().filter((a) => a.hostId === hostId)
  }

  async findByOwner(
    ownerKind: AllocationOwnerKind,
    ownerId: string,
  ): Promise<Allocation | undefined> {
    return this.index.findByOwner(ownerKind, ownerId)
  }

  async insert(allocation: Allocation): Promise<void> {
    await this.rows.insert(allocation)
    this.changes += 1
    this.index.add(allocation)
  }

  async remove(ownerKind: AllocationOwnerKind, ownerId: string): Promise<boolean> {
    // The index is the store's inside the unit: an owner it does not know holds no row.
    if (!this.index.findByOwner(ownerKind, ownerId)) return false
    const removed = await this.rows.remove(ownerKind, ownerId)
    if (!removed) return false
    this.changes += 1
    // The store had a row the index did not: the index is not the store's.
    if (!this.index.remove(ownerKind, ownerId)) this.foreign = true
    return true
  }
}

/** The allocations outside a capacity unit: reads from the store, writes through the ledger. */
class LedgerAllocations implements AllocationRepo {
  private readonly rows: KyselyAllocationRepo

  constructor(
    db: Kysely<Database>,
    private readonly ledger: AllocationLedger,
  ) {
    this.rows = new KyselyAllocationRepo(db)
  }

  list(): Promise<Allocation[]> {
    return this.rows.list()
  }

  listByHost(hostId: string): Promise<Allocation[]> {
    return this.rows.listByHost(hostId)
  }

  findByOwner(ownerKind: AllocationOwnerKind, ownerId: string): Promise<Allocation | undefined> {
    return this.rows.findByOwner(ownerKind, ownerId)
  }

  async insert(allocation: Allocation): Promise<void> {
    await this.ledger.single(
      async (tx) => {
        await new KyselyAllocationRepo(tx).insert(allocation)
        return 1
      },
      (index) => index.add(allocation),
    )
  }

  async remove(ownerKind: AllocationOwnerKind, ownerId: string): Promise<boolean> {
    const changed = await this.ledger.single(
      async (tx) => ((await new KyselyAllocationRepo(tx).remove(ownerKind, ownerId)) ? 1 : 0),
      (index) => void index.remove(ownerKind, ownerId),
    )
    return changed > 0
  }
}
