/**
 * The limits of what a workload rented that a driver enforces on its host (docs/security.md,
 * "Containment"): its memory, its vCPUs as a CPU quota, its number of processes, its container
 * disk, its disk write bandwidth and write operations (`diskWrite`), and the sizes of the
 * network volumes it mounts (`volume`). Named here because the drivers report them, the control
 * loops refuse by them, the host view shows them and the configuration accepts them
 * (`containment.acceptUnenforced`).
 */
export const CONTAINED_LIMITS = ['memory', 'cpu', 'pids', 'disk', 'diskWrite', 'volume'] as const

export type ContainedLimit = (typeof CONTAINED_LIMITS)[number]

/** A limit a host does not enforce, and why (the engine's own words where it gave some). */
export interface UnenforcedLimit {
  limit: ContainedLimit
  reason: string
}

/**
 * What a limit a host leaves unenforced, and the operator did not accept, means for accounts:
 * every workload of other accounts is refused there, except for `volume`, which refuses only
 * those that mount a network volume.
 */
export function unacceptedConsequence(limit: string): string {
  return limit === 'volume'
    ? "only the admin account's workloads that mount a network volume start"
    : "only the admin account's workloads start"
}

/**
 * The `volume` limit where a data center keeps its network volumes on shared storage
 * (`networkVolumeRoot`): a directory every host there mounts, which no host can bound.
 */
export function sharedVolumeStorageUnenforced(dataCenterId: string): UnenforcedLimit {
  return {
    limit: 'volume',
    reason:
      `the network volumes of data center ${dataCenterId} are directories on its shared storage ` +
      '(networkVolumeRoot), which no host bounds: their sizes are billed, not enforced (docs/volumes.md)',
  }
}

/** The host's unenforced limits with those of its data center's shared storage, one per limit. */
export function withDataCenterLimits(
  host: readonly UnenforcedLimit[],
  dataCenter: readonly UnenforcedLimit[],
): UnenforcedLimit[] {
  const out: UnenforcedLimit[] = [...dataCenter]
  for (const u of host) if (!out.some((o) => o.limit === u.limit)) out.push(u)
  return out
}
