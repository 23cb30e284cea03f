import { AppError } from '../../shared/app-error.js'
import type { Clock } from '../../shared/clock.js'
import type { QuotaRepo, QuotaUseReader } from './ports.js'
import {
  describeBreach,
  QUOTA_KINDS,
  quotaBreach,
  quotaLimitProblems,
  type AccountQuotas,
  type QuotaKind,
  type QuotaUse,
} from './quota.js'

/** Each quota with its limit (null: none) and what the account uses of it now. */
export type QuotaReport = Record<QuotaKind, { limit: number | null; used: number }>

export interface QuotaServiceDeps {
  repo: QuotaRepo
  /** Reads use outside any capacity transaction (for reports and early refusals). */
  use: QuotaUseReader
  /** Whether an account exists (a quota of an unknown account is 404). */
  accountExists(accountId: string): Promise<boolean>
  clock: Clock
}

/**
 * Quotas per account: the admin sets them, creates that would exceed them are refused.
 * Callers that take capacity read the limits before their capacity transaction and check
 * inside it against the use read there, so two concurrent creates cannot both take the last
 * slot.
 */
export class QuotaService {
  constructor(private readonly deps: QuotaServiceDeps) {}

  limits(accountId: string): Promise<AccountQuotas> {
    return this.deps.repo.get(accountId)
  }

  async report(accountId: string): Promise<QuotaReport> {
    const [limits, use] = await Promise.all([
      this.deps.repo.get(accountId),
      this.deps.use.use(accountId),
    ])
    return Object.fromEntries(
      QUOTA_KINDS.map((kind) => [kind, { limit: limits[kind], used: use[kind] }]),
    ) as QuotaReport
  }

  /** Sets the given limits (null removes a quota); absent ones are kept. */
  async set(accountId: string, patch: Partial<AccountQuotas>): Promise<QuotaReport> {
    if (!(await this.deps.accountExists(accountId))) {
      throw new AppError('NOT_FOUND', `account ${accountId} not found`)
    }
    const problems = QUOTA_KINDS.flatMap((kind) =>
      patch[kind] === undefined ? [] : quotaLimitProblems(kind, patch[kind]),
    )
    if (problems.length > 0) {
      throw new AppError(
        'VALIDATION_FAILED',
        `the request failed validation: ${problems.join('; ')}`,
        { errors: problems },
      )
    }
    const current = await this.deps.repo.get(accountId)
    const next: AccountQuotas = { ...current }
    for (const kind of QUOTA_KINDS) {
      const limit = patch[kind]
      if (limit !== undefined) next[kind] = limit
    }
    await this.deps.repo.set(accountId, next, this.deps.clock.now().toISOString())
    return this.report(accountId)
  }

  /** Why `adding` may not be taken now, or null (a worker stays PENDING with the reason). */
  refusal(limits: AccountQuotas, use: QuotaUse, adding: Partial<QuotaUse>, what: string) {
    const breach = quotaBreach(limits, use, adding)
    return breach ? describeBreach(breach, what) : null
  }

  /** Throws QUOTA_EXCEEDED naming the quota, its limit and the use, when `adding` breaches one. */
  assertWithin(limits: AccountQuotas, use: QuotaUse, adding: Partial<QuotaUse>, what: string) {
    const breach = quotaBreach(limits, use, adding)
    if (!breach) return
    throw new AppError('QUOTA_EXCEEDED', describeBreach(breach, what), {
      errors: [
        `${breach.quota}: limit ${breach.limit}, used ${breach.used}, requested ${breach.requested}`,
      ],
    })
  }

  /** Checks against use read now, outside a transaction: an early refusal before costly work. */
  async precheck(accountId: string, adding: Partial<QuotaUse>, what: string): Promise<void> {
    const limits = await this.deps.repo.get(accountId)
    if (QUOTA_KINDS.every((kind) => limits[kind] === null)) return
    this.assertWithin(limits, await this.deps.use.use(accountId), adding, what)
  }
}
