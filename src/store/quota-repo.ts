import { sql, type Kysely, type Selectable } from 'kysely'
import type { QuotaRepo, QuotaUseReader } from '../domain/quotas/ports.js'
import { NO_QUOTAS, type AccountQuotas, type QuotaUse } from '../domain/quotas/quota.js'
import type { AccountQuotasTable, Database } from './database-schema.js'
import { rowsOf, Statement } from './raw-sql.js'

/** The phases of a worker that has been launched and not yet retired: it counts as a worker. */
const LAUNCHED_WORKER_PHASES = ['STARTING', 'READY']

const nullable = (value: number | string | null): number | null =>
  value === null ? null : Number(value)

/** Read on every placement (pod create, worker start): as SQL text (raw-sql.ts). */
const quotasOfStatement = new Statement('select * from account_quotas where account_id = ?')

/** The admin's quotas per account, on SQLite and PostgreSQL alike. */
export class KyselyQuotaRepo implements QuotaRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async get(accountId: string): Promise<AccountQuotas> {
    const [row] = await rowsOf<Selectable<AccountQuotasTable>>(this.db, quotasOfStatement, [
      accountId,
    ])
    if (!row) return { ...NO_QUOTAS }
    return {
      gpus: nullable(row.gpus),
      pods: nullable(row.pods),
      workers: nullable(row.workers),
      volumeGb: nullable(row.volume_gb),
    }
  }

  async set(accountId: string, quotas: AccountQuotas, at: string): Promise<void> {
    const values = {
      gpus: quotas.gpus,
      pods: quotas.pods,
      workers: quotas.workers,
      volume_gb: quotas.volumeGb,
      updated_at: at,
    }
    await this.db
      .insertInto('account_quotas')
      .values({ account_id: accountId, ...values })
      .onConflict((conflict) => conflict.column('account_id').doUpdateSet(values))
      .execute()
  }
}

/**
 * What the account holds, counted by `db` (a capacity transaction, or the store): pods that are
 * not TERMINATED, GPUs of its pods' and workers' allocations, launched workers, and the GB of
 * its network volumes.
 */
export async function readQuotaUse(db: Kysely<Database>, accountId: string): Promise<QuotaUse> {
  const [pods, gpus, workers, volumes] = await Promise.all([
    db
      .selectFrom('pods')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('account_id', '=', accountId)
      .where('status', '!=', 'TERMINATED')
      .executeTakeFirstOrThrow(),
    db
      .selectFrom('allocations')
      .select(sql<number | string | null>`sum(gpu_count)`.as('n'))
      .where((eb) =>
        eb.or([
          eb.and([
            eb('owner_kind', '=', 'pod'),
            eb(
              'owner_id',
              'in',
              eb.selectFrom('pods').select('id').where('account_id', '=', accountId),
            ),
          ]),
          eb.and([
            eb('owner_kind', '=', 'worker'),
            eb(
              'owner_id',
              'in',
              eb.selectFrom('workers').select('id').where('account_id', '=', accountId),
            ),
          ]),
        ]),
      )
      .executeTakeFirstOrThrow(),
    db
      .selectFrom('workers')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('account_id', '=', accountId)
      .where('phase', 'in', LAUNCHED_WORKER_PHASES)
      .executeTakeFirstOrThrow(),
    db
      .selectFrom('network_volumes')
      .select(sql<number | string | null>`sum(size_gb)`.as('n'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow(),
  ])
  return {
    pods: Number(pods.n),
    gpus: Number(gpus.n ?? 0),
    workers: Number(workers.n),
    volumeGb: Number(volumes.n ?? 0),
  }
}

export function quotaUseReaderOf(db: Kysely<Database>): QuotaUseReader {
  return { use: (accountId) => readQuotaUse(db, accountId) }
}
