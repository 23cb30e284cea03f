import { AppError } from '../../shared/app-error.js'
import type { Clock } from '../../shared/clock.js'
import { randomString } from '../../shared/ids.js'
import type { RegistryDetach, RegistryRepo, RegistryUsersOf } from './ports.js'
import {
  REGISTRY_NAME_MAX,
  REGISTRY_PASSWORD_MAX,
  REGISTRY_USERNAME_MAX,
  type CreateRegistryInput,
  type Registry,
  type RegistryCredentials,
  type RegistryRecord,
} from './registry.js'
import type { SecretBox } from './secret-box.js'

const lowerAlnum = 'abcdefghijklmnopqrstuvwxyz0123456789'

/**
 * RunPod's registry ids are cuids (`clzdaifot0001l90809257ynb`, wire-compat §8.5): 25 lowercase
 * alphanumerics, and every cuid made since 2021 starts with `cl`.
 */
export const REGISTRY_ID_SHAPE = /^cl[a-z0-9]{23}$/

/** A cuid-shaped id: clients that recognise RunPod's registry ids by shape accept ours. */
export function newRegistryId(): string {
  return `cl${randomString(23, lowerAlnum)}`
}

export interface RegistryServiceDeps {
  repo: RegistryRepo
  box: SecretBox
  clock: Clock
  usersOf: RegistryUsersOf
  /** Templates that name a registry lose it when it is deleted (docs/registries.md). */
  detach?: RegistryDetach
}

const withoutPassword = ({ passwordSealed: _sealed, ...registry }: RegistryRecord): Registry =>
  registry

function inputProblems(input: CreateRegistryInput): string[] {
  const problems: string[] = []
  const name = input.name.trim()
  if (name.length === 0) problems.push('body.name: must not be empty')
  if (name.length > REGISTRY_NAME_MAX)
    problems.push(`body.name: must be at most ${REGISTRY_NAME_MAX} characters`)
  return [...problems, ...credentialProblems(input)]
}

function credentialProblems(input: RegistryCredentials): string[] {
  const problems: string[] = []
  if (input.username.trim().length === 0) problems.push('body.username: must not be empty')
  if (input.username.length > REGISTRY_USERNAME_MAX)
    problems.push(`body.username: must be at most ${REGISTRY_USERNAME_MAX} characters`)
  if (input.password.length === 0) problems.push('body.password: must not be empty')
  if (input.password.length > REGISTRY_PASSWORD_MAX)
    problems.push(`body.password: must be at most ${REGISTRY_PASSWORD_MAX} characters`)
  return problems
}

function throwIfAny(problems: string[]): void {
  if (problems.length === 0) return
  throw new AppError('VALIDATION_FAILED', `the request failed validation: ${problems.join('; ')}`, {
    errors: problems,
  })
}

/**
 * Container registry credentials of an account. Passwords are sealed before they reach the
 * store and are opened only for the runtime (`credentials`); nothing else ever returns them.
 */
export class RegistryService {
  private readonly repo: RegistryRepo
  private readonly box: SecretBox
  private readonly clock: Clock
  private readonly usersOf: RegistryUsersOf
  private readonly detach: RegistryDetach

  constructor(deps: RegistryServiceDeps) {
    this.repo = deps.repo
    this.box = deps.box
    this.clock = deps.clock
    this.usersOf = deps.usersOf
    this.detach = deps.detach ?? (async () => [])
  }

  async create(accountId: string, input: CreateRegistryInput): Promise<Registry> {
    throwIfAny(inputProblems(input))
    const name = input.name.trim()
    // RunPod documents registry names as unique per account; a pod refers to one by id, but
    // people pick it by name in lists and consoles.
    if ((await this.repo.listByAccount(accountId)).some((r) => r.name === name)) {
      throw new AppError('RULE_CONFLICT', `a registry named "${name}" already exists`)
    }
    const registry: Registry = {
      id: newRegistryId(),
      accountId,
      name,
      username: input.username,
      createdAt: this.clock.now().toISOString(),
    }
    await this.repo.insert({ ...registry, passwordSealed: this.box.seal(input.password) })
    return registry
  }

  list(accountId: string): Promise<Registry[]> {
    return this.repo.listByAccount(accountId)
  }

  /** Another account's registry reads as absent (404), never as forbidden. */
  async get(accountId: string, id: string): Promise<Registry> {
    return withoutPassword(await this.record(accountId, id))
  }

  /** For references from pods and templates: whether the account has this registry. */
  async exists(accountId: string, id: string): Promise<boolean> {
    const record = await this.repo.findById(id)
    return record !== undefined && record.accountId === accountId
  }

  /**
   * Replaces the user name and password of the account's registry (a rotated token); the id
   * and name stay, so pods and templates that name it pull with the new credentials.
   */
  async update(accountId: string, id: string, input: RegistryCredentials): Promise<Registry> {
    throwIfAny(credentialProblems(input))
    const record = await this.record(accountId, id)
    await this.repo.updateCredentials(id, input.username, this.box.seal(input.password))
    return withoutPassword({ ...record, username: input.username })
  }

  async delete(accountId: string, id: string): Promise<void> {
    const registry = await this.record(accountId, id)
    const users = await this.usersOf(accountId, id)
    if (users.length > 0) {
      throw new AppError(
        'RULE_CONFLICT',
        `registry ${id} (${registry.name}) is used by ${users.join(', ')}; remove it from them first`,
      )
    }
    // Templates only carry defaults for what is created from them later: they lose the
    // registry rather than keep it alive (RunPod's v2 contract).
    await this.detach(accountId, id)
    await this.repo.delete(id)
  }

  /** The decrypted credentials, for the runtime to pull an image; undefined if not the account's. */
  async credentials(accountId: string, id: string): Promise<RegistryCredentials | undefined> {
    const record = await this.repo.findById(id)
    if (!record || record.accountId !== accountId) return undefined
    return { username: record.username, password: this.box.open(record.passwordSealed) }
  }

  private async record(accountId: string, id: string): Promise<RegistryRecord> {
    const record = await this.repo.findById(id)
    if (!record || record.accountId !== accountId) {
      throw new AppError('NOT_FOUND', `registry ${id} not found`)
    }
    return record
  }
}
