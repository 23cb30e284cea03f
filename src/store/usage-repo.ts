import type { Kysely, Selectable } from 'kysely'
import type { AccountCredit } from '../domain/billing/credits.js'
import type {
  MeterCommit,
  MeterState,
  MeteredKind,
  UsageQuery,
  UsageRecorder,
  UsageRepo,
} from '../domain/billing/ports.js'
import {
  hourStart,
  type Carries,
  type Rates,
  type UsageCategory,
  type UsageRecord,
  type UsageResourceKind,
} from '../domain/billing/usage.js'
import { addToLedgerEntries, readCredit } from './credit-repo.js'
import type { Database, UsageMetersTable } from './database-schema.js'
import { changesOf, Statement } from './raw-sql.js'

/** Another meter moved a state first: the whole tick of the account is rolled back. */
class MeterConflict extends Error {}

function stateOf(row: Selectable<UsageMetersTable>): MeterState {
  return {
    resourceKind: row.resource_kind as MeteredKind,
    resourceId: row.resource_id,
    accountId: row.account_id,
    meteredUntil: new Date(row.metered_until).toISOString(),
    rates: JSON.parse(row.rates) as Rates,
    carries: JSON.parse(row.carries) as Carries,
    detail: row.detail,
  }
}

/**
 * A meter tick writes a state and a usage record for every pod and worker that runs: these two
 * statements run thousands of times a tick on a large fleet, as SQL text (raw-sql.ts).
 */
const addUsageStatement = new Statement(
  'insert into usage_records (account_id, resource_kind, resource_id, category, bucket_start, amount_nano) ' +
    'values (?, ?, ?, ?, ?, ?) on conflict (account_id, resource_kind, resource_id, category, bucket_start) ' +
    'do update set amount_nano = usage_records.amount_nano + excluded.amount_nano',
)
const moveStateStatement = new Statement(
  'update usage_meters set metered_until = ?, rates = ?, carries = ?, detail = ? ' +
    'where resource_kind = ? and resource_id = ? and metered_until = ?',
)

async function addUsage(db: Kysely<Database>, record: UsageRecord): Promise<void> {
  await changesOf(db, addUsageStatement, [
    record.accountId,
    record.resourceKind,
    record.resourceId,
    record.category,
    record.bucketStart,
    record.amountNano,
  ])
}

/** Usage records and the meter's states (docs/billing.md); the ledger entry of a tick with them. */
export class KyselyUsageRepo implements UsageRepo, UsageRecorder {
  constructor(private readonly db: Kysely<Database>) {}

  async record(accountId: string, usage: Parameters<UsageRecorder['record']>[1]): Promise<void> {
    if (!Number.isSafeInteger(usage.amountNano) || usage.amountNano <= 0) {
      throw new Error(`usage must be a positive whole number of nano-USD: ${usage.amountNano}`)
    }
    await addUsage(this.db, {
      accountId,
      resourceKind: usage.resourceKind,
      resourceId: usage.resourceId,
      category: usage.category,
      bucketStart: new Date(hourStart(new Date(usage.at).getTime())).toISOString(),
      amountNano: usage.amountNano,
    })
  }

  async meterStates(): Promise<MeterState[]> {
    const rows = await this.db.selectFrom('usage_meters').selectAll().execute()
    return rows.map(stateOf)
  }

  async commit(commit: MeterCommit): Promise<AccountCredit | undefined> {
    try {
      return await this.db.transaction().execute(async (trx) => {
        for (const { state, expectedUntil } of commit.states) {
          const values = {
            metered_until: state.meteredUntil,
            rates: JSON.stringify(state.rates),
            carries: JSON.stringify(state.carries),
            detail: state.detail,
          }
          if (expectedUntil === null) {
            const inserted = await trx
              .insertInto('usage_meters')
              .values({
                resource_kind: state.resourceKind,
                resource_id: state.resourceId,
                account_id: state.accountId,
                ...values,
              })
              .onConflict((oc) => oc.columns(['resource_kind', 'resource_id']).doNothing())
              .executeTakeFirst()
            if (Number(inserted.numInsertedOrUpdatedRows ?? 0) !== 1) throw new MeterConflict()
          } else {
            const updated = await changesOf(trx, moveStateStatement, [
              values.metered_until,
              values.rates,
              values.carries,
              values.detail,
              state.resourceKind,
              state.resourceId,
              expectedUntil,
            ])
            if (updated !== 1) throw new MeterConflict()
          }
        }
        for (const closed of commit.closed) {
          const deleted = await trx
            .deleteFrom('usage_meters')
            .where('resource_kind', '=', closed.resourceKind)
            .where('resource_id', '=', closed.resourceId)
            .where('metered_until', '=', closed.expectedUntil)
            .executeTakeFirst()
          if (Number(deleted.numDeletedRows) !== 1) throw new MeterConflict()
        }
        for (const record of commit.records) await addUsage(trx, record)
        await addToLedgerEntries(trx, commit.charges)
        const credit = await readCredit(trx, commit.accountId)
        if (!credit) throw new Error(`account ${commit.accountId} vanished during a meter tick`)
        return credit
      })
    } catch (error) {
      if (error instanceof MeterConflict) return undefined
      throw error
    }
  }

  async records(query: UsageQuery): Promise<UsageRecord[]> {
    if (query.resourceKinds.length === 0) return []
    let select = this.db
      .selectFrom('usage_records')
      .selectAll()
      .where('account_id', '=', query.accountId)
      .where('bucket_start', '>=', query.fromIso)
      .where('bucket_start', '<', query.toIso)
      .where('resource_kind', 'in', query.resourceKinds)
    if (query.resourceId !== undefined) select = select.where('resource_id', '=', query.resourceId)
    const rows = await select.orderBy('bucket_start').orderBy('resource_id').execute()
    return rows.map((row) => ({
      accountId: row.account_id,
      resourceKind: row.resource_kind as UsageResourceKind,
      resourceId: row.resource_id,
      category: row.category as UsageCategory,
      bucketStart: new Date(row.bucket_start).toISOString(),
      amountNano: Number(row.amount_nano),
    }))
  }
}
