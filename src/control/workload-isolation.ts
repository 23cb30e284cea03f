import type { RuntimeDriver, WorkloadIsolation } from '../runtime/driver.js'
import {
  sharedVolumeStorageUnenforced,
  withDataCenterLimits,
  type ContainedLimit,
  type UnenforcedLimit,
} from '../shared/contained-limits.js'

/**
 * Who may run workloads that nothing isolates, or that a host does not hold to what they
 * rented (docs/security.md, "Isolation by default" and "Containment"). A workload without a
 * sandbox is a plain process of the server's user: it reads the data directory (the encryption
 * key, the database), the server's environment, every account's volumes, and can signal the
 * server. A workload whose memory, CPU, processes or disk a host does not limit can take them
 * from every other workload there. Only code the operator trusts may run so.
 */
export interface IsolationPolicy {
  /**
   * Whether the account's workloads may run unisolated or unlimited: the admin's (the single
   * user of a laptop) and the platform's own (public models run podyard's build or what the
   * operator configured).
   */
  trusted(accountId: string): Promise<boolean>
  /** `sandbox: none`: the operator accepted unisolated workloads for every account. */
  unisolatedForEveryone: boolean
  /**
   * `containment.acceptUnenforced`: the limits the operator accepts a host leaving unenforced,
   * for every account.
   */
  acceptUnenforced: readonly ContainedLimit[]
}

/**
 * The network volumes a workload mounts, as far as containment goes: the `volume` limit of a
 * host matters only to a workload that mounts one, and a volume on a data center's shared
 * storage is unbounded on every host there.
 */
export interface VolumeUse {
  mountsVolume: boolean
  /**
   * The data center whose shared storage (networkVolumeRoot) holds its volumes, when they are
   * there: their sizes are enforced on no host.
   */
  sharedStorageOf?: string
}

/** A workload that mounts no network volume. */
export const NO_VOLUME: VolumeUse = { mountsVolume: false }

/** The refusal's text, the same for pods (their ERROR reason) and workers (THROTTLED). */
export function unisolatedRefusal(isolation: WorkloadIsolation): string {
  return (
    `not started: this host runs workloads without a sandbox (${isolation.detail}), which only ` +
    "the admin account's workloads may do; the operator can install bubblewrap, use the docker " +
    'driver, or set sandbox: none to accept the risk for every account (docs/security.md)'
  )
}

/** `does not enforce the disk limit (why)`: what a host lacks, for refusals and host reasons. */
export function describeUnenforced(unenforced: readonly UnenforcedLimit[]): string {
  const names = unenforced.map((u) => u.limit)
  const which = names.length === 1 ? `the ${names[0]} limit` : `the ${names.join(', ')} limits`
  return `does not enforce ${which} (${unenforced.map((u) => `${u.limit}: ${u.reason}`).join('; ')})`
}

/** The refusal's text when the host does not enforce `unenforced` (never empty). */
export function unenforcedRefusal(unenforced: readonly UnenforcedLimit[]): string {
  return (
    `not started: this host ${describeUnenforced(unenforced)}, which only the admin account's ` +
    'workloads may run without; the operator can accept the risk for every account with ' +
    `containment.acceptUnenforced: [${unenforced.map((u) => u.limit).join(', ')}] ` +
    '(docs/security.md)'
  )
}

/**
 * The limits the driver's host leaves unenforced for this workload that the operator did not
 * accept: `volume` only when it mounts a network volume, with the shared storage's reason first.
 */
function unacceptedLimits(
  isolation: WorkloadIsolation,
  policy: Pick<IsolationPolicy, 'acceptUnenforced'>,
  volumes: VolumeUse,
): UnenforcedLimit[] {
  const shared = volumes.sharedStorageOf
    ? [sharedVolumeStorageUnenforced(volumes.sharedStorageOf)]
    : []
  return withDataCenterLimits(isolation.unenforced ?? [], shared).filter(
    (u) =>
      (u.limit !== 'volume' || volumes.mountsVolume) && !policy.acceptUnenforced.includes(u.limit),
  )
}

/**
 * What keeps the account's workload off this driver's host, or null when nothing does: no
 * sandbox where the operator requires one, or limits it leaves unenforced for the workload that
 * the operator did not accept; the admin account's (trusted) workloads run there regardless.
 */
async function whatRefuses(
  driver: Pick<RuntimeDriver, 'isolation'>,
  accountId: string,
  policy: IsolationPolicy,
  volumes: VolumeUse,
): Promise<{ unisolated: WorkloadIsolation } | { unaccepted: UnenforcedLimit[] } | null> {
  const isolation = await driver.isolation()
  const unisolated = isolation.level === 'none' && !policy.unisolatedForEveryone
  const unaccepted = unacceptedLimits(isolation, policy, volumes)
  if (!unisolated && unaccepted.length === 0) return null
  if (await policy.trusted(accountId)) return null
  return unisolated ? { unisolated: isolation } : { unaccepted }
}

/** Why the account's workload may not start on this driver, or null when it may. */
export async function isolationRefusal(
  driver: Pick<RuntimeDriver, 'isolation'>,
  accountId: string,
  policy: IsolationPolicy,
  volumes: VolumeUse,
): Promise<string | null> {
  const refused = await whatRefuses(driver, accountId, policy, volumes)
  if (!refused) return null
  return 'unisolated' in refused
    ? unisolatedRefusal(refused.unisolated)
    : unenforcedRefusal(refused.unaccepted)
}

/**
 * Why a host takes none of the account's workloads, phrased for a list of hosts (placement
 * reasons), or null when it takes them: the same rule as isolationRefusal.
 */
export async function hostIsolationReason(
  driver: Pick<RuntimeDriver, 'isolation'>,
  accountId: string,
  policy: IsolationPolicy,
  volumes: VolumeUse,
): Promise<string | null> {
  const refused = await whatRefuses(driver, accountId, policy, volumes)
  if (!refused) return null
  return 'unisolated' in refused
    ? "runs workloads without a sandbox, which only the admin account's may do (docs/security.md)"
    : `${describeUnenforced(refused.unaccepted)}, which only the admin account's workloads may ` +
        'run without (containment.acceptUnenforced, docs/security.md)'
}
