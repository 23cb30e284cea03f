import type { Kysely } from 'kysely'
import type { Database } from './database-schema.js'

/**
 * Docker containers' log numbers (migration 0030), on SQLite and PostgreSQL alike: the JSON the
 * docker driver keeps per container (runtime/docker/log-numbers-store.ts), shared by every
 * replica. The driver reads and writes it through its own port; the wiring hands it this.
 */
export class KyselyContainerLogNumbersRepo {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly now: () => string,
  ) {}

  async read(containerId: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('container_log_numbers')
      .select('numbers')
      .where('container_id', '=', containerId)
      .executeTakeFirst()
    return row?.numbers
  }

  async write(containerId: string, numbers: string): Promise<void> {
    const at = this.now()
    await this.db
      .insertInto('container_log_numbers')
      .values({ container_id: containerId, numbers, updated_at: at })
      .onConflict((oc) => oc.column('container_id').doUpdateSet({ numbers, updated_at: at }))
      .execute()
  }

  async remove(containerId: string): Promise<void> {
    await this.db
      .deleteFrom('container_log_numbers')
      .where('container_id', '=', containerId)
      .execute()
  }
}
