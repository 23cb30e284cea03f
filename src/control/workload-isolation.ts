import type { RuntimeDriver, WorkloadIsolation } from '../runtime/driver.js'

/**
 * Who may run workloads that nothing isolates (docs/security.md, "Isolation by default"). A
 * workload without a sandbox is a plain process of the server's user: it reads the data
 * directory (the encryption key, the database), the server's environment, every account's
 * volumes, and can signal the server. Only code the operator trusts may run so.
 */
export interface IsolationPolicy {
  /**
   * Whether the account's workloads may run unisolated: the admin's (the single user of a
   * laptop) and the platform's own (public models run podyard's build or what the operator
   * configured).
   */
  trusted(accountId: string): Promise<boolean>
  /** `sandbox: none`: the operator accepted unisolated workloads for every account. */
  unisolatedForEveryone: boolean
}

/** The refusal's text, the same for pods (their ERROR reason) and workers (THROTTLED). */
export function unisolatedRefusal(isolation: WorkloadIsolation): string {
  return (
    `not started: this host runs workloads without a sandbox (${isolation.detail}), which only ` +
    "the admin account's workloads may do; the operator can install bubblewrap, use the docker " +
    'driver, or set sandbox: none to accept the risk for every account (docs/security.md)'
  )
}

/** Why the account's workload may not start on this driver, or null when it may. */
export async function isolationRefusal(
  driver: Pick<RuntimeDriver, 'isolation'>,
  accountId: string,
  policy: IsolationPolicy,
): Promise<string | null> {
  const isolation = await driver.isolation()
  if (isolation.level !== 'none' || policy.unisolatedForEveryone) return null
  if (await policy.trusted(accountId)) return null
  return unisolatedRefusal(isolation)
}
