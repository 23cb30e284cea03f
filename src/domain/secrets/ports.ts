import type { Secret, SecretRecord } from './secret.js'

export interface SecretRepo {
  /** Throws SecretNameTaken when the account already has a secret of that name. */
  insert(secret: SecretRecord): Promise<void>
  findById(id: string): Promise<Secret | undefined>
  /** The account's secret of that name with its sealed value, for launching a workload. */
  findSealedByName(accountId: string, name: string): Promise<SecretRecord | undefined>
  listByAccount(accountId: string): Promise<Secret[]>
  /** True when a row was deleted. */
  delete(id: string): Promise<boolean>
}

/**
 * Replaces the `{{ RUNPOD_SECRET_<name> }}` references in a workload's env by the account's
 * secret values, at launch; throws naming the first missing secret (never a value).
 */
export type SecretEnvResolver = (
  accountId: string,
  env: Record<string, string>,
) => Promise<Record<string, string>>
