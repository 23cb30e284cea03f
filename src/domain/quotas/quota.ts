/**
 * Quotas per account (docs/billing.md, "Quotas"): ceilings the admin sets on what an account
 * may hold at once. A null limit is no quota, the default.
 */
export const QUOTA_KINDS = ['gpus', 'pods', 'workers', 'volumeGb'] as const
export type QuotaKind = (typeof QUOTA_KINDS)[number]

export type AccountQuotas = Record<QuotaKind, number | null>

/** What the account holds now, in the units of each quota. */
export type QuotaUse = Record<QuotaKind, number>

/** The largest limit accepted: far beyond any fleet, small enough for every integer column. */
export const MAX_QUOTA = 1_000_000

export const NO_QUOTAS: AccountQuotas = { gpus: null, pods: null, workers: null, volumeGb: null }

/** How each quota is named to people, with its unit. */
const QUOTA_NOUNS: Record<QuotaKind, string> = {
  gpus: 'GPUs',
  pods: 'pods',
  workers: 'serverless workers',
  volumeGb: 'network-volume GB',
}

export interface QuotaBreach {
  quota: QuotaKind
  limit: number
  used: number
  requested: number
}

/**
 * The first quota that `adding` would take the account above, or null. Adding nothing of a
 * kind never breaches it, even when the account is already above (a limit lowered below use
 * stops growth; it takes nothing away).
 */
export function quotaBreach(
  quotas: AccountQuotas,
  use: QuotaUse,
  adding: Partial<QuotaUse>,
): QuotaBreach | null {
  for (const quota of QUOTA_KINDS) {
    const limit = quotas[quota]
    const requested = adding[quota] ?? 0
    if (limit === null || requested <= 0) continue
    if (use[quota] + requested > limit) return { quota, limit, used: use[quota], requested }
  }
  return null
}

/** The refusal's text for people and clients: the quota, its limit, the use and what was asked. */
export function describeBreach(breach: QuotaBreach, what: string): string {
  const noun = QUOTA_NOUNS[breach.quota]
  return (
    `quota ${breach.quota} exceeded: ${what} needs ${breach.requested} more ${noun}, ` +
    `the account uses ${breach.used} of its quota of ${breach.limit}; ` +
    `free some or ask the admin to raise the quota`
  )
}

/** Problems of a limit an admin gives (`quotas.gpus: ...`), none when it is acceptable. */
export function quotaLimitProblems(quota: QuotaKind, limit: number | null): string[] {
  if (limit === null) return []
  if (!Number.isInteger(limit) || limit < 0 || limit > MAX_QUOTA) {
    return [`${quota}: must be a whole number from 0 to ${MAX_QUOTA}, or null for no quota`]
  }
  return []
}

/** Whether any quota is set (without one, nothing needs counting). */
export function hasQuota(quotas: AccountQuotas): boolean {
  return QUOTA_KINDS.some((kind) => quotas[kind] !== null)
}
