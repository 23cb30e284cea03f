import type { Kysely } from 'kysely'
import type { Database } from './database-schema.js'
import { KyselySettingsRepo } from './settings-repo.js'

/** The platform's server id, which labels every container, volume and network it creates. */
export const SERVER_ID_SETTING = 'runtime.server-id'
/** One row per former id (the key ends with it), so that recording one never races another. */
export const FORMER_SERVER_ID_PREFIX = 'runtime.former-server-id.'

/**
 * The server id of the Docker driver, kept in the settings table so that every replica of a
 * platform uses the same one, whatever its data directory (docs/runtime.md, "The server id").
 */
export class KyselyServerIdRepo {
  private readonly settings: KyselySettingsRepo

  constructor(private readonly db: Kysely<Database>) {
    this.settings = new KyselySettingsRepo(db)
  }

  async get(): Promise<string | undefined> {
    return this.settings.get(SERVER_ID_SETTING)
  }

  /**
   * The stored id, or `candidate` once it is stored (the platform's first start). Insert, then
   * read: two replicas racing on an empty database both return the one written first.
   * `claimed`: the id returned is `candidate`, written now (or by a racer with the same one).
   */
  async claim(candidate: string): Promise<{ id: string; claimed: boolean }> {
    const stored = await this.get()
    if (stored !== undefined) return { id: stored, claimed: false }
    await this.settings.setIfAbsent(SERVER_ID_SETTING, candidate)
    const id = await this.get()
    if (id === undefined) throw new Error(`the setting ${SERVER_ID_SETTING} was not written`)
    return { id, claimed: id === candidate }
  }

  /**
   * Records an id that a data directory held before the platform's id moved into the
   * database: its containers are the platform's too (DockerDriverOptions.formerServerIds).
   */
  async addFormer(id: string): Promise<void> {
    await this.settings.setIfAbsent(`${FORMER_SERVER_ID_PREFIX}${id}`, id)
  }

  async formerIds(): Promise<string[]> {
    const rows = await this.db
      .selectFrom('settings')
      .select('value')
      .where('key', 'like', `${FORMER_SERVER_ID_PREFIX}%`)
      .orderBy('value')
      .execute()
    return rows.map((row) => row.value)
  }
}
