import { AppError } from '../../shared/app-error.js'
import type { Fleet } from '../catalog/fleet.js'
import type { Pod } from '../pods/pod.js'
import { costOf } from '../pods/pod-rules.js'
import type { ManagedWorker } from '../serverless/worker.js'
import { nanoToUsd, type AccountCredit } from './credits.js'
import type { CreditRepo } from './ports.js'
import { workerHourlyPrice } from './usage.js'

/**
 * USD per hour the account's resources cost now: its pods' `cost` (0 unless they hold
 * resources) and its launched, live serverless workers at their serverless price.
 */
export function runningSpendPerHour(
  pods: readonly Pod[],
  workers: readonly ManagedWorker[],
  prices: Fleet['prices'],
): number {
  let sum = pods.reduce((s, pod) => s + costOf(pod), 0)
  for (const worker of workers) {
    if (
      worker.startedAt === null ||
      worker.phase === 'PENDING' ||
      worker.phase === 'UNHEALTHY' ||
      worker.phase === 'STOPPED'
    ) {
      continue
    }
    sum += workerHourlyPrice(prices, worker)
  }
  return Math.round(sum * 10_000) / 10_000
}

export interface BillingGuardDeps {
  credits: Pick<CreditRepo, 'credit'>
  /** Config `billing.enforce`: without it nothing is refused or stopped (docs/billing.md). */
  enforce: boolean
  spendPerHour(accountId: string): Promise<number>
  /** Accounts the policy never stops (the admin account: the operator's own). */
  exempt(accountId: string): Promise<boolean>
}

const usd = (value: number) => `$${value.toFixed(2)}`

/**
 * The zero-balance and spend-limit policy (docs/billing.md, "Enforcement"): whether an account
 * may start work, and whether new hourly cost fits under its spend limit.
 */
export class BillingGuard {
  constructor(private readonly deps: BillingGuardDeps) {}

  get enforced(): boolean {
    return this.deps.enforce
  }

  currentSpendPerHour(accountId: string): Promise<number> {
    return this.deps.spendPerHour(accountId)
  }

  /** Whether the policy applies to the account now and its balance is used up. */
  async outOfCredits(credit: AccountCredit): Promise<boolean> {
    if (!this.deps.enforce || credit.balanceNano > 0) return false
    return !(await this.deps.exempt(credit.accountId))
  }

  private async creditOf(accountId: string): Promise<AccountCredit | undefined> {
    if (!this.deps.enforce || (await this.deps.exempt(accountId))) return undefined
    const credit = await this.deps.credits.credit(accountId)
    if (!credit) throw new AppError('NOT_FOUND', `account ${accountId} not found`)
    return credit
  }

  private refuseAtZero(credit: AccountCredit, what: string): void {
    if (credit.balanceNano > 0) return
    throw new AppError(
      'PAYMENT_REQUIRED',
      `insufficient credits: the account's balance is ${usd(nanoToUsd(credit.balanceNano))}, so it cannot ${what}; ask an admin to add credits`,
    )
  }

  /** 402 when enforcement is on and the balance is at or below zero. */
  async assertCanRun(accountId: string, what: string): Promise<void> {
    const credit = await this.creditOf(accountId)
    if (credit) this.refuseAtZero(credit, what)
  }

  /**
   * 402 when enforcement is on and the balance is used up, or when `addedUsdPerHour` on top of
   * what the account's resources cost now would exceed its spend limit.
   */
  async assertWithinSpendLimit(
    accountId: string,
    addedUsdPerHour: number,
    what: string,
  ): Promise<void> {
    const credit = await this.creditOf(accountId)
    if (!credit) return
    this.refuseAtZero(credit, what)
    const current = await this.deps.spendPerHour(accountId)
    // Cents of a cent: float sums of prices must not refuse what exactly fits.
    if (current + addedUsdPerHour > credit.spendLimitPerHour + 1e-9) {
      throw new AppError(
        'SPEND_LIMIT_EXCEEDED',
        `spend limit exceeded: to ${what} would cost ${usd(addedUsdPerHour)}/h on top of the ${usd(current)}/h the account spends now, above its spend limit of ${usd(credit.spendLimitPerHour)}/h; stop something or ask an admin to raise the limit`,
      )
    }
  }
}
