import type { HostSchedule, HostStateRecord } from './host-state.js'

/** The hosts' states in the store (migration 0021), so that every replica sees the same. */
export interface HostStateRepo {
  list(): Promise<HostStateRecord[]>
  /** Writes probes' results; each host's schedule is left as it is (ACTIVE for a new row). */
  saveProbes(records: ReadonlyArray<Omit<HostStateRecord, 'schedule'>>): Promise<void>
  /** Sets the schedule; a host not probed yet gets a row in state UNKNOWN. */
  setSchedule(hostId: string, schedule: HostSchedule, at: string): Promise<void>
}
