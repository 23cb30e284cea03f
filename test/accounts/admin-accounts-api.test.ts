import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { json } from '../support/http.js'
import { platformStores } from '../support/platform-stores.js'
import { otherAccountKey, type TestPlatform } from '../support/platform.js'

/**
 * Accounts over HTTP for the admin: the list, and a new account with its first key,
 * so that a team member can start without the server's terminal (docs/api.md, "Accounts").
 */
interface AccountView {
  id: string
  name: string
  email: string
  role: string
  balance: number
  spendLimit: number
}
interface Created {
  account: AccountView
  apiKey: { id: string; key: string; name: string; permission: string; expiresAt: string | null }
}

async function problem(response: Response, status: number) {
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/)
  return json<{ title: string; status: number; detail: string; errors?: string[] }>(
    response,
    status,
  )
}

describe.each(platformStores())('admin accounts on $name', ({ start }) => {
  let platform: TestPlatform
  let userKey: string

  beforeAll(async () => {
    platform = await start()
    userKey = await otherAccountKey(platform, 'someone@example.com')
  })
  afterAll(() => platform.close())

  const accountEmails = async () =>
    (
      await json<{ accounts: AccountView[] }>(await platform.call('/v2/admin/accounts'))
    ).accounts.map((account) => account.email)

  it('creates an account and its first key, which works at once and is shown only then', async () => {
    const created = await json<Created>(
      await platform.call('/v2/admin/accounts', {
        method: 'POST',
        json: { email: 'New.Member@Example.com', name: 'New member', apiKey: { name: 'laptop' } },
      }),
      201,
    )
    expect(created.account).toMatchObject({
      email: 'new.member@example.com',
      name: 'New member',
      role: 'user',
      balance: 0,
      spendLimit: 80,
    })
    expect(created.apiKey).toMatchObject({
      name: 'laptop',
      permission: 'READ_WRITE',
      expiresAt: null,
    })
    expect(created.apiKey.key).toMatch(/^pyd_/)

    const own = await json<AccountView>(
      await platform.call('/v2/account', { key: created.apiKey.key }),
    )
    expect(own).toMatchObject({
      id: created.account.id,
      email: 'new.member@example.com',
      role: 'user',
    })
    const keys = await json<{ apiKeys: Array<Record<string, unknown>> }>(
      await platform.call('/v2/account/api-keys', { key: created.apiKey.key }),
    )
    expect(keys.apiKeys.map((key) => key.id)).toEqual([created.apiKey.id])
    expect(keys.apiKeys[0]).not.toHaveProperty('key')

    const listed = await json<{ accounts: AccountView[] }>(
      await platform.call('/v2/admin/accounts'),
    )
    expect(listed.accounts.find((account) => account.id === created.account.id)).toEqual(
      expect.objectContaining({ email: 'new.member@example.com', balance: 0, spendLimit: 80 }),
    )
    expect(listed.accounts.map((account) => account.role)).toContain('admin')
  })

  it('defaults the key to READ_WRITE named "first key", and takes READ_ONLY and an expiry', async () => {
    const plain = await json<Created>(
      await platform.call('/v2/admin/accounts', {
        method: 'POST',
        json: { email: 'plain@example.com' },
      }),
      201,
    )
    expect(plain.account.name).toBe('plain@example.com')
    expect(plain.apiKey).toMatchObject({ name: 'first key', permission: 'READ_WRITE' })

    const expiresAt = new Date(Date.now() + 86_400_000).toISOString()
    const reader = await json<Created>(
      await platform.call('/v2/admin/accounts', {
        method: 'POST',
        json: { email: 'reader@example.com', apiKey: { permission: 'READ_ONLY', expiresAt } },
      }),
      201,
    )
    expect(reader.apiKey).toMatchObject({ permission: 'READ_ONLY', expiresAt })
    const write = await platform.call('/v2/account/api-keys', {
      key: reader.apiKey.key,
      method: 'POST',
      json: { name: 'x' },
    })
    expect(write.status).toBe(403)
  })

  it('refuses anyone but the admin with 403, and no key with 401', async () => {
    const list = await platform.call('/v2/admin/accounts', { key: userKey })
    expect(await problem(list, 403)).toMatchObject({
      detail: 'only the admin account may list or create accounts',
    })
    const create = await platform.call('/v2/admin/accounts', {
      key: userKey,
      method: 'POST',
      json: { email: 'sneaky@example.com' },
    })
    expect(await problem(create, 403)).toMatchObject({ status: 403 })
    await problem(await platform.call('/v2/admin/accounts', { key: null }), 401)
    expect(await accountEmails()).not.toContain('sneaky@example.com')
  })

  it('refuses bad input with problem+json, and creates nothing then', async () => {
    const before = await accountEmails()
    const duplicate = await platform.call('/v2/admin/accounts', {
      method: 'POST',
      json: { email: 'SOMEONE@example.com' },
    })
    expect(await problem(duplicate, 400)).toMatchObject({
      detail: 'a user with email someone@example.com already exists',
    })
    const notEmail = await platform.call('/v2/admin/accounts', {
      method: 'POST',
      json: { email: 'not-an-email' },
    })
    expect((await problem(notEmail, 422)).detail).toContain('is not an email address')
    const unknown = await platform.call('/v2/admin/accounts', {
      method: 'POST',
      json: { email: 'x@example.com', role: 'admin', apiKey: { permission: 'RESTRICTED' } },
    })
    const invalid = await problem(unknown, 422)
    expect(invalid.errors).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^body\.role: /),
        expect.stringMatching(/^body\.apiKey\.permission: /),
      ]),
    )
    const past = await platform.call('/v2/admin/accounts', {
      method: 'POST',
      json: { email: 'late@example.com', apiKey: { expiresAt: '2020-01-01T00:00:00.000Z' } },
    })
    expect(await problem(past, 400)).toMatchObject({
      detail: 'expiry 2020-01-01T00:00:00.000Z is not in the future',
    })
    expect(await accountEmails()).toEqual(before)
  })

  it('shows an account its own ledger and current spend', async () => {
    const account = await json<AccountView & { currentSpendPerHour: number }>(
      await platform.call('/v2/account', { key: userKey }),
    )
    expect(account.currentSpendPerHour).toBe(0)
    await json(
      await platform.call(`/v2/admin/accounts/${account.id}/credits`, {
        method: 'POST',
        json: { amount: 12.5, note: 'welcome' },
      }),
    )
    const credits = await json<{
      balance: number
      entries: Array<{ amount: number; note: string }>
    }>(await platform.call('/v2/account/credits', { key: userKey }))
    expect(credits.balance).toBe(12.5)
    expect(credits.entries).toEqual([
      expect.objectContaining({ amount: 12.5, note: 'welcome', kind: 'credit' }),
    ])
  })

  it('documents the routes in the OpenAPI document', async () => {
    const document = await json<{
      paths: Record<string, Record<string, { operationId?: string }>>
    }>(await platform.call('/v2/openapi.json'))
    expect(document.paths['/v2/admin/accounts']?.get?.operationId).toBe('listAccounts')
    expect(document.paths['/v2/admin/accounts']?.post?.operationId).toBe('createAccount')
    expect(document.paths['/v2/account/credits']?.get?.operationId).toBe('getOwnCredits')
  })
})
