import type { Kysely } from 'kysely'
import type { AccountPoolRepo } from '../domain/accounts/account-pools.js'
import type { Database } from './database-schema.js'
import { rowsOf, Statement } from './raw-sql.js'

/** Read on every placement (pod create, worker start): as SQL text (raw-sql.ts). */
const poolsOfStatement = new Statement(
  'select pool from account_pools where account_id = ? order by pool',
)

/** The pools an account is bound to, sorted; [] when none. */
export async function readAccountPools(db: Kysely<Database>, accountId: string): Promise<string[]> {
  const rows = await rowsOf<{ pool: string }>(db, poolsOfStatement, [accountId])
  return rows.map((r) => r.pool)
}

/** The admin's bindings of accounts to pools (migration 0028), on SQLite and PostgreSQL alike. */
export class KyselyAccountPoolRepo implements AccountPoolRepo {
  constructor(private readonly db: Kysely<Database>) {}

  poolsOf(accountId: string): Promise<string[]> {
    return readAccountPools(this.db, accountId)
  }

  async set(accountId: string, pools: readonly string[], at: string): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('account_pools').where('account_id', '=', accountId).execute()
      if (pools.length > 0)
        await tx
          .insertInto('account_pools')
          .values(pools.map((pool) => ({ account_id: accountId, pool, created_at: at })))
          .execute()
    })
  }
}
