import type { StoredHost } from './host-credentials.js'
import type { HostSchedule, HostStateRecord } from './host-state.js'

/** The hosts' states in the store (migration 0021), so that every replica sees the same. */
export interface HostStateRepo {
  list(): Promise<HostStateRecord[]>
  /** Writes probes' results; each host's schedule is left as it is (ACTIVE for a new row). */
  saveProbes(records: ReadonlyArray<Omit<HostStateRecord, 'schedule'>>): Promise<void>
  /** Sets the schedule; a host not probed yet gets a row in state UNKNOWN. */
  setSchedule(hostId: string, schedule: HostSchedule, at: string): Promise<void>
}

/**
 * The hosts added at runtime (migration 0026), their inline credentials sealed; every write
 * moves the revision.
 */
export interface ManagedHostRepo {
  list(): Promise<StoredHost[]>
  /** Counts every change: equal revisions, the same hosts. */
  revision(): Promise<number>
  /** False when a host of that id is there already. */
  insert(host: StoredHost, at: string): Promise<boolean>
  /** False when there is no host of that id. */
  update(host: StoredHost, at: string): Promise<boolean>
  /** False when there is no host of that id. */
  remove(hostId: string): Promise<boolean>
}

/** A GPU's withdrawal as the store keeps it (migration 0027). */
export interface GpuWithdrawalRecord {
  hostId: string
  index: number
  /** Why it is withdrawn; null: the operator put it back. */
  reason: string | null
  withdrawnAt: string | null
  /** Its uncorrectable ECC count when withdrawn; null: unknown. */
  eccUncorrected: number | null
  /** The uncorrectable ECC count the operator's last reset accepted. */
  acceptedEccUncorrected: number
}

/** GPU withdrawals in the store, so that a restart and every replica see them. */
export interface GpuWithdrawalRepo {
  list(): Promise<GpuWithdrawalRecord[]>
  /** Withdraws the GPU unless it is withdrawn already; true when this call withdrew it. */
  withdraw(record: {
    hostId: string
    index: number
    reason: string
    at: string
    eccUncorrected: number | null
  }): Promise<boolean>
  /** Puts the GPU back, accepting that uncorrectable ECC count. */
  reset(hostId: string, index: number, acceptedEccUncorrected: number, at: string): Promise<void>
}
