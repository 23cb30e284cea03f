import type { Template } from './template.js'

export interface TemplateRepo {
  insert(template: Template): Promise<void>
  findById(id: string): Promise<Template | undefined>
  findByName(accountId: string, name: string): Promise<Template | undefined>
  listByAccount(accountId: string): Promise<Template[]>
  /** Public templates of every account but `exceptAccountId`. */
  listPublic(exceptAccountId: string): Promise<Template[]>
  update(template: Template): Promise<void>
  delete(id: string): Promise<void>
}
