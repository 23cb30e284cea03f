import type { Kysely } from 'kysely'
import type { Endpoint } from '../domain/serverless/endpoint.js'
import type { EndpointRepo } from '../domain/serverless/endpoint-ports.js'
import type { WorkerKeyGenerations } from '../domain/serverless/worker-keys.js'
import type { Database } from './database-schema.js'

function columnsOf(endpoint: Endpoint) {
  return {
    id: endpoint.id,
    account_id: endpoint.accountId,
    name: endpoint.name,
    template_id: endpoint.templateId,
    created_at: endpoint.createdAt,
    doc: JSON.stringify(endpoint),
  }
}

const parse = (row: { doc: string }) => JSON.parse(row.doc) as Endpoint

export class KyselyEndpointRepo implements EndpointRepo, WorkerKeyGenerations {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(endpoint: Endpoint): Promise<void> {
    await this.db.insertInto('endpoints').values(columnsOf(endpoint)).execute()
  }

  async findById(id: string): Promise<Endpoint | undefined> {
    const row = await this.db
      .selectFrom('endpoints')
      .select('doc')
      .where('id', '=', id)
      .executeTakeFirst()
    return row && parse(row)
  }

  async listByAccount(accountId: string): Promise<Endpoint[]> {
    const rows = await this.db
      .selectFrom('endpoints')
      .select('doc')
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('id')
      .execute()
    return rows.map(parse)
  }

  async listAll(): Promise<Endpoint[]> {
    const rows = await this.db
      .selectFrom('endpoints')
      .select('doc')
      .orderBy('created_at')
      .orderBy('id')
      .execute()
    return rows.map(parse)
  }

  async listByTemplate(templateId: string): Promise<Endpoint[]> {
    const rows = await this.db
      .selectFrom('endpoints')
      .select('doc')
      .where('template_id', '=', templateId)
      .orderBy('created_at')
      .orderBy('id')
      .execute()
    return rows.map(parse)
  }

  async update(endpoint: Endpoint): Promise<void> {
    await this.db
      .updateTable('endpoints')
      .set(columnsOf(endpoint))
      .where('id', '=', endpoint.id)
      .execute()
  }

  async delete(id: string): Promise<void> {
    await this.db.deleteFrom('endpoints').where('id', '=', id).execute()
  }

  async workerKeyGeneration(id: string): Promise<number | undefined> {
    const row = await this.db
      .selectFrom('endpoints')
      .select('worker_key_generation')
      .where('id', '=', id)
      .executeTakeFirst()
    return row && Number(row.worker_key_generation)
  }

  /** One statement, so two rotations at once give two generations and an update undoes neither. */
  async bumpWorkerKeyGeneration(id: string): Promise<number | undefined> {
    const row = await this.db
      .updateTable('endpoints')
      .set((eb) => ({ worker_key_generation: eb('worker_key_generation', '+', 1) }))
      .where('id', '=', id)
      .returning('worker_key_generation')
      .executeTakeFirst()
    return row && Number(row.worker_key_generation)
  }
}
