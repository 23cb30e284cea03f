import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { resolveEncryptionKey } from './encryption-key.js'
import { ConfigError } from './load-config.js'

const KEY = Buffer.alloc(32, 1).toString('base64')
const dirs: string[] = []
function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'podyard-key-'))
  dirs.push(dir)
  return dir
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

describe('resolveEncryptionKey', () => {
  it('generates a key into <dataDir>/encryption.key with mode 0600, creating the directory', () => {
    const dataDir = path.join(tempDir(), 'nested', 'data')
    const resolved = resolveEncryptionKey({ dataDir })
    const file = path.join(dataDir, 'encryption.key')
    expect(resolved).toEqual({
      key: expect.stringMatching(/^[A-Za-z0-9+/]{43}=$/),
      source: 'generated',
      file,
    })
    expect(readFileSync(file, 'utf8').trim()).toBe(resolved.key)
    expect(statSync(file).mode & 0o777).toBe(0o600)
  })

  it('reads the same key back on the next start', () => {
    const dataDir = tempDir()
    const first = resolveEncryptionKey({ dataDir })
    const second = resolveEncryptionKey({ dataDir })
    expect(second).toEqual({ key: first.key, source: 'file', file: first.file })
  })

  it('prefers a configured key, and then neither reads nor writes the file', () => {
    const dataDir = tempDir()
    writeFileSync(path.join(dataDir, 'encryption.key'), Buffer.alloc(32, 2).toString('base64'))
    expect(resolveEncryptionKey({ configured: ` ${KEY}\n`, dataDir })).toEqual({
      key: KEY,
      source: 'config',
    })
    const empty = tempDir()
    resolveEncryptionKey({ configured: KEY, dataDir: empty })
    expect(() => statSync(path.join(empty, 'encryption.key'))).toThrow()
  })

  it('treats an empty configured key as absent', () => {
    expect(resolveEncryptionKey({ configured: '', dataDir: tempDir() }).source).toBe('generated')
  })

  it('fails clearly, naming the source, on a malformed configured key', () => {
    expect(() => resolveEncryptionKey({ configured: 'too-short', dataDir: tempDir() })).toThrow(
      ConfigError,
    )
    expect(() => resolveEncryptionKey({ configured: 'too-short', dataDir: tempDir() })).toThrow(
      /PODYARD_ENCRYPTION_KEY.*base64 encoding of 32 bytes/,
    )
  })

  it('fails on a malformed key file rather than replacing it (that would lose the old key)', () => {
    const dataDir = tempDir()
    const file = path.join(dataDir, 'encryption.key')
    for (const content of ['', 'garbage\n']) {
      writeFileSync(file, content)
      expect(() => resolveEncryptionKey({ dataDir })).toThrow(ConfigError)
      expect(() => resolveEncryptionKey({ dataDir })).toThrow(file)
      expect(readFileSync(file, 'utf8')).toBe(content)
    }
  })
})
