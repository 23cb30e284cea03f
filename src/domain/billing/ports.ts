import type { AccountCredit, CreditEntry } from './credits.js'
import type { Carries, Rates, UsageRecord, UsageResourceKind } from './usage.js'

export interface CreditRepo {
  /** Appends the entry and moves the balance by its amount in one transaction. */
  append(entry: CreditEntry): Promise<AccountCredit>
  credit(accountId: string): Promise<AccountCredit | undefined>
  setSpendLimit(accountId: string, usdPerHour: number): Promise<AccountCredit | undefined>
  /** The account's entries, newest first. */
  entries(accountId: string, limit: number): Promise<CreditEntry[]>
}

/**
 * Records usage that is charged elsewhere: the public model endpoints charge a job's price to
 * the ledger themselves (CreditService.charge) and record it here, so `/v2/billing/endpoints`
 * and `/v2/billing` report it. Amounts add up within the hour of `at`.
 */
export interface UsageRecorder {
  record(
    accountId: string,
    usage: {
      resourceKind: 'endpoint'
      /** The model id. */
      resourceId: string
      category: 'endpoint'
      amountNano: number
      at: string | Date
    },
  ): Promise<void>
}

/** What the meter remembers of a resource between ticks (docs/billing.md, "The meter"). */
export interface MeterState {
  resourceKind: MeteredKind
  resourceId: string
  accountId: string
  /** Everything before this instant is charged. */
  meteredUntil: string
  /** The rates seen at the last tick, for the time before a change the tick did not see. */
  rates: Rates
  carries: Carries
  /** For network volumes: their type, still known after the volume is deleted. */
  detail: string | null
}

export type MeteredKind = 'pod' | 'worker' | 'networkVolume'

/** One account's result of one meter tick, written together or not at all. */
export interface MeterCommit {
  accountId: string
  records: UsageRecord[]
  /** New states, each written only if the stored one still has `expectedUntil` (null: none). */
  states: Array<{ state: MeterState; expectedUntil: string | null }>
  /** States to forget: resources that are gone and fully charged. */
  closed: Array<{ resourceKind: MeteredKind; resourceId: string; expectedUntil: string }>
  /**
   * What the tick charged (amountNano < 0), one entry per resource and hour: an entry whose id
   * is in the ledger already (the same resource and hour, an earlier tick) grows by the amount.
   */
  charges: CreditEntry[]
}

export interface UsageQuery {
  accountId: string
  fromIso: string
  toIso: string
  resourceKinds: UsageResourceKind[]
  resourceId?: string
}

export interface UsageRepo extends UsageRecorder {
  meterStates(): Promise<MeterState[]>
  /**
   * Writes the tick of one account in one transaction; undefined when another meter (another
   * replica) moved one of its states meanwhile, in which case nothing is written.
   */
  commit(commit: MeterCommit): Promise<AccountCredit | undefined>
  /** Hourly records of the account in [fromIso, toIso). */
  records(query: UsageQuery): Promise<UsageRecord[]>
}
