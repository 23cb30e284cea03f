import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  SecretBox,
  generateEncryptionKey,
  parseEncryptionKey,
} from '../../src/domain/registries/secret-box.js'
import {
  ENCRYPTION_CHECK_SETTING,
  EncryptionKeyMismatchError,
  verifyEncryptionKey,
} from '../../src/store/encryption-check.js'
import type { Store } from '../../src/store/open-store.js'
import { KyselySettingsRepo } from '../../src/store/settings-repo.js'
import { testStores } from '../support/stores.js'

const newBox = () => new SecretBox(parseEncryptionKey(generateEncryptionKey()))

describe.each(testStores())('settings and the encryption key check on $name', ({ open }) => {
  let store: Store

  beforeEach(async () => {
    store = await open()
  })
  afterEach(() => store.close())

  it('KyselySettingsRepo: get is undefined until set; setIfAbsent keeps the first value', async () => {
    const settings = new KyselySettingsRepo(store.db)
    expect(await settings.get('a.b')).toBeUndefined()
    await settings.setIfAbsent('a.b', 'first')
    await settings.setIfAbsent('a.b', 'second')
    expect(await settings.get('a.b')).toBe('first')
  })

  it('records a sealed check value on first use and accepts the same key afterwards', async () => {
    const key = generateEncryptionKey()
    await verifyEncryptionKey(store.db, new SecretBox(parseEncryptionKey(key)))
    const stored = await new KyselySettingsRepo(store.db).get(ENCRYPTION_CHECK_SETTING)
    expect(stored).toMatch(/^v1:/)
    await verifyEncryptionKey(store.db, new SecretBox(parseEncryptionKey(key)))
    expect(await new KyselySettingsRepo(store.db).get(ENCRYPTION_CHECK_SETTING)).toBe(stored)
  })

  it('agrees on one check value when two processes verify at once', async () => {
    const key = generateEncryptionKey()
    await Promise.all(
      Array.from({ length: 4 }, () =>
        verifyEncryptionKey(store.db, new SecretBox(parseEncryptionKey(key))),
      ),
    )
    await verifyEncryptionKey(store.db, new SecretBox(parseEncryptionKey(key)))
  })

  it('fails loudly with another key, naming the config key, the env variable and the file', async () => {
    await verifyEncryptionKey(store.db, newBox())
    const attempt = verifyEncryptionKey(store.db, newBox(), { keyFile: '/data/encryption.key' })
    await expect(attempt).rejects.toThrow(EncryptionKeyMismatchError)
    await expect(
      verifyEncryptionKey(store.db, newBox(), { keyFile: '/data/encryption.key' }),
    ).rejects.toThrow(
      /does not match the one this database was created with.*encryptionKey.*PODYARD_ENCRYPTION_KEY.*\/data\/encryption\.key/,
    )
  })

  it('fails as a mismatch when the check value was altered', async () => {
    const box = newBox()
    await verifyEncryptionKey(store.db, box)
    await store.db
      .updateTable('settings')
      .set({ value: 'v1:garbage' })
      .where('key', '=', ENCRYPTION_CHECK_SETTING)
      .execute()
    await expect(verifyEncryptionKey(store.db, box)).rejects.toThrow(EncryptionKeyMismatchError)
  })
})
