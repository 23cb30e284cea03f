/** An account secret as anyone may see it: never its value. */
export interface Secret {
  id: string
  accountId: string
  name: string
  description: string | null
  createdAt: string
}

/** What the store holds: the value sealed with the platform's encryption key. */
export interface SecretRecord extends Secret {
  valueSealed: string
}

export interface CreateSecretInput {
  name: string
  value: string
  description?: string | null
}

/**
 * Names are what `{{ RUNPOD_SECRET_<name> }}` refers to, so they are limited to what such a
 * reference can spell without quoting: letters, digits and underscores (docs/security.md).
 */
export const SECRET_NAME_SHAPE = /^[A-Za-z0-9_]{1,64}$/
export const SECRET_VALUE_MAX = 32_768
export const SECRET_DESCRIPTION_MAX = 1_000
