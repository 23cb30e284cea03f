import { createHash } from 'node:crypto'
import { sql } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { AccountService } from '../../src/domain/accounts/account-service.js'
import { ManualClock } from '../../src/shared/clock.js'
import { KyselyAccountRepo } from '../../src/store/account-repo.js'
import { KyselyApiKeyRepo } from '../../src/store/api-key-repo.js'
import type { Store } from '../../src/store/open-store.js'
import { testStores } from '../support/stores.js'

describe.each(testStores())('AccountService on $name', ({ open }) => {
  let store: Store
  let clock: ManualClock
  let accounts: AccountService

  beforeEach(async () => {
    store = await open()
    clock = new ManualClock('2026-03-01T12:00:00.000Z')
    accounts = new AccountService(
      new KyselyAccountRepo(store.db),
      new KyselyApiKeyRepo(store.db),
      clock,
    )
  })
  afterEach(() => store.close())

  it('creates accounts with one user and refuses a second user with the same email', async () => {
    const { account, user } = await accounts.createAccount({ email: 'Ada@Example.com' })
    expect(user).toMatchObject({ accountId: account.id, email: 'ada@example.com' })
    expect(await accounts.findAccount('ada@example.com')).toEqual(account)
    expect(await accounts.findAccount(account.id)).toEqual(account)
    await expect(accounts.createAccount({ email: 'ada@example.com' })).rejects.toMatchObject({
      code: 'RULE_CONFLICT',
    })
    await expect(accounts.createAccount({ email: 'not an email' })).rejects.toMatchObject({
      code: 'VALIDATION_FAILED',
    })
    expect((await accounts.listAccounts()).map((a) => a.email)).toEqual(['ada@example.com'])
  })

  it('stores keys hashed: the plain key is nowhere in the database', async () => {
    const { account } = await accounts.createAccount({ email: 'a@example.com' })
    const { key, secret } = await accounts.createApiKey({
      accountId: account.id,
      name: 'ci',
      permission: 'READ_WRITE',
    })
    expect(secret).toMatch(/^pyd_[A-Za-z0-9]{40}$/)
    expect(key.prefix).toBe(secret.slice(0, 12))
    const everything: unknown[] = []
    for (const table of ['accounts', 'users', 'api_keys', 'allocations']) {
      everything.push(...(await sql`select * from ${sql.table(table)}`.execute(store.db)).rows)
    }
    const dump = JSON.stringify(everything)
    expect(dump).not.toContain(secret)
    expect(dump).not.toContain(secret.slice(4))
    expect(dump).toContain(createHash('sha256').update(secret).digest('hex'))
  })

  it('authenticates a valid key and says why others fail', async () => {
    const { account } = await accounts.createAccount({ email: 'a@example.com' })
    const { key, secret } = await accounts.createApiKey({
      accountId: account.id,
      name: 'short-lived',
      permission: 'READ_ONLY',
      expiresAt: '2026-03-01T13:00:00.000Z',
    })
    const ok = await accounts.authenticate(secret)
    expect(ok).toMatchObject({ ok: true, principal: { accountId: account.id, isAdmin: false } })
    expect((await accounts.listApiKeys(account.id))[0]!.lastUsedAt).toBe('2026-03-01T12:00:00.000Z')

    expect(await accounts.authenticate(undefined)).toEqual({ ok: false, reason: 'missing' })
    expect(await accounts.authenticate('bad key with spaces')).toEqual({
      ok: false,
      reason: 'not-a-key',
    })
    expect(await accounts.authenticate('short')).toEqual({ ok: false, reason: 'too-short' })
    expect(await accounts.authenticate(`pyd_${'x'.repeat(40)}`)).toEqual({
      ok: false,
      reason: 'unknown',
    })

    clock.set('2026-03-01T13:00:00.000Z')
    expect(await accounts.authenticate(secret)).toEqual({ ok: false, reason: 'expired' })
    clock.set('2026-03-01T12:30:00.000Z')
    await accounts.revokeApiKey(key.id)
    expect(await accounts.authenticate(secret)).toEqual({ ok: false, reason: 'revoked' })
  })

  it('validates key permissions, expiry and ownership', async () => {
    const { account } = await accounts.createAccount({ email: 'a@example.com' })
    const other = (await accounts.createAccount({ email: 'b@example.com' })).account
    await expect(
      accounts.createApiKey({ accountId: account.id, name: 'r', permission: 'RESTRICTED' }),
    ).rejects.toMatchObject({ code: 'RULE_CONFLICT' })
    await expect(
      accounts.createApiKey({
        accountId: account.id,
        name: 'r',
        permission: 'READ_WRITE',
        endpointIds: ['e'],
      }),
    ).rejects.toMatchObject({ code: 'RULE_CONFLICT' })
    await expect(
      accounts.createApiKey({
        accountId: account.id,
        name: 'past',
        permission: 'READ_WRITE',
        expiresAt: '2026-03-01T11:00:00.000Z',
      }),
    ).rejects.toMatchObject({ code: 'RULE_CONFLICT' })
    const { key } = await accounts.createApiKey({
      accountId: account.id,
      name: 'r',
      permission: 'RESTRICTED',
      endpointIds: ['ep1', 'ep2', 'ep1'],
    })
    expect(key.endpointIds).toEqual(['ep1', 'ep2'])
    expect(await accounts.listApiKeys(account.id)).toEqual([key])
    await expect(accounts.revokeApiKey(key.id, other.id)).rejects.toMatchObject({
      code: 'NOT_FOUND',
    })
    expect((await accounts.revokeApiKey(key.id, account.id)).revokedAt).toBe(
      '2026-03-01T12:00:00.000Z',
    )
  })

  it('creates the admin account once, with a generated key only the first time', async () => {
    const first = await accounts.ensureAdmin({ email: 'admin@example.com' })
    expect(first.createdAccount).toBe(true)
    expect(first.generatedKey).toMatch(/^pyd_/)
    expect(await accounts.authenticate(first.generatedKey)).toMatchObject({
      ok: true,
      principal: { isAdmin: true, accountId: first.account.id },
    })
    const second = await accounts.ensureAdmin({ email: 'admin@example.com' })
    expect(second).toEqual({ account: first.account, createdAccount: false, warnings: [] })
    expect(await accounts.listApiKeys()).toHaveLength(1)
  })

  it('ensures PODYARD_ADMIN_KEY idempotently and keeps a revoked one revoked', async () => {
    const adminKey = 'my-chosen-admin-key-123'
    const first = await accounts.ensureAdmin({ email: 'admin@example.com', adminKey })
    expect(first.generatedKey).toBeUndefined()
    await accounts.ensureAdmin({ email: 'admin@example.com', adminKey })
    const keys = await accounts.listApiKeys()
    expect(keys).toHaveLength(1)
    expect(await accounts.authenticate(adminKey)).toMatchObject({
      ok: true,
      principal: { isAdmin: true },
    })

    await accounts.revokeApiKey(keys[0]!.id)
    const again = await accounts.ensureAdmin({ email: 'admin@example.com', adminKey })
    expect(again.warnings).toEqual(['PODYARD_ADMIN_KEY matches a revoked key; it stays revoked'])
    expect(await accounts.authenticate(adminKey)).toEqual({ ok: false, reason: 'revoked' })
    await expect(
      accounts.ensureAdmin({ email: 'admin@example.com', adminKey: 'short' }),
    ).rejects.toMatchObject({
      code: 'VALIDATION_FAILED',
    })
  })
})
