import type { Kysely, Selectable } from 'kysely'
import type { AccountCredit, CreditEntry, CreditKind } from '../domain/billing/credits.js'
import type { CreditRepo } from '../domain/billing/ports.js'
import type { CreditLedgerTable, Database } from './database-schema.js'
import { changesOf, Statement } from './raw-sql.js'

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

function ledgerRow(entry: CreditEntry) {
  return {
    id: entry.id,
    account_id: entry.accountId,
    amount_nano: entry.amountNano,
    kind: entry.kind,
    note: entry.note,
    created_by: entry.createdBy,
    created_at: entry.createdAt,
  }
}

/**
 * The ledger's statements, which a meter tick runs for every running resource: as SQL text
 * (raw-sql.ts), not built through Kysely, whose building and compiling cost more than the
 * statements themselves (bench/README.md).
 */
const growLedgerEntryStatement = new Statement(
  'insert into credit_ledger (id, account_id, amount_nano, kind, note, created_by, created_at) ' +
    'values (?, ?, ?, ?, ?, ?, ?) on conflict (id) ' +
    'do update set amount_nano = credit_ledger.amount_nano + excluded.amount_nano',
)
/** One statement: two concurrent entries each add their own amount. */
const moveBalanceStatement = new Statement(
  'update accounts set balance_nano = balance_nano + ? where id = ?',
)

/**
 * Writes the entry and moves the balance by its amount; call it inside a transaction (the
 * billing meter writes its usage in the same one).
 */
export async function appendLedgerEntry(trx: Kysely<Database>, entry: CreditEntry): Promise<void> {
  await trx.insertInto('credit_ledger').values(ledgerRow(entry)).execute()
  await changesOf(trx, moveBalanceStatement, [entry.amountNano, entry.accountId])
}

/**
 * Adds each charge to the ledger entry of the same id, or starts it: the meter's entry of one
 * resource and hour grows tick by tick (docs/billing.md, "Ledger"). Each account's balance moves
 * once, by the sum of its charges, so the sum of the entries stays the balance. Call it inside a
 * transaction (the billing meter writes its usage in the same one).
 */
export async function addToLedgerEntries(
  trx: Kysely<Database>,
  entries: readonly CreditEntry[],
): Promise<void> {
  const moves = new Map<string, number>()
  for (const entry of entries) {
    await changesOf(trx, growLedgerEntryStatement, [
      entry.id,
      entry.accountId,
      entry.amountNano,
      entry.kind,
      entry.note,
      entry.createdBy,
      entry.createdAt,
    ])
    moves.set(entry.accountId, (moves.get(entry.accountId) ?? 0) + entry.amountNano)
  }
  for (const [accountId, amountNano] of moves) {
    await changesOf(trx, moveBalanceStatement, [amountNano, accountId])
  }
}

export async function readCredit(
  db: Kysely<Database>,
  accountId: string,
): Promise<AccountCredit | undefined> {
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

/** Balances live on `accounts`, moved only together with a `credit_ledger` row. */
export class KyselyCreditRepo implements CreditRepo {
  constructor(private readonly db: Kysely<Database>) {}

  credit(accountId: string): Promise<AccountCredit | undefined> {
    return readCredit(this.db, accountId)
  }

  async append(entry: CreditEntry): Promise<AccountCredit> {
    return this.db.transaction().execute(async (trx) => {
      await appendLedgerEntry(trx, entry)
      const credit = await readCredit(trx, entry.accountId)
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
    return readCredit(this.db, accountId)
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
