import type { Kysely } from 'kysely'
import type { SecretRepo } from '../domain/secrets/ports.js'
import type { Secret, SecretRecord } from '../domain/secrets/secret.js'
import { SecretNameTaken } from '../domain/secrets/secret-service.js'
import type { Database } from './database-schema.js'

const PUBLIC_COLUMNS = ['id', 'account_id', 'name', 'description', 'created_at'] as const

const toSecret = (row: {
  id: string
  account_id: string
  name: string
  description: string | null
  created_at: string
}): Secret => ({
  id: row.id,
  accountId: row.account_id,
  name: row.name,
  description: row.description,
  createdAt: row.created_at,
})

/** SQLite's and PostgreSQL's words for a broken unique constraint. */
const uniqueViolation = (error: unknown) =>
  /UNIQUE constraint failed|duplicate key value/i.test((error as Error)?.message ?? '')

export class KyselySecretRepo implements SecretRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(secret: SecretRecord): Promise<void> {
    try {
      await this.db
        .insertInto('account_secrets')
        .values({
          id: secret.id,
          account_id: secret.accountId,
          name: secret.name,
          description: secret.description,
          value_sealed: secret.valueSealed,
          created_at: secret.createdAt,
        })
        .execute()
    } catch (error) {
      // The (account_id, name) constraint decides, so two concurrent creates cannot both win.
      if (uniqueViolation(error)) throw new SecretNameTaken(secret.name)
      throw error
    }
  }

  /** Reads never load the sealed value unless a launch needs it: what is not loaded cannot leak. */
  async findById(id: string): Promise<Secret | undefined> {
    const row = await this.db
      .selectFrom('account_secrets')
      .select(PUBLIC_COLUMNS)
      .where('id', '=', id)
      .executeTakeFirst()
    return row && toSecret(row)
  }

  async findSealedByName(accountId: string, name: string): Promise<SecretRecord | undefined> {
    const row = await this.db
      .selectFrom('account_secrets')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('name', '=', name)
      .executeTakeFirst()
    return row && { ...toSecret(row), valueSealed: row.value_sealed }
  }

  async listByAccount(accountId: string): Promise<Secret[]> {
    const rows = await this.db
      .selectFrom('account_secrets')
      .select(PUBLIC_COLUMNS)
      .where('account_id', '=', accountId)
      .orderBy('name')
      .execute()
    return rows.map(toSecret)
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('account_secrets')
      .where('id', '=', id)
      .executeTakeFirst()
    return Number(result.numDeletedRows) > 0
  }
}
