/**
 * Money of the billing domain (docs/billing.md). Amounts are kept as integer nano-USD
 * (1e-9 USD) so that per-second charges stay whole numbers and sums are exact; they are shown
 * in USD.
 */

export const NANO_PER_USD = 1_000_000_000

/**
 * Largest amount one credit entry may add. It keeps every balance far below 2^53 nano-USD
 * (about 9 million USD), where JavaScript numbers stop being exact.
 */
export const MAX_CREDIT_USD = 100_000
/** The smallest amount worth an entry: one cent. */
export const MIN_CREDIT_USD = 0.01

/** RunPod's default spend limit (wire-compat §8.2), USD per hour. */
export const DEFAULT_SPEND_LIMIT_USD_PER_HOUR = 80
export const MAX_SPEND_LIMIT_USD_PER_HOUR = 100_000

export const MAX_CREDIT_NOTE_LENGTH = 500

export type CreditKind = 'credit' | 'charge'

export interface CreditEntry {
  id: string
  accountId: string
  /** Positive for credits, negative for charges. */
  amountNano: number
  kind: CreditKind
  note: string
  /** The account that added a credit (an admin), or null for the platform's own entries. */
  createdBy: string | null
  createdAt: string
}

export interface AccountCredit {
  accountId: string
  balanceNano: number
  /** USD per hour the account's running resources may cost at most. */
  spendLimitPerHour: number
}

export function usdToNano(usd: number): number {
  return Math.round(usd * NANO_PER_USD)
}

/** USD rounded to a millionth of a dollar: enough for any display, free of float noise. */
export function nanoToUsd(nano: number): number {
  return Math.round(nano / 1000) / 1_000_000
}
