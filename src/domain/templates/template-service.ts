import { AppError } from '../../shared/app-error.js'
import { checkMountPaths } from '../pods/mount-paths.js'
import type { Clock } from '../../shared/clock.js'
import { newId } from '../../shared/ids.js'
import { BUILTIN_TEMPLATES, findBuiltinTemplate } from './builtin-templates.js'
import type { TemplateRepo } from './ports.js'
import { TEMPLATE_DEFAULTS, type Template, type TemplateFields } from './template.js'

export type CreateTemplateInput = Partial<TemplateFields> & Pick<TemplateFields, 'name' | 'image'>
export type TemplateSource = 'official' | 'verified' | 'community'

export interface TemplateServiceDeps {
  repo: TemplateRepo
  clock: Clock
  /** Whether the account has a registry credential with this id. */
  registryExists: (accountId: string, registryId: string) => Promise<boolean>
  /** Who uses the template (pods that are not TERMINATED, endpoints), for people. */
  usersOf: (accountId: string, templateId: string) => Promise<string[]>
}

/**
 * Templates: an account's own (read-write), other accounts' public ones (read-only) and the
 * platform's built-in ones (read-only, `GET /v2/catalog/templates`).
 */
export class TemplateService {
  constructor(private readonly deps: TemplateServiceDeps) {}

  private async checkRegistry(
    accountId: string,
    registry: string | null | undefined,
  ): Promise<void> {
    if (registry && !(await this.deps.registryExists(accountId, registry))) {
      throw new AppError('RULE_CONFLICT', `registry "${registry}" not found`)
    }
  }

  private async checkNameFree(accountId: string, name: string, exceptId?: string): Promise<void> {
    const existing = await this.deps.repo.findByName(accountId, name)
    if (existing && existing.id !== exceptId) {
      throw new AppError(
        'RULE_CONFLICT',
        `a template named "${name}" already exists (${existing.id})`,
      )
    }
  }

  async create(accountId: string, input: CreateTemplateInput): Promise<Template> {
    checkMountPaths(input.mounts, 'mounts')
    await this.checkRegistry(accountId, input.registry)
    await this.checkNameFree(accountId, input.name)
    const template: Template = {
      ...TEMPLATE_DEFAULTS,
      ...input,
      id: newId.template(),
      accountId,
      createdAt: this.deps.clock.now().toISOString(),
    }
    await this.deps.repo.insert(template)
    return template
  }

  async list(accountId: string, options: { includePublic?: boolean } = {}): Promise<Template[]> {
    const own = await this.deps.repo.listByAccount(accountId)
    return options.includePublic ? [...own, ...(await this.deps.repo.listPublic(accountId))] : own
  }

  /** A template the account may read: its own, another's public one, or a built-in one. */
  async resolve(accountId: string, id: string): Promise<Template | undefined> {
    const builtin = findBuiltinTemplate(id)
    if (builtin) return builtin
    const template = await this.deps.repo.findById(id)
    if (!template || (template.accountId !== accountId && !template.public)) return undefined
    return template
  }

  async get(accountId: string, id: string): Promise<Template> {
    const template = await this.resolve(accountId, id)
    if (!template) throw new AppError('NOT_FOUND', `template ${id} not found`)
    return template
  }

  /** The account's own template, for writing; readable ones of others are 403, the rest 404. */
  private async own(accountId: string, id: string): Promise<Template> {
    const template = await this.get(accountId, id)
    if (template.accountId !== accountId) {
      throw new AppError(
        'FORBIDDEN',
        `template ${id} belongs to ${template.accountId === null ? 'the platform' : 'another account'}; it can be read and used, not changed`,
      )
    }
    return template
  }

  async update(accountId: string, id: string, patch: Partial<TemplateFields>): Promise<Template> {
    const current = await this.own(accountId, id)
    checkMountPaths(patch.mounts, 'mounts')
    if (patch.registry !== undefined) await this.checkRegistry(accountId, patch.registry)
    if (patch.name !== undefined) await this.checkNameFree(accountId, patch.name, id)
    const next: Template = { ...current, ...patch }
    await this.deps.repo.update(next)
    return next
  }

  async delete(accountId: string, id: string): Promise<void> {
    await this.own(accountId, id)
    const users = await this.deps.usersOf(accountId, id)
    if (users.length > 0) {
      throw new AppError('RULE_CONFLICT', `template ${id} is in use by ${users.join(', ')}`)
    }
    await this.deps.repo.delete(id)
  }

  /** `GET /v2/catalog/templates`: official = built-in, community = public templates of accounts. */
  async catalog(source: TemplateSource | undefined): Promise<Template[]> {
    const community = async () => this.deps.repo.listPublic('')
    switch (source) {
      case 'official':
        return [...BUILTIN_TEMPLATES]
      case 'verified':
        return []
      case 'community':
        return community()
      default:
        return [...BUILTIN_TEMPLATES, ...(await community())]
    }
  }
}
