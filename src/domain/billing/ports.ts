import type { AccountCredit, CreditEntry } from './credits.js'

export interface CreditRepo {
  /** Appends the entry and moves the balance by its amount in one transaction. */
  append(entry: CreditEntry): Promise<AccountCredit>
  credit(accountId: string): Promise<AccountCredit | undefined>
  setSpendLimit(accountId: string, usdPerHour: number): Promise<AccountCredit | undefined>
  /** The account's entries, newest first. */
  entries(accountId: string, limit: number): Promise<CreditEntry[]>
}
