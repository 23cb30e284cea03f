import type { Allocation, AllocationOwnerKind } from './capacity.js'

/** Resources held on hosts; at most one allocation per owner (pod or worker). */
export interface AllocationRepo {
  /** Every allocation, oldest first. */
  list(): Promise<Allocation[]>
  listByHost(hostId: string): Promise<Allocation[]>
  /** Fails when the owner already holds an allocation. */
  insert(allocation: Allocation): Promise<void>
  /** False when the owner held nothing. */
  remove(ownerKind: AllocationOwnerKind, ownerId: string): Promise<boolean>
  findByOwner(ownerKind: AllocationOwnerKind, ownerId: string): Promise<Allocation | undefined>
}
