import type { Kysely, Transaction } from 'kysely'
import type { StoredHost } from '../domain/hosts/host-credentials.js'
import type { ManagedHostRepo } from '../domain/hosts/ports.js'
import type { Database } from './database-schema.js'

async function bump(tx: Transaction<Database>): Promise<void> {
  await tx
    .updateTable('hosts_revision')
    .set((eb) => ({ revision: eb('revision', '+', 1) }))
    .where('id', '=', 1)
    .execute()
}

/** Hosts added at runtime (migration 0026), each a fleet Host as JSON, credentials sealed. */
export class KyselyManagedHostRepo implements ManagedHostRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async list(): Promise<StoredHost[]> {
    const rows = await this.db.selectFrom('hosts').select('declaration').orderBy('id').execute()
    return rows.map((row) => JSON.parse(row.declaration) as StoredHost)
  }

  async revision(): Promise<number> {
    const row = await this.db
      .selectFrom('hosts_revision')
      .select('revision')
      .where('id', '=', 1)
      .executeTakeFirst()
    return Number(row?.revision ?? 0)
  }

  async insert(host: StoredHost, at: string): Promise<boolean> {
    return this.db.transaction().execute(async (tx) => {
      const result = await tx
        .insertInto('hosts')
        .values({ id: host.id, declaration: JSON.stringify(host), created_at: at, updated_at: at })
        .onConflict((oc) => oc.column('id').doNothing())
        .executeTakeFirst()
      if (Number(result.numInsertedOrUpdatedRows ?? 0) === 0) return false
      await bump(tx)
      return true
    })
  }

  async update(host: StoredHost, at: string): Promise<boolean> {
    return this.db.transaction().execute(async (tx) => {
      const result = await tx
        .updateTable('hosts')
        .set({ declaration: JSON.stringify(host), updated_at: at })
        .where('id', '=', host.id)
        .executeTakeFirst()
      if (Number(result.numUpdatedRows) === 0) return false
      await bump(tx)
      return true
    })
  }

  async remove(hostId: string): Promise<boolean> {
    return this.db.transaction().execute(async (tx) => {
      const result = await tx.deleteFrom('hosts').where('id', '=', hostId).executeTakeFirst()
      if (Number(result.numDeletedRows) === 0) return false
      // Its probed state and schedule go with it: a host added again later starts ACTIVE,
      // not as the drained one was.
      await tx.deleteFrom('host_states').where('host_id', '=', hostId).execute()
      await bump(tx)
      return true
    })
  }
}
