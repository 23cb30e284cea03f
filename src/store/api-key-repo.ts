import type { Kysely, Selectable } from 'kysely'
import type { ApiKey, NewApiKeyRecord, Permission } from '../domain/accounts/account.js'
import type { ApiKeyRepo } from '../domain/accounts/ports.js'
import type { ApiKeysTable, Database } from './database-schema.js'

const toApiKey = (row: Selectable<ApiKeysTable>): ApiKey => ({
  id: row.id,
  accountId: row.account_id,
  name: row.name,
  prefix: row.key_prefix,
  permission: row.permission as Permission,
  endpointIds: JSON.parse(row.endpoint_ids) as string[],
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  revokedAt: row.revoked_at,
  lastUsedAt: row.last_used_at,
})

export class KyselyApiKeyRepo implements ApiKeyRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(key: NewApiKeyRecord): Promise<void> {
    await this.db
      .insertInto('api_keys')
      .values({
        id: key.id,
        account_id: key.accountId,
        name: key.name,
        key_hash: key.keyHash,
        key_prefix: key.prefix,
        permission: key.permission,
        endpoint_ids: JSON.stringify(key.endpointIds),
        created_at: key.createdAt,
        expires_at: key.expiresAt,
        revoked_at: key.revokedAt,
        last_used_at: null,
      })
      .execute()
  }

  async findByHash(keyHash: string): Promise<ApiKey | undefined> {
    const row = await this.db
      .selectFrom('api_keys')
      .selectAll()
      .where('key_hash', '=', keyHash)
      .executeTakeFirst()
    return row && toApiKey(row)
  }

  async findById(id: string): Promise<ApiKey | undefined> {
    const row = await this.db
      .selectFrom('api_keys')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst()
    return row && toApiKey(row)
  }

  async listByAccount(accountId: string): Promise<ApiKey[]> {
    const rows = await this.db
      .selectFrom('api_keys')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('id')
      .execute()
    return rows.map(toApiKey)
  }

  async listAll(): Promise<ApiKey[]> {
    const rows = await this.db
      .selectFrom('api_keys')
      .selectAll()
      .orderBy('created_at')
      .orderBy('id')
      .execute()
    return rows.map(toApiKey)
  }

  async revoke(id: string, at: string): Promise<boolean> {
    const result = await this.db
      .updateTable('api_keys')
      .set({ revoked_at: at })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst()
    return Number(result.numUpdatedRows) > 0
  }

  async touch(id: string, at: string): Promise<void> {
    await this.db.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', id).execute()
  }
}
