import { AppError } from '../../shared/app-error.js'
import type { Clock } from '../../shared/clock.js'
import { newId } from '../../shared/ids.js'
import {
  MAX_CREDIT_NOTE_LENGTH,
  MAX_CREDIT_USD,
  MAX_SPEND_LIMIT_USD_PER_HOUR,
  MIN_CREDIT_USD,
  nanoToUsd,
  usdToNano,
  type AccountCredit,
  type CreditEntry,
} from './credits.js'
import type { CreditRepo } from './ports.js'

/** What an account's credit looks like to people: USD. */
export interface CreditView {
  accountId: string
  balance: number
  spendLimit: number
}

export interface CreditEntryView {
  id: string
  amount: number
  kind: CreditEntry['kind']
  note: string
  createdBy: string | null
  createdAt: string
}

const invalid = (problem: string) =>
  new AppError('VALIDATION_FAILED', `the request failed validation: ${problem}`, {
    errors: [problem],
  })

export function creditView(credit: AccountCredit): CreditView {
  return {
    accountId: credit.accountId,
    balance: nanoToUsd(credit.balanceNano),
    spendLimit: credit.spendLimitPerHour,
  }
}

export function entryView(entry: CreditEntry): CreditEntryView {
  return {
    id: entry.id,
    amount: nanoToUsd(entry.amountNano),
    kind: entry.kind,
    note: entry.note,
    createdBy: entry.createdBy,
    createdAt: entry.createdAt,
  }
}

/**
 * Account balances and spend limits (docs/billing.md). Admins add credits and public model jobs
 * are charged here; the meter writes its charges in its own transaction with its usage records
 * (control/billing-meter.ts). Every change is a ledger entry.
 */
export class CreditService {
  constructor(
    private readonly repo: CreditRepo,
    private readonly clock: Clock,
  ) {}

  async credit(accountId: string): Promise<CreditView> {
    const credit = await this.repo.credit(accountId)
    if (!credit) throw new AppError('NOT_FOUND', `account ${accountId} not found`)
    return creditView(credit)
  }

  /** Adds `usd` (a cent to MAX_CREDIT_USD, at most cent precision) to the balance. */
  async addCredits(input: {
    accountId: string
    usd: number
    note?: string | undefined
    by: string | null
  }): Promise<{ credit: CreditView; entry: CreditEntryView }> {
    const { usd } = input
    if (!Number.isFinite(usd) || usd < MIN_CREDIT_USD || usd > MAX_CREDIT_USD) {
      throw invalid(`amount: must be between ${MIN_CREDIT_USD} and ${MAX_CREDIT_USD} USD`)
    }
    if (Math.abs(usd * 100 - Math.round(usd * 100)) > 1e-6) {
      throw invalid('amount: must be whole cents (at most 2 decimals)')
    }
    const note = input.note ?? 'credits added'
    if (note.length > MAX_CREDIT_NOTE_LENGTH) {
      throw invalid(`note: must NOT have more than ${MAX_CREDIT_NOTE_LENGTH} characters`)
    }
    await this.credit(input.accountId)
    const entry: CreditEntry = {
      id: newId.creditEntry(),
      accountId: input.accountId,
      amountNano: usdToNano(usd),
      kind: 'credit',
      note,
      createdBy: input.by,
      createdAt: this.clock.now().toISOString(),
    }
    const credit = await this.repo.append(entry)
    return { credit: creditView(credit), entry: entryView(entry) }
  }

  /**
   * Takes `amountNano` (> 0) off the balance as a `charge` entry (the meter, public model
   * jobs). The balance may go below zero: what was used is owed; what follows from a balance
   * at or below zero is the caller's policy (docs/billing.md).
   */
  async charge(input: {
    accountId: string
    amountNano: number
    note: string
  }): Promise<CreditView> {
    if (!Number.isSafeInteger(input.amountNano) || input.amountNano <= 0) {
      throw new Error(`a charge must be a positive whole number of nano-USD: ${input.amountNano}`)
    }
    const credit = await this.repo.append({
      id: newId.creditEntry(),
      accountId: input.accountId,
      amountNano: -input.amountNano,
      kind: 'charge',
      note: input.note.slice(0, MAX_CREDIT_NOTE_LENGTH),
      createdBy: null,
      createdAt: this.clock.now().toISOString(),
    })
    return creditView(credit)
  }

  /** The balance in nano-USD (exact), for checks before work starts. */
  async balanceNano(accountId: string): Promise<number> {
    const credit = await this.repo.credit(accountId)
    if (!credit) throw new AppError('NOT_FOUND', `account ${accountId} not found`)
    return credit.balanceNano
  }

  async setSpendLimit(accountId: string, usdPerHour: number): Promise<CreditView> {
    if (
      !Number.isFinite(usdPerHour) ||
      usdPerHour < 0 ||
      usdPerHour > MAX_SPEND_LIMIT_USD_PER_HOUR
    ) {
      throw invalid(
        `spendLimit: must be between 0 and ${MAX_SPEND_LIMIT_USD_PER_HOUR} USD per hour`,
      )
    }
    const credit = await this.repo.setSpendLimit(accountId, usdPerHour)
    if (!credit) throw new AppError('NOT_FOUND', `account ${accountId} not found`)
    return creditView(credit)
  }

  async entries(accountId: string, limit = 50): Promise<CreditEntryView[]> {
    await this.credit(accountId)
    return (await this.repo.entries(accountId, limit)).map(entryView)
  }
}
