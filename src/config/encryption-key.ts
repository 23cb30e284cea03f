import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { ConfigError } from './load-config.js'

export const ENCRYPTION_KEY_FILE = 'encryption.key'
const KEY_BYTES = 32

export interface ResolvedEncryptionKey {
  /** Base64 of 32 bytes. A secret: never log it. */
  key: string
  source: 'config' | 'file' | 'generated'
  /** The key file read or written (sources `file` and `generated`). */
  file?: string
}

/** Checked here as well as where the key is used, so the error can name where the key came from. */
function checkKeyText(text: string, where: string): string {
  const trimmed = text.trim()
  const bytes = /^[A-Za-z0-9+/]+={0,2}$/.test(trimmed) ? Buffer.from(trimmed, 'base64') : null
  if (
    !bytes ||
    bytes.length !== KEY_BYTES ||
    bytes.toString('base64').replace(/=+$/, '') !== trimmed.replace(/=+$/, '')
  ) {
    throw new ConfigError(
      `${where}: the encryption key must be the base64 encoding of ${KEY_BYTES} bytes ` +
        `(make one with: openssl rand -base64 ${KEY_BYTES})`,
    )
  }
  return trimmed
}

function readKeyFile(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw new ConfigError(`cannot read the encryption key ${file}: ${(error as Error).message}`)
  }
}

/**
 * The key that seals stored secrets: the configured one (`encryptionKey`,
 * PODYARD_ENCRYPTION_KEY) wins; otherwise `<dataDir>/encryption.key`; otherwise a new key is
 * generated into that file (mode 0600), so a laptop install needs no setup. Replicas sharing a
 * PostgreSQL store must all be configured with the same key.
 */
export function resolveEncryptionKey(input: {
  configured?: string | undefined
  dataDir: string
}): ResolvedEncryptionKey {
  if (input.configured !== undefined && input.configured.trim() !== '') {
    return {
      key: checkKeyText(input.configured, 'encryptionKey (PODYARD_ENCRYPTION_KEY)'),
      source: 'config',
    }
  }
  const file = path.resolve(input.dataDir, ENCRYPTION_KEY_FILE)
  const existing = readKeyFile(file)
  if (existing !== undefined) return { key: checkKeyText(existing, file), source: 'file', file }

  mkdirSync(path.dirname(file), { recursive: true })
  const key = randomBytes(KEY_BYTES).toString('base64')
  try {
    // `wx`: never overwrite a key another process wrote meanwhile; losing a key loses data.
    writeFileSync(file, `${key}\n`, { mode: 0o600, flag: 'wx' })
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      return { key: checkKeyText(readFileSync(file, 'utf8'), file), source: 'file', file }
    }
    throw new ConfigError(`cannot write the encryption key ${file}: ${(error as Error).message}`)
  }
  return { key, source: 'generated', file }
}
