import { MAX_NAME_LENGTH } from '../resource-names.js'
/** A stored credential for a private container registry. The password is never part of it. */
export interface Registry {
  id: string
  accountId: string
  name: string
  username: string
  createdAt: string
}

/** What the store keeps: the registry plus its password sealed with the platform's key. */
export interface RegistryRecord extends Registry {
  passwordSealed: string
}

/** The same bound as other names in the API (API key names). */
export const REGISTRY_NAME_MAX = MAX_NAME_LENGTH
/** Docker Hub and most registries cap user names far below this; it only keeps rows small. */
export const REGISTRY_USERNAME_MAX = 255
/**
 * Passwords are often tokens; the longest common ones are JSON service-account keys for
 * Google's registries (`_json_key`, about 2.3 kB), so 16 KiB leaves room without inviting abuse.
 */
export const REGISTRY_PASSWORD_MAX = 16_384

export interface CreateRegistryInput {
  name: string
  username: string
  password: string
}

export interface RegistryCredentials {
  username: string
  password: string
}
