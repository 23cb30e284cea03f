import { AppError } from '../../shared/app-error.js'
import { isPoolName } from '../catalog/placement-constraints.js'

/** The admin's bindings of accounts to pools, in the store. */
export interface AccountPoolRepo {
  /** Sorted; [] when the account is bound to none. */
  poolsOf(accountId: string): Promise<string[]>
  /** Replaces the account's pools with these. */
  set(accountId: string, pools: readonly string[], at: string): Promise<void>
}

/** More would be a fleet of pools, not a team's. */
export const MAX_POOLS_PER_ACCOUNT = 100

/**
 * Which pools an account is bound to (docs/fleet.md, "Pools"): a host labelled `pool=X` takes
 * only the pods and workers of accounts bound to X; a host in no pool takes every account's.
 */
export class AccountPoolService {
  constructor(
    private readonly repo: AccountPoolRepo,
    private readonly now: () => string,
  ) {}

  poolsOf(accountId: string): Promise<string[]> {
    return this.repo.poolsOf(accountId)
  }

  /** Binds the account to exactly these pools ([] unbinds it from all); answers them sorted. */
  async set(accountId: string, pools: readonly string[]): Promise<string[]> {
    const bad = pools.filter((p) => !isPoolName(p))
    if (bad.length > 0)
      throw new AppError(
        'VALIDATION_FAILED',
        `not a pool name: ${bad.map((p) => JSON.stringify(p)).join(', ')} (a label value: A-Z, a-z, 0-9 and ._-, at most 63)`,
      )
    const unique = [...new Set(pools)].sort()
    if (unique.length > MAX_POOLS_PER_ACCOUNT)
      throw new AppError(
        'VALIDATION_FAILED',
        `at most ${MAX_POOLS_PER_ACCOUNT} pools per account, got ${unique.length}`,
      )
    await this.repo.set(accountId, unique, this.now())
    return unique
  }
}
