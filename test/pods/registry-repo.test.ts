import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { RegistryService } from '../../src/domain/registries/registry-service.js'
import {
  SecretBox,
  generateEncryptionKey,
  parseEncryptionKey,
} from '../../src/domain/registries/secret-box.js'
import { ManualClock } from '../../src/shared/clock.js'
import { verifyEncryptionKey } from '../../src/store/encryption-check.js'
import type { Store } from '../../src/store/open-store.js'
import { KyselyRegistryRepo } from '../../src/store/registry-repo.js'
import { addTestAccount, testStores } from '../support/stores.js'

const record = (id: string, accountId: string, createdAt: string) => ({
  id,
  accountId,
  name: `name of ${id}`,
  username: `user-${id}`,
  passwordSealed: `v1:sealed-${id}`,
  createdAt,
})

describe.each(testStores())('KyselyRegistryRepo on $name', ({ open }) => {
  let store: Store
  let repo: KyselyRegistryRepo

  beforeEach(async () => {
    store = await open()
    repo = new KyselyRegistryRepo(store.db)
    await addTestAccount(store, 'acct_a')
    await addTestAccount(store, 'acct_b')
  })
  afterEach(() => store.close())

  it('inserts and finds a registry with its sealed password', async () => {
    await repo.insert(record('clone', 'acct_a', '2026-02-01T10:00:00.000Z'))
    expect(await repo.findById('clone')).toEqual(
      record('clone', 'acct_a', '2026-02-01T10:00:00.000Z'),
    )
    expect(await repo.findById('nope')).toBeUndefined()
  })

  it('lists an account’s registries oldest first, without sealed passwords', async () => {
    await repo.insert(record('cltwo', 'acct_a', '2026-02-02T10:00:00.000Z'))
    await repo.insert(record('clone', 'acct_a', '2026-02-01T10:00:00.000Z'))
    await repo.insert(record('clother', 'acct_b', '2026-02-01T09:00:00.000Z'))
    const list = await repo.listByAccount('acct_a')
    expect(list.map((r) => r.id)).toEqual(['clone', 'cltwo'])
    expect(list[0]).toEqual({
      id: 'clone',
      accountId: 'acct_a',
      name: 'name of clone',
      username: 'user-clone',
      createdAt: '2026-02-01T10:00:00.000Z',
    })
    expect(await repo.listByAccount('acct_none')).toEqual([])
  })

  it('deletes by id and says whether a row went', async () => {
    await repo.insert(record('clone', 'acct_a', '2026-02-01T10:00:00.000Z'))
    expect(await repo.delete('clone')).toBe(true)
    expect(await repo.delete('clone')).toBe(false)
    expect(await repo.findById('clone')).toBeUndefined()
  })

  it('keeps the plain password nowhere in the database', async () => {
    const password = 'plain-Passw0rd-that-must-not-be-stored'
    const box = new SecretBox(parseEncryptionKey(generateEncryptionKey()))
    await verifyEncryptionKey(store.db, box)
    const service = new RegistryService({
      repo,
      box,
      clock: new ManualClock(),
      usersOf: async () => [],
    })
    const created = await service.create('acct_a', { name: 'hub', username: 'me', password })
    expect(await service.credentials('acct_a', created.id)).toEqual({ username: 'me', password })

    const rows = [
      ...(await store.db.selectFrom('registries').selectAll().execute()),
      ...(await store.db.selectFrom('settings').selectAll().execute()),
    ]
    expect(rows.length).toBeGreaterThanOrEqual(2)
    const dump = JSON.stringify(rows)
    expect(dump).not.toContain(password)
    expect(dump).not.toContain(Buffer.from(password).toString('base64'))
    expect(dump).not.toContain(Buffer.from(password).toString('hex'))
  })
})
