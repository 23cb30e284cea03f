import type { Kysely } from 'kysely'
import type { Database } from './database-schema.js'

/** Platform-wide key/value settings that must live with the data (not in the config file). */
export class KyselySettingsRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async get(key: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('settings')
      .select('value')
      .where('key', '=', key)
      .executeTakeFirst()
    return row?.value
  }

  /** Writes the value unless the key has one; two processes racing leave the first one's. */
  async setIfAbsent(key: string, value: string): Promise<void> {
    await this.db
      .insertInto('settings')
      .values({ key, value })
      .onConflict((oc) => oc.column('key').doNothing())
      .execute()
  }
}
