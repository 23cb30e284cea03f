import type { Kysely, Selectable } from 'kysely'
import type { RegistryRepo } from '../domain/registries/ports.js'
import type { Registry, RegistryRecord } from '../domain/registries/registry.js'
import type { Database, RegistriesTable } from './database-schema.js'

const toRegistry = (row: Omit<Selectable<RegistriesTable>, 'password_sealed'>): Registry => ({
  id: row.id,
  accountId: row.account_id,
  name: row.name,
  username: row.username,
  createdAt: row.created_at,
})

export class KyselyRegistryRepo implements RegistryRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(registry: RegistryRecord): Promise<void> {
    await this.db
      .insertInto('registries')
      .values({
        id: registry.id,
        account_id: registry.accountId,
        name: registry.name,
        username: registry.username,
        password_sealed: registry.passwordSealed,
        created_at: registry.createdAt,
      })
      .execute()
  }

  async findById(id: string): Promise<RegistryRecord | undefined> {
    const row = await this.db
      .selectFrom('registries')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst()
    return row && { ...toRegistry(row), passwordSealed: row.password_sealed }
  }

  /** Lists never read the sealed passwords: what is not loaded cannot leak. */
  async listByAccount(accountId: string): Promise<Registry[]> {
    const rows = await this.db
      .selectFrom('registries')
      .select(['id', 'account_id', 'name', 'username', 'created_at'])
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('id')
      .execute()
    return rows.map(toRegistry)
  }

  async updateCredentials(id: string, username: string, passwordSealed: string): Promise<void> {
    await this.db
      .updateTable('registries')
      .set({ username, password_sealed: passwordSealed })
      .where('id', '=', id)
      .execute()
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('registries').where('id', '=', id).executeTakeFirst()
    return Number(result.numDeletedRows) > 0
  }
}
