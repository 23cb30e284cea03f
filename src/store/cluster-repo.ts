import type { Kysely } from 'kysely'
import type { Cluster, ClusterRepo } from '../domain/clusters/cluster.js'
import type { Database } from './database-schema.js'

function columnsOf(cluster: Cluster) {
  return {
    id: cluster.id,
    account_id: cluster.accountId,
    name: cluster.name,
    created_at: cluster.createdAt,
    deleted_at: cluster.deletedAt,
    doc: JSON.stringify(cluster),
  }
}

const parse = (row: { doc: string }) => JSON.parse(row.doc) as Cluster

export class KyselyClusterRepo implements ClusterRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(cluster: Cluster): Promise<void> {
    await this.db.insertInto('clusters').values(columnsOf(cluster)).execute()
  }

  async findById(id: string): Promise<Cluster | undefined> {
    const row = await this.db
      .selectFrom('clusters')
      .select('doc')
      .where('id', '=', id)
      .executeTakeFirst()
    return row && parse(row)
  }

  async listByAccount(
    accountId: string,
    options: { includeDeleted?: boolean } = {},
  ): Promise<Cluster[]> {
    let query = this.db.selectFrom('clusters').select('doc').where('account_id', '=', accountId)
    if (!options.includeDeleted) query = query.where('deleted_at', 'is', null)
    const rows = await query.orderBy('created_at').orderBy('id').execute()
    return rows.map(parse)
  }

  async update(cluster: Cluster): Promise<void> {
    const { id: _id, ...fields } = columnsOf(cluster)
    await this.db.updateTable('clusters').set(fields).where('id', '=', cluster.id).execute()
  }
}
