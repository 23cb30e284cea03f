import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { StartupRefusal } from '../../shared/startup-refusal.js'

export const ENCRYPTION_KEY_BYTES = 32
/** 96-bit nonces are what GCM is specified for; other lengths go through an extra GHASH. */
const IV_BYTES = 12
/** The full 128-bit tag: shorter tags make forgeries cheaper and buy nothing here. */
const TAG_BYTES = 16
const FORMAT_VERSION = 'v1'
const CIPHER = 'aes-256-gcm'

/** A sealed value could not be opened: the key is not the one it was sealed with, or it was altered. */
export class SecretBoxError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'SecretBoxError'
  }
}

/** The key text was not the base64 encoding of 32 bytes. The message never repeats the text. */
export class EncryptionKeyFormatError extends StartupRefusal {
  constructor(message: string) {
    super(message)
    this.name = 'EncryptionKeyFormatError'
  }
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/

/** Decodes a key given as base64 of 32 random bytes (`openssl rand -base64 32` makes one). */
export function parseEncryptionKey(text: string): Buffer {
  const trimmed = text.trim()
  const key = BASE64.test(trimmed) ? Buffer.from(trimmed, 'base64') : Buffer.alloc(0)
  // Buffer.from ignores what it cannot decode, so a round trip is the strict check.
  const canonical = key.toString('base64').replace(/=+$/, '') === trimmed.replace(/=+$/, '')
  if (key.length !== ENCRYPTION_KEY_BYTES || !canonical) {
    throw new EncryptionKeyFormatError(
      `the encryption key must be the base64 encoding of ${ENCRYPTION_KEY_BYTES} bytes ` +
        `(44 characters; make one with: openssl rand -base64 ${ENCRYPTION_KEY_BYTES})`,
    )
  }
  return key
}

export function generateEncryptionKey(): string {
  return randomBytes(ENCRYPTION_KEY_BYTES).toString('base64')
}

/**
 * Authenticated encryption of short secrets (registry passwords) with AES-256-GCM. Sealed
 * form: `v1:<iv>:<tag>:<ciphertext>`, each part base64; the version leaves room to change
 * the cipher without guessing what an old value is.
 */
export class SecretBox {
  private readonly key: Buffer

  constructor(key: Buffer) {
    if (key.length !== ENCRYPTION_KEY_BYTES) {
      throw new EncryptionKeyFormatError(
        `the encryption key must be ${ENCRYPTION_KEY_BYTES} bytes, not ${key.length}`,
      )
    }
    this.key = Buffer.from(key)
  }

  seal(plain: string): string {
    // A fresh random IV per value: reusing an IV under one key breaks GCM entirely.
    const iv = randomBytes(IV_BYTES)
    const cipher = createCipheriv(CIPHER, this.key, iv, { authTagLength: TAG_BYTES })
    const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
    const tag = cipher.getAuthTag()
    return [FORMAT_VERSION, iv, tag, ciphertext]
      .map((part) => (typeof part === 'string' ? part : part.toString('base64')))
      .join(':')
  }

  open(sealed: string): string {
    const parts = sealed.split(':')
    if (parts.length !== 4 || parts[0] !== FORMAT_VERSION) {
      throw new SecretBoxError(`not a sealed value of format ${FORMAT_VERSION}`)
    }
    const [iv, tag, ciphertext] = parts.slice(1).map((part) => Buffer.from(part, 'base64')) as [
      Buffer,
      Buffer,
      Buffer,
    ]
    if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) {
      throw new SecretBoxError('the sealed value is malformed')
    }
    try {
      const decipher = createDecipheriv(CIPHER, this.key, iv, { authTagLength: TAG_BYTES })
      decipher.setAuthTag(tag)
      return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8')
    } catch {
      throw new SecretBoxError(
        'the sealed value cannot be opened: the encryption key is not the one it was sealed with, or the value was altered',
      )
    }
  }
}
