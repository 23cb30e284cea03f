export type AccountRole = 'admin' | 'user'

export interface Account {
  id: string
  name: string
  role: AccountRole
  createdAt: string
}

export interface User {
  id: string
  accountId: string
  email: string
  createdAt: string
}

/** What a user sets for themselves (RunPod's `updateUserSettings`). */
export interface UserSettings {
  /** authorized_keys text: SSH public keys, one a line; null when never set. */
  pubKey: string | null
}

/**
 * Bound of `pubKey`: a few dozen keys (an RSA-4096 line is about 750 characters) fit with
 * room to spare; it only keeps rows small.
 */
export const PUB_KEY_MAX_LENGTH = 65_536

/**
 * Permission levels of an API key. RESTRICTED keys may only use the job API of the serverless
 * endpoints they list (the spec names no permissions; this is our decision, see docs/auth.md).
 */
export const permissions = ['READ_WRITE', 'READ_ONLY', 'RESTRICTED'] as const
export type Permission = (typeof permissions)[number]

export interface ApiKey {
  id: string
  accountId: string
  name: string
  /** The first characters of the key, enough to recognise it in a list, never enough to use it. */
  prefix: string
  permission: Permission
  endpointIds: string[]
  createdAt: string
  expiresAt: string | null
  revokedAt: string | null
  lastUsedAt: string | null
}

export interface NewApiKeyRecord extends Omit<ApiKey, 'lastUsedAt'> {
  keyHash: string
}
