import type { Kysely } from 'kysely'
import type { LeaseRepo } from '../domain/cluster/leader-lease.js'
import type { Database } from './database-schema.js'

/**
 * Leases in `cluster_leases` (migration 0013). Taking is one upsert that only overwrites a row
 * that is expired or already the taker's, so two replicas racing for a free lease cannot both
 * win: the database serialises the two statements on the row, and the second one finds the
 * first one's unexpired lease.
 */
export class KyselyLeaseRepo implements LeaseRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async tryAcquire(name: string, holder: string, nowMs: number, ttlMs: number): Promise<boolean> {
    const row = await this.db
      .insertInto('cluster_leases')
      .values({ name, holder, acquired_at_ms: nowMs, expires_at_ms: nowMs + ttlMs })
      .onConflict((oc) =>
        oc
          .column('name')
          .doUpdateSet((eb) => ({
            holder: eb.ref('excluded.holder'),
            expires_at_ms: eb.ref('excluded.expires_at_ms'),
            // A renewal keeps when the holder first took it; a takeover starts afresh.
            acquired_at_ms: eb
              .case()
              .when('cluster_leases.holder', '=', holder)
              .then(eb.ref('cluster_leases.acquired_at_ms'))
              .else(eb.ref('excluded.acquired_at_ms'))
              .end(),
          }))
          .where((eb) =>
            eb.or([
              eb('cluster_leases.holder', '=', holder),
              eb('cluster_leases.expires_at_ms', '<=', nowMs),
            ]),
          ),
      )
      .returning('holder')
      .executeTakeFirst()
    return row?.holder === holder
  }

  async release(name: string, holder: string): Promise<void> {
    await this.db
      .deleteFrom('cluster_leases')
      .where('name', '=', name)
      .where('holder', '=', holder)
      .execute()
  }

  async holder(name: string, nowMs: number): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('cluster_leases')
      .select('holder')
      .where('name', '=', name)
      .where('expires_at_ms', '>', nowMs)
      .executeTakeFirst()
    return row?.holder
  }
}
