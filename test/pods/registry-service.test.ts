import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  REGISTRY_NAME_MAX,
  REGISTRY_PASSWORD_MAX,
  REGISTRY_USERNAME_MAX,
} from '../../src/domain/registries/registry.js'
import {
  REGISTRY_ID_SHAPE,
  RegistryService,
  newRegistryId,
} from '../../src/domain/registries/registry-service.js'
import {
  SecretBox,
  SecretBoxError,
  generateEncryptionKey,
  parseEncryptionKey,
} from '../../src/domain/registries/secret-box.js'
import { ManualClock } from '../../src/shared/clock.js'
import { KyselyAccountRepo } from '../../src/store/account-repo.js'
import type { Store } from '../../src/store/open-store.js'
import { KyselyRegistryRepo } from '../../src/store/registry-repo.js'
import { testStores } from '../support/stores.js'

const newBox = () => new SecretBox(parseEncryptionKey(generateEncryptionKey()))

describe('newRegistryId', () => {
  it('makes cuid-shaped ids like RunPod’s, all different', () => {
    expect('clzdaifot0001l90809257ynb').toMatch(REGISTRY_ID_SHAPE)
    const ids = Array.from({ length: 200 }, newRegistryId)
    for (const id of ids) expect(id).toMatch(REGISTRY_ID_SHAPE)
    expect(new Set(ids).size).toBe(ids.length)
  })
})

describe.each(testStores())('RegistryService on $name', ({ open }) => {
  let store: Store
  let box: SecretBox
  let users: Map<string, string[]>
  let service: RegistryService
  const clock = new ManualClock('2026-04-01T09:30:00.000Z')

  beforeEach(async () => {
    store = await open()
    const accounts = new KyselyAccountRepo(store.db)
    for (const id of ['acct_a', 'acct_b']) {
      await accounts.create(
        { id, name: id, role: 'user', createdAt: clock.now().toISOString() },
        {
          id: `user_${id}`,
          accountId: id,
          email: `${id}@example.com`,
          createdAt: clock.now().toISOString(),
        },
      )
    }
    box = newBox()
    users = new Map()
    service = new RegistryService({
      repo: new KyselyRegistryRepo(store.db),
      box,
      clock,
      usersOf: async (accountId, registryId) => users.get(`${accountId}/${registryId}`) ?? [],
    })
  })
  afterEach(() => store.close())

  it('creates, lists and gets registries, never with the password', async () => {
    const created = await service.create('acct_a', {
      name: ' docker hub ',
      username: 'ada',
      password: 's3cret',
    })
    expect(created).toEqual({
      id: expect.stringMatching(REGISTRY_ID_SHAPE),
      accountId: 'acct_a',
      name: 'docker hub',
      username: 'ada',
      createdAt: '2026-04-01T09:30:00.000Z',
    })
    expect(await service.get('acct_a', created.id)).toEqual(created)
    expect(await service.list('acct_a')).toEqual([created])
    expect(await service.list('acct_b')).toEqual([])
    expect(JSON.stringify(await service.list('acct_a'))).not.toContain('s3cret')
  })

  it('hands the decrypted credentials to the runtime, only for the owning account', async () => {
    const created = await service.create('acct_a', {
      name: 'ghcr',
      username: 'ada',
      password: 'ghp_token with spaces ',
    })
    expect(await service.credentials('acct_a', created.id)).toEqual({
      username: 'ada',
      password: 'ghp_token with spaces ',
    })
    expect(await service.credentials('acct_b', created.id)).toBeUndefined()
    expect(await service.credentials('acct_a', 'clnothere')).toBeUndefined()
  })

  it('fails loudly when the key changed under stored credentials', async () => {
    const created = await service.create('acct_a', { name: 'r', username: 'u', password: 'p' })
    const otherKey = new RegistryService({
      repo: new KyselyRegistryRepo(store.db),
      box: newBox(),
      clock,
      usersOf: async () => [],
    })
    await expect(otherKey.credentials('acct_a', created.id)).rejects.toThrow(SecretBoxError)
  })

  it('404s another account’s registry on get and delete, and an unknown id', async () => {
    const created = await service.create('acct_a', { name: 'r', username: 'u', password: 'p' })
    for (const attempt of [
      () => service.get('acct_b', created.id),
      () => service.delete('acct_b', created.id),
      () => service.get('acct_a', 'clunknown'),
      () => service.delete('acct_a', 'clunknown'),
    ]) {
      await expect(attempt()).rejects.toMatchObject({ code: 'NOT_FOUND' })
    }
    await expect(service.get('acct_b', created.id)).rejects.toThrow(
      `registry ${created.id} not found`,
    )
    expect(await service.get('acct_a', created.id)).toEqual(created)
    expect(await service.exists('acct_a', created.id)).toBe(true)
    expect(await service.exists('acct_b', created.id)).toBe(false)
    expect(await service.exists('acct_a', 'clunknown')).toBe(false)
  })

  it('refuses to delete a registry in use, naming its users, then deletes it once free', async () => {
    const created = await service.create('acct_a', { name: 'hub', username: 'u', password: 'p' })
    users.set(`acct_a/${created.id}`, ['pod abc123 (trainer)', 'template t1xyz (base)'])
    await expect(service.delete('acct_a', created.id)).rejects.toMatchObject({
      code: 'RULE_CONFLICT',
      detail: `registry ${created.id} (hub) is used by pod abc123 (trainer), template t1xyz (base); remove it from them first`,
    })
    expect(await service.get('acct_a', created.id)).toEqual(created)

    users.delete(`acct_a/${created.id}`)
    await service.delete('acct_a', created.id)
    await expect(service.get('acct_a', created.id)).rejects.toMatchObject({ code: 'NOT_FOUND' })
  })

  it('refuses a second registry with the same name in one account, not across accounts', async () => {
    await service.create('acct_a', { name: 'hub', username: 'u', password: 'p' })
    await expect(
      service.create('acct_a', { name: 'hub ', username: 'v', password: 'q' }),
    ).rejects.toMatchObject({
      code: 'RULE_CONFLICT',
      detail: 'a registry named "hub" already exists',
    })
    await expect(
      service.create('acct_b', { name: 'hub', username: 'u', password: 'p' }),
    ).resolves.toMatchObject({ name: 'hub' })
  })

  it('validates each bound at its edge', async () => {
    const ok = { name: 'n', username: 'u', password: 'p' }
    const accepted = [
      { ...ok, name: 'x'.repeat(REGISTRY_NAME_MAX) },
      { ...ok, name: 'y' },
      { ...ok, username: 'u'.repeat(REGISTRY_USERNAME_MAX) },
      { ...ok, name: 'z', password: 'p'.repeat(REGISTRY_PASSWORD_MAX) },
      { ...ok, name: 'w', password: ' ' },
    ]
    for (const input of accepted)
      await expect(service.create('acct_a', input)).resolves.toBeTruthy()

    const rejected: Array<[Partial<typeof ok>, string]> = [
      [{ name: 'x'.repeat(REGISTRY_NAME_MAX + 1) }, 'body.name: must be at most 191 characters'],
      [{ name: '' }, 'body.name: must not be empty'],
      [{ name: '   ' }, 'body.name: must not be empty'],
      [{ username: '' }, 'body.username: must not be empty'],
      [{ username: ' ' }, 'body.username: must not be empty'],
      [
        { username: 'u'.repeat(REGISTRY_USERNAME_MAX + 1) },
        'body.username: must be at most 255 characters',
      ],
      [{ password: '' }, 'body.password: must not be empty'],
      [
        { password: 'p'.repeat(REGISTRY_PASSWORD_MAX + 1) },
        'body.password: must be at most 16384 characters',
      ],
    ]
    for (const [patch, problem] of rejected) {
      await expect(
        service.create('acct_a', { ...ok, name: 'fresh', ...patch }),
      ).rejects.toMatchObject({ code: 'VALIDATION_FAILED', errors: [problem] })
    }
  })
})
