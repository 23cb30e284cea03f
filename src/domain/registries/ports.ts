import type { Registry, RegistryRecord } from './registry.js'

export interface RegistryRepo {
  insert(registry: RegistryRecord): Promise<void>
  findById(id: string): Promise<RegistryRecord | undefined>
  listByAccount(accountId: string): Promise<Registry[]>
  /** Replaces the user name and sealed password of a registry. */
  updateCredentials(id: string, username: string, passwordSealed: string): Promise<void>
  /** True when a row was deleted. */
  delete(id: string): Promise<boolean>
}

/**
 * What refers to a registry and keeps it from being deleted (pods, endpoints), each as a phrase
 * such as `pod abc123 (trainer)`; empty when nothing does. Pods and endpoints own those
 * references, so the composition root supplies this.
 */
export type RegistryUsersOf = (accountId: string, registryId: string) => Promise<string[]>

/**
 * Removes a deleted registry from the references that do not keep it alive (the account's
 * templates: their `registry` becomes null), returning what it changed, for people.
 */
export type RegistryDetach = (accountId: string, registryId: string) => Promise<string[]>
