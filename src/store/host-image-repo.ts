import type { Kysely } from 'kysely'
import type { HostImage, HostImageRepo, HostImageState } from '../domain/hosts/host-images.js'
import type { Database, HostImagesTable } from './database-schema.js'

const bytes = (value: number | string | null) => (value === null ? null : Number(value))

function imageOf(row: HostImagesTable): HostImage {
  return {
    hostId: row.host_id,
    image: row.image,
    state: row.state as HostImageState,
    reason: row.reason,
    bytesDone: bytes(row.bytes_done),
    bytesTotal: bytes(row.bytes_total),
    startedAt: row.started_at,
    updatedAt: row.updated_at,
  }
}

/** Images on hosts (migration 0029), on SQLite and PostgreSQL alike. */
export class KyselyHostImageRepo implements HostImageRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async list(filter: { hostId?: string; image?: string } = {}): Promise<HostImage[]> {
    let query = this.db.selectFrom('host_images').selectAll()
    if (filter.hostId !== undefined) query = query.where('host_id', '=', filter.hostId)
    if (filter.image !== undefined) query = query.where('image', '=', filter.image)
    const rows = await query.orderBy('host_id').orderBy('image').execute()
    return rows.map(imageOf)
  }

  async claim(hostId: string, image: string, at: string, staleBefore: string): Promise<boolean> {
    // One statement: a concurrent claim on another replica sees this row and updates nothing.
    const result = await this.db
      .insertInto('host_images')
      .values({
        host_id: hostId,
        image,
        state: 'PULLING',
        reason: null,
        bytes_done: null,
        bytes_total: null,
        started_at: at,
        updated_at: at,
      })
      .onConflict((oc) =>
        oc
          .columns(['host_id', 'image'])
          .doUpdateSet({
            state: 'PULLING',
            reason: null,
            bytes_done: null,
            bytes_total: null,
            started_at: at,
            updated_at: at,
          })
          .where((eb) =>
            eb.or([
              eb('host_images.state', '!=', 'PULLING'),
              eb('host_images.updated_at', '<', staleBefore),
            ]),
          ),
      )
      .executeTakeFirst()
    return Number(result.numInsertedOrUpdatedRows ?? 0) > 0
  }

  async progress(
    hostId: string,
    image: string,
    bytesDone: number,
    bytesTotal: number,
    at: string,
  ): Promise<void> {
    await this.db
      .updateTable('host_images')
      .set({ bytes_done: bytesDone, bytes_total: bytesTotal, updated_at: at })
      .where('host_id', '=', hostId)
      .where('image', '=', image)
      .where('state', '=', 'PULLING')
      .execute()
  }

  async finish(
    hostId: string,
    image: string,
    state: 'PRESENT' | 'FAILED',
    reason: string | null,
    at: string,
  ): Promise<void> {
    await this.db
      .insertInto('host_images')
      .values({
        host_id: hostId,
        image,
        state,
        reason,
        bytes_done: null,
        bytes_total: null,
        started_at: at,
        updated_at: at,
      })
      .onConflict((oc) =>
        oc.columns(['host_id', 'image']).doUpdateSet({ state, reason, updated_at: at }),
      )
      .execute()
  }
}
