import type { Kysely, Selectable } from 'kysely'
import type { AccountCredit, CreditEntry, CreditKind } from '../domain/billing/credits.js'
import type { CreditRepo } from '../domain/billing/ports.js'
import type { CreditLedgerTable, Database } from './database-schema.js'

function entryOf(row: Selectable<CreditLedgerTable>): CreditEntry {
  return {
    id: row.id,
    accountId: row.account_id,
    amountNano: Number(row.amount_nano),
    kind: row.kind as CreditKind,
    note: row.note,
    createdBy: row.created_by,
    createdAt: new Date(row.created_at).toISOString(),
  }
}

/** Balances live on `accounts`, moved only together with a `credit_ledger` row. */
export class KyselyCreditRepo implements CreditRepo {
  constructor(private readonly db: Kysely<Database>) {}

  private async read(db: Kysely<Database>, accountId: string) {
    const row = await db
      .selectFrom('accounts')
      .select(['id', 'balance_nano', 'spend_limit_per_hour'])
      .where('id', '=', accountId)
      .executeTakeFirst()
    if (!row) return undefined
    return {
      accountId: row.id,
      balanceNano: Number(row.balance_nano),
      spendLimitPerHour: Number(row.spend_limit_per_hour),
    } satisfies AccountCredit
  }

  credit(accountId: string): Promise<AccountCredit | undefined> {
    return this.read(this.db, accountId)
  }

  async append(entry: CreditEntry): Promise<AccountCredit> {
    return this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('credit_ledger')
        .values({
          id: entry.id,
          account_id: entry.accountId,
          amount_nano: entry.amountNano,
          kind: entry.kind,
          note: entry.note,
          created_by: entry.createdBy,
          created_at: entry.createdAt,
        })
        .execute()
      // One statement: two concurrent entries each add their own amount.
      await trx
        .updateTable('accounts')
        .set((eb) => ({ balance_nano: eb('balance_nano', '+', entry.amountNano) }))
        .where('id', '=', entry.accountId)
        .execute()
      const credit = await this.read(trx, entry.accountId)
      if (!credit) throw new Error(`account ${entry.accountId} vanished during a credit entry`)
      return credit
    })
  }

  async setSpendLimit(accountId: string, usdPerHour: number): Promise<AccountCredit | undefined> {
    await this.db
      .updateTable('accounts')
      .set({ spend_limit_per_hour: usdPerHour })
      .where('id', '=', accountId)
      .execute()
    return this.read(this.db, accountId)
  }

  async entries(accountId: string, limit: number): Promise<CreditEntry[]> {
    const rows = await this.db
      .selectFrom('credit_ledger')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .execute()
    return rows.map(entryOf)
  }
}
