import type { Kysely } from 'kysely'
import type { TemplateRepo } from '../domain/templates/ports.js'
import type { Template } from '../domain/templates/template.js'
import type { Database } from './database-schema.js'

function columnsOf(template: Template) {
  return {
    id: template.id,
    account_id: template.accountId!,
    name: template.name,
    visibility: template.public ? 'public' : 'private',
    created_at: template.createdAt,
    doc: JSON.stringify(template),
  }
}

const parse = (row: { doc: string }) => JSON.parse(row.doc) as Template

export class KyselyTemplateRepo implements TemplateRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(template: Template): Promise<void> {
    await this.db.insertInto('templates').values(columnsOf(template)).execute()
  }

  async findById(id: string): Promise<Template | undefined> {
    const row = await this.db
      .selectFrom('templates')
      .select('doc')
      .where('id', '=', id)
      .executeTakeFirst()
    return row && parse(row)
  }

  async findByName(accountId: string, name: string): Promise<Template | undefined> {
    const row = await this.db
      .selectFrom('templates')
      .select('doc')
      .where('account_id', '=', accountId)
      .where('name', '=', name)
      .executeTakeFirst()
    return row && parse(row)
  }

  async listByAccount(accountId: string): Promise<Template[]> {
    const rows = await this.db
      .selectFrom('templates')
      .select('doc')
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('id')
      .execute()
    return rows.map(parse)
  }

  async listPublic(exceptAccountId: string): Promise<Template[]> {
    const rows = await this.db
      .selectFrom('templates')
      .select('doc')
      .where('visibility', '=', 'public')
      .where('account_id', '!=', exceptAccountId)
      .orderBy('created_at')
      .orderBy('id')
      .execute()
    return rows.map(parse)
  }

  async update(template: Template): Promise<void> {
    await this.db
      .updateTable('templates')
      .set(columnsOf(template))
      .where('id', '=', template.id)
      .execute()
  }

  async delete(id: string): Promise<void> {
    await this.db.deleteFrom('templates').where('id', '=', id).execute()
  }
}
