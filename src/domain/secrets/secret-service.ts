import { AppError } from '../../shared/app-error.js'
import type { Clock } from '../../shared/clock.js'
import { randomString } from '../../shared/ids.js'
import type { SecretBox } from '../registries/secret-box.js'
import type { SecretRepo } from './ports.js'
import {
  SECRET_DESCRIPTION_MAX,
  SECRET_NAME_SHAPE,
  SECRET_VALUE_MAX,
  type CreateSecretInput,
  type Secret,
} from './secret.js'
import { secretNamesIn, withSecretValues } from './secret-references.js'

const lowerAlnum = 'abcdefghijklmnopqrstuvwxyz0123456789'

/** The store found another secret of the account with the same name (a concurrent create). */
export class SecretNameTaken extends Error {
  constructor(name: string) {
    super(`a secret named "${name}" already exists`)
    this.name = 'SecretNameTaken'
  }
}

/** A workload's env refers to a secret the account does not have: it must not start. */
export class MissingSecretError extends Error {
  constructor(name: string) {
    super(`its env refers to the secret "${name}", which the account does not have`)
    this.name = 'MissingSecretError'
  }
}

export interface SecretServiceDeps {
  repo: SecretRepo
  box: SecretBox
  clock: Clock
}

function inputProblems(input: CreateSecretInput): string[] {
  const problems: string[] = []
  if (typeof input.name !== 'string' || !SECRET_NAME_SHAPE.test(input.name))
    problems.push('name: must be 1 to 64 letters, digits or underscores')
  if (typeof input.value !== 'string' || input.value.length === 0)
    problems.push('value: must not be empty')
  else if (input.value.length > SECRET_VALUE_MAX)
    problems.push(`value: must be at most ${SECRET_VALUE_MAX} characters`)
  if ((input.description?.length ?? 0) > SECRET_DESCRIPTION_MAX)
    problems.push(`description: must be at most ${SECRET_DESCRIPTION_MAX} characters`)
  return problems
}

/**
 * An account's secrets (RunPod's `/v2/account/secrets`). Values are sealed before they reach the
 * store and are opened only to build a workload's env at launch; nothing returns or logs them.
 */
export class SecretService {
  constructor(private readonly deps: SecretServiceDeps) {}

  async create(accountId: string, input: CreateSecretInput): Promise<Secret> {
    const problems = inputProblems(input)
    if (problems.length > 0) {
      throw new AppError(
        'VALIDATION_FAILED',
        `the request failed validation: ${problems.join('; ')}`,
        { errors: problems },
      )
    }
    const secret: Secret = {
      id: `cl${randomString(23, lowerAlnum)}`,
      accountId,
      name: input.name,
      description: input.description ?? null,
      createdAt: this.deps.clock.now().toISOString(),
    }
    try {
      await this.deps.repo.insert({ ...secret, valueSealed: this.deps.box.seal(input.value) })
    } catch (error) {
      if (error instanceof SecretNameTaken) throw new AppError('INVALID_STATE', error.message)
      throw error
    }
    return secret
  }

  list(accountId: string): Promise<Secret[]> {
    return this.deps.repo.listByAccount(accountId)
  }

  /** Another account's secret reads as absent (404), never as forbidden. */
  async delete(accountId: string, id: string): Promise<void> {
    const secret = await this.deps.repo.findById(id)
    if (!secret || secret.accountId !== accountId) {
      throw new AppError('NOT_FOUND', `secret ${id} not found`)
    }
    await this.deps.repo.delete(id)
  }

  /** The env a workload is launched with (SecretEnvResolver); the stored env keeps references. */
  async resolveEnv(
    accountId: string,
    env: Record<string, string>,
  ): Promise<Record<string, string>> {
    const names = secretNamesIn(env)
    if (names.length === 0) return env
    const values = new Map<string, string>()
    for (const name of names) {
      const record = await this.deps.repo.findSealedByName(accountId, name)
      if (!record) throw new MissingSecretError(name)
      values.set(name, this.deps.box.open(record.valueSealed))
    }
    return withSecretValues(env, values)
  }
}
