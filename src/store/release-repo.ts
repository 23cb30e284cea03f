import type { Kysely } from 'kysely'
import type { Release, ReleaseRepo } from '../domain/serverless/release.js'
import type { Database } from './database-schema.js'

export class KyselyReleaseRepo implements ReleaseRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(release: Release): Promise<void> {
    await this.db
      .insertInto('endpoint_releases')
      .values({
        id: release.id,
        endpoint_id: release.endpointId,
        version: release.version,
        created_at: release.createdAt,
        diff: JSON.stringify(release.diff),
      })
      .execute()
  }

  async listByEndpoint(endpointId: string): Promise<Release[]> {
    const rows = await this.db
      .selectFrom('endpoint_releases')
      .selectAll()
      .where('endpoint_id', '=', endpointId)
      .orderBy('version', 'desc')
      .execute()
    return rows.map((row) => ({
      id: row.id,
      endpointId: row.endpoint_id,
      version: Number(row.version),
      createdAt: row.created_at,
      diff: JSON.parse(row.diff) as Release['diff'],
    }))
  }
}
