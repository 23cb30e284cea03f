import { describe, expect, it } from 'vitest'
import {
  EncryptionKeyFormatError,
  SecretBox,
  SecretBoxError,
  generateEncryptionKey,
  parseEncryptionKey,
} from './secret-box.js'

const box = () => new SecretBox(parseEncryptionKey(generateEncryptionKey()))

describe('SecretBox', () => {
  it('opens what it sealed, including empty and non-ASCII text', () => {
    const b = box()
    for (const plain of ['hunter2', '', 'pässwörd 🔑', 'x'.repeat(16_384)]) {
      expect(b.open(b.seal(plain))).toBe(plain)
    }
  })

  it('seals as v1:<iv>:<tag>:<ciphertext> and never contains the plain text', () => {
    const sealed = box().seal('correct-horse-battery-staple')
    expect(sealed).toMatch(/^v1:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/)
    const [, iv, tag] = sealed.split(':')
    expect(Buffer.from(iv!, 'base64')).toHaveLength(12)
    expect(Buffer.from(tag!, 'base64')).toHaveLength(16)
    expect(sealed).not.toContain('correct-horse')
  })

  it('uses a fresh IV each time: the same plain text seals differently', () => {
    const b = box()
    const sealed = new Set(Array.from({ length: 20 }, () => b.seal('same')))
    expect(sealed.size).toBe(20)
    expect(new Set([...sealed].map((s) => s.split(':')[1])).size).toBe(20)
  })

  it('fails with SecretBoxError under a different key', () => {
    const sealed = box().seal('secret')
    expect(() => box().open(sealed)).toThrow(SecretBoxError)
    expect(() => box().open(sealed)).toThrow(/not the one it was sealed with/)
  })

  it('fails with SecretBoxError when any part was altered', () => {
    const b = box()
    const sealed = b.seal('secret value')
    const parts = sealed.split(':')
    for (const index of [1, 2, 3]) {
      const bytes = Buffer.from(parts[index]!, 'base64')
      bytes[0] = bytes[0]! ^ 1
      const tampered = parts.map((p, i) => (i === index ? bytes.toString('base64') : p)).join(':')
      expect(() => b.open(tampered), `part ${index}`).toThrow(SecretBoxError)
    }
  })

  it('rejects values that are not in the sealed format', () => {
    const b = box()
    const [, iv, tag, ct] = b.seal('x').split(':')
    for (const bad of [
      '',
      'plain',
      `v2:${iv}:${tag}:${ct}`,
      `v1:${iv}:${tag}`,
      `v1:AAAA:${tag}:${ct}`,
    ]) {
      expect(() => b.open(bad), bad).toThrow(SecretBoxError)
    }
  })

  it('refuses a key that is not 32 bytes', () => {
    expect(() => new SecretBox(Buffer.alloc(16))).toThrow(EncryptionKeyFormatError)
  })
})

describe('parseEncryptionKey', () => {
  it('accepts what generateEncryptionKey makes, with surrounding whitespace', () => {
    const text = generateEncryptionKey()
    expect(text).toMatch(/^[A-Za-z0-9+/]{43}=$/)
    expect(parseEncryptionKey(`  ${text}\n`)).toHaveLength(32)
    expect(generateEncryptionKey()).not.toBe(text)
  })

  it('rejects other lengths and text that is not base64, without echoing it', () => {
    const short = Buffer.alloc(31, 7).toString('base64')
    const long = Buffer.alloc(33, 7).toString('base64')
    for (const bad of [
      '',
      'not a key',
      short,
      long,
      `${generateEncryptionKey()}!`,
      'é'.repeat(44),
    ]) {
      expect(() => parseEncryptionKey(bad), bad).toThrow(EncryptionKeyFormatError)
    }
    try {
      parseEncryptionKey('my-secret-but-wrong')
    } catch (error) {
      expect((error as Error).message).toMatch(/base64 encoding of 32 bytes/)
      expect((error as Error).message).not.toContain('my-secret')
    }
  })
})
