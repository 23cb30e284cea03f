/**
 * The limits of what a workload rented that a driver enforces on its host (docs/security.md,
 * "Containment"): its memory, its vCPUs as a CPU quota, its number of processes, its container
 * disk, and its disk write bandwidth and write operations (`diskWrite`). Named here because the drivers report them, the control loops refuse by them, the host
 * view shows them and the configuration accepts them (`containment.acceptUnenforced`).
 */
export const CONTAINED_LIMITS = ['memory', 'cpu', 'pids', 'disk', 'diskWrite'] as const

export type ContainedLimit = (typeof CONTAINED_LIMITS)[number]

/** A limit a host does not enforce, and why (the engine's own words where it gave some). */
export interface UnenforcedLimit {
  limit: ContainedLimit
  reason: string
}
