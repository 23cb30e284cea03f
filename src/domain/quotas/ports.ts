import type { AccountQuotas, QuotaUse } from './quota.js'

export interface QuotaRepo {
  /** The account's quotas; NO_QUOTAS when the admin never set one. */
  get(accountId: string): Promise<AccountQuotas>
  set(accountId: string, quotas: AccountQuotas, at: string): Promise<void>
}

/**
 * What an account holds, read where it is counted: inside a capacity transaction, it sees the
 * writes of that transaction and none that another has not committed.
 */
export interface QuotaUseReader {
  use(accountId: string): Promise<QuotaUse>
}
