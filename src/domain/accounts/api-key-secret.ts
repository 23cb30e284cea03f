import { hash } from 'node:crypto'
import { newId } from '../../shared/ids.js'

export const API_KEY_PREFIX = 'pyd_'
/** 40 base62 characters: about 238 bits, so a fast hash is safe (no guessing to slow down). */
const SECRET_LENGTH = 40
const DISPLAY_PREFIX_LENGTH = 12

export function generateApiKey(): string {
  return `${API_KEY_PREFIX}${newId.secret(SECRET_LENGTH)}`
}

/** Keys are stored only as this hash; the plain key exists only in the creator's hands. */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex')
}

export function displayPrefix(key: string): string {
  return key.slice(0, DISPLAY_PREFIX_LENGTH)
}

/** The shortest credential that may be a key at all (an admin may choose a key of 16). */
export const API_KEY_MIN_LENGTH = 16
/** What a presented credential may look like at all; anything else is no key (401). */
export const API_KEY_SHAPE = /^[A-Za-z0-9_\-.~+/=]{16,256}$/
