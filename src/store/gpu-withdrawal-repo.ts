import type { Kysely } from 'kysely'
import type { GpuWithdrawalRecord, GpuWithdrawalRepo } from '../domain/hosts/ports.js'
import type { Database } from './database-schema.js'

export class KyselyGpuWithdrawalRepo implements GpuWithdrawalRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async list(): Promise<GpuWithdrawalRecord[]> {
    const rows = await this.db
      .selectFrom('gpu_withdrawals')
      .selectAll()
      .orderBy('host_id')
      .orderBy('gpu_index')
      .execute()
    return rows.map((row) => ({
      hostId: row.host_id,
      index: row.gpu_index,
      reason: row.reason,
      withdrawnAt: row.withdrawn_at,
      eccUncorrected: row.ecc_uncorrected,
      acceptedEccUncorrected: row.accepted_ecc_uncorrected,
    }))
  }

  async withdraw(record: {
    hostId: string
    index: number
    reason: string
    at: string
    eccUncorrected: number | null
  }): Promise<boolean> {
    // Only a GPU not withdrawn yet changes: two replicas, or two rounds, withdraw it once.
    const result = await this.db
      .insertInto('gpu_withdrawals')
      .values({
        host_id: record.hostId,
        gpu_index: record.index,
        reason: record.reason,
        withdrawn_at: record.at,
        ecc_uncorrected: record.eccUncorrected,
        accepted_ecc_uncorrected: 0,
        updated_at: record.at,
      })
      .onConflict((oc) =>
        oc
          .columns(['host_id', 'gpu_index'])
          .doUpdateSet((eb) => ({
            reason: eb.ref('excluded.reason'),
            withdrawn_at: eb.ref('excluded.withdrawn_at'),
            ecc_uncorrected: eb.ref('excluded.ecc_uncorrected'),
            updated_at: eb.ref('excluded.updated_at'),
          }))
          .where('gpu_withdrawals.reason', 'is', null),
      )
      .executeTakeFirst()
    return Number(result.numInsertedOrUpdatedRows ?? 0) > 0
  }

  async reset(hostId: string, index: number, accepted: number, at: string): Promise<void> {
    await this.db
      .insertInto('gpu_withdrawals')
      .values({
        host_id: hostId,
        gpu_index: index,
        reason: null,
        withdrawn_at: null,
        ecc_uncorrected: null,
        accepted_ecc_uncorrected: accepted,
        updated_at: at,
      })
      .onConflict((oc) =>
        oc.columns(['host_id', 'gpu_index']).doUpdateSet({
          reason: null,
          withdrawn_at: null,
          accepted_ecc_uncorrected: accepted,
          updated_at: at,
        }),
      )
      .execute()
  }
}
