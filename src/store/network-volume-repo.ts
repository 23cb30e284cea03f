import { PostgresAdapter, sql, type Kysely, type Selectable } from 'kysely'
import type {
  NetworkVolume,
  NetworkVolumeType,
  VolumeSizeRecord,
} from '../domain/volumes/network-volume.js'
import type { NetworkVolumeRepo, VolumeQuotaGuard } from '../domain/volumes/ports.js'
import type { Database, NetworkVolumesTable } from './database-schema.js'

const toVolume = (row: Selectable<NetworkVolumesTable>): NetworkVolume => ({
  id: row.id,
  accountId: row.account_id,
  name: row.name,
  sizeGb: Number(row.size_gb),
  dataCenterId: row.data_center_id,
  type: row.type as NetworkVolumeType,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
})

/** Any constant works; with the account it keys the lock of the account's volume quota. */
const VOLUME_QUOTA_LOCK_KEY = 7_341_002

/**
 * Calls `guard` with the account's volume GB as counted in `tx`, after a lock that every other
 * guarded write of the account waits for (SQLite runs one transaction at a time anyway), so
 * two concurrent creates cannot both fit in the last GB.
 */
async function checkGuard(
  tx: Kysely<Database>,
  accountId: string,
  guard: VolumeQuotaGuard | undefined,
): Promise<void> {
  if (!guard) return
  if (tx.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`select pg_advisory_xact_lock(${VOLUME_QUOTA_LOCK_KEY}, hashtext(${accountId}))`.execute(
      tx,
    )
  }
  const row = await tx
    .selectFrom('network_volumes')
    .select(sql<number | string | null>`sum(size_gb)`.as('gb'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow()
  guard(Number(row.gb ?? 0))
}

/** Network volumes and their size history, on SQLite and PostgreSQL alike. */
export class KyselyNetworkVolumeRepo implements NetworkVolumeRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(volume: NetworkVolume, guard?: VolumeQuotaGuard): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await checkGuard(tx, volume.accountId, guard)
      await tx
        .insertInto('network_volumes')
        .values({
          id: volume.id,
          account_id: volume.accountId,
          name: volume.name,
          size_gb: volume.sizeGb,
          data_center_id: volume.dataCenterId,
          type: volume.type,
          created_at: volume.createdAt,
          updated_at: volume.updatedAt,
        })
        .execute()
      await tx
        .insertInto('network_volume_sizes')
        .values({ volume_id: volume.id, size_gb: volume.sizeGb, changed_at: volume.createdAt })
        .execute()
    })
  }

  async findById(id: string): Promise<NetworkVolume | undefined> {
    const row = await this.db
      .selectFrom('network_volumes')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst()
    return row && toVolume(row)
  }

  async listByAccount(accountId: string): Promise<NetworkVolume[]> {
    const rows = await this.db
      .selectFrom('network_volumes')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('id')
      .execute()
    return rows.map(toVolume)
  }

  /** Every account's volumes, for the billing meter. */
  async listAll(): Promise<NetworkVolume[]> {
    const rows = await this.db
      .selectFrom('network_volumes')
      .selectAll()
      .orderBy('created_at')
      .orderBy('id')
      .execute()
    return rows.map(toVolume)
  }

  async update(
    volume: NetworkVolume,
    expectedSizeGb: number,
    guard?: VolumeQuotaGuard,
  ): Promise<boolean> {
    return this.db.transaction().execute(async (tx) => {
      await checkGuard(tx, volume.accountId, guard)
      // The size condition makes this a compare-and-set: on PostgreSQL a concurrent update of
      // the row waits for ours and then finds the size changed; SQLite runs one writer at a time.
      const result = await tx
        .updateTable('network_volumes')
        .set({ name: volume.name, size_gb: volume.sizeGb, updated_at: volume.updatedAt })
        .where('id', '=', volume.id)
        .where('size_gb', '=', expectedSizeGb)
        .executeTakeFirst()
      if (Number(result.numUpdatedRows) !== 1) return false
      if (volume.sizeGb !== expectedSizeGb) {
        await tx
          .insertInto('network_volume_sizes')
          .values({ volume_id: volume.id, size_gb: volume.sizeGb, changed_at: volume.updatedAt })
          .execute()
      }
      return true
    })
  }

  async delete(id: string, deletedAt: string): Promise<boolean> {
    return this.db.transaction().execute(async (tx) => {
      const result = await tx.deleteFrom('network_volumes').where('id', '=', id).executeTakeFirst()
      if (Number(result.numDeletedRows) !== 1) return false
      await tx
        .insertInto('network_volume_sizes')
        .values({ volume_id: id, size_gb: 0, changed_at: deletedAt })
        .execute()
      return true
    })
  }

  async sizeHistory(id: string): Promise<VolumeSizeRecord[]> {
    const rows = await this.db
      .selectFrom('network_volume_sizes')
      .select(['size_gb', 'changed_at'])
      .where('volume_id', '=', id)
      .orderBy('seq')
      .execute()
    return rows.map((r) => ({ sizeGb: Number(r.size_gb), changedAt: r.changed_at }))
  }
}
