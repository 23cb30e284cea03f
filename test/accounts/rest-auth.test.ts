import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AccountService } from '../../src/domain/accounts/account-service.js'
import { ManualClock } from '../../src/shared/clock.js'
import { KyselyAccountRepo } from '../../src/store/account-repo.js'
import { KyselyApiKeyRepo } from '../../src/store/api-key-repo.js'
import { startTestPlatform, type TestPlatform } from '../support/platform.js'

async function problem(response: Response) {
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/)
  return (await response.json()) as {
    title: string
    status: number
    detail: string
    errors?: string[]
  }
}

describe('REST authentication and authorization', () => {
  let platform: TestPlatform
  const clock = new ManualClock('2026-05-01T08:00:00.000Z')

  async function createKey(body: Record<string, unknown>): Promise<{ id: string; key: string }> {
    const response = await platform.call('/v2/account/api-keys', { method: 'POST', json: body })
    expect(response.status).toBe(201)
    return (await response.json()) as { id: string; key: string }
  }

  beforeAll(async () => {
    platform = await startTestPlatform({}, { clock })
  })
  afterAll(() => platform.close())

  it('401 without a key, and no rate-limit headers', async () => {
    const response = await platform.call('/v2/catalog/gpus', { key: null })
    expect(response.status).toBe(401)
    expect(response.headers.get('ratelimit')).toBeNull()
    expect(await problem(response)).toEqual({
      title: 'Unauthorized',
      status: 401,
      detail: 'no API key: send the header Authorization: Bearer <key>',
    })
  })

  it('401 for a malformed Authorization header', async () => {
    for (const authorization of ['Basic dXNlcjpwYXNz', 'Bearer', 'Bearer a b']) {
      const response = await platform.call('/v2/catalog/gpus', {
        key: null,
        headers: { authorization },
      })
      expect(response.status, authorization).toBe(401)
      expect((await problem(response)).detail).toMatch(/malformed/)
    }
  })

  it('401 for a key too short or not shaped like a key, saying so (not "malformed")', async () => {
    const short = await platform.call('/v2/catalog/gpus', {
      key: null,
      headers: { authorization: 'Bearer short' },
    })
    expect(short.status).toBe(401)
    expect((await problem(short)).detail).toBe(
      'the API key is too short to be a podyard key (keys are pyd_ and 40 letters or digits)',
    )
    const odd = await platform.call('/v2/catalog/gpus', {
      key: null,
      headers: { authorization: `Bearer pyd_${'x'.repeat(20)}!` },
    })
    expect(odd.status).toBe(401)
    expect((await problem(odd)).detail).toMatch(/^the API key is not a podyard key/)
  })

  it('401 for an unknown, a revoked and an expired key', async () => {
    const unknown = await platform.call('/v2/catalog/gpus', { key: `pyd_${'z'.repeat(40)}` })
    expect(unknown.status).toBe(401)
    expect((await problem(unknown)).detail).toBe('the API key is not valid')

    const revoked = await createKey({ name: 'to revoke' })
    expect((await platform.call('/v2/catalog/gpus', { key: revoked.key })).status).toBe(200)
    expect(
      (await platform.call(`/v2/account/api-keys/${revoked.id}`, { method: 'DELETE' })).status,
    ).toBe(204)
    const afterRevoke = await platform.call('/v2/catalog/gpus', { key: revoked.key })
    expect(afterRevoke.status).toBe(401)
    expect((await problem(afterRevoke)).detail).toBe('the API key has been revoked')

    const expiring = await createKey({ name: 'expiring', expiresAt: '2026-05-01T09:00:00.000Z' })
    expect((await platform.call('/v2/catalog/gpus', { key: expiring.key })).status).toBe(200)
    clock.set('2026-05-01T09:00:00.000Z')
    const afterExpiry = await platform.call('/v2/catalog/gpus', { key: expiring.key })
    expect(afterExpiry.status).toBe(401)
    expect((await problem(afterExpiry)).detail).toBe('the API key has expired')
    clock.set('2026-05-01T08:00:00.000Z')
  })

  it('403 for a read-only key on a write, with rate-limit headers', async () => {
    const readOnly = await createKey({ name: 'viewer', permission: 'READ_ONLY' })
    expect((await platform.call('/v2/catalog/gpus', { key: readOnly.key })).status).toBe(200)
    const response = await platform.call('/v2/account/api-keys', {
      method: 'POST',
      key: readOnly.key,
      json: { name: 'escalate' },
    })
    expect(response.status).toBe(403)
    expect(response.headers.get('ratelimit')).toMatch(
      /^"minute";r=\d+;t=\d+, "hour";r=\d+;t=\d+, "day";r=\d+;t=\d+$/,
    )
    expect(await problem(response)).toEqual({
      title: 'Forbidden',
      status: 403,
      detail: 'this API key is read-only',
    })
  })

  it('403 for a key restricted to serverless endpoints on the management API', async () => {
    const restricted = await createKey({
      name: 'worker',
      permission: 'RESTRICTED',
      endpoints: ['ep123'],
    })
    const response = await platform.call('/v2/catalog/gpus', { key: restricted.key })
    expect(response.status).toBe(403)
    expect((await problem(response)).detail).toMatch(/restricted/)
  })

  it('shows a key once: listing never returns it', async () => {
    const created = await createKey({ name: 'once' })
    const listing = await (await platform.call('/v2/account/api-keys')).text()
    expect(listing).toContain(created.id)
    expect(listing).not.toContain(created.key)
  })

  it('keeps accounts apart: another account’s key is 404 to revoke', async () => {
    const adminKeys = (await (await platform.call('/v2/account/api-keys')).json()) as {
      apiKeys: Array<{ id: string }>
    }
    const service = new AccountService(
      new KyselyAccountRepo(platform.store.db),
      new KyselyApiKeyRepo(platform.store.db),
      clock,
    )
    const { account } = await service.createAccount({ email: 'other@example.com' })
    const { secret } = await service.createApiKey({
      accountId: account.id,
      name: 'x',
      permission: 'READ_WRITE',
    })
    const me = (await (await platform.call('/v2/account', { key: secret })).json()) as {
      id: string
      email: string
    }
    expect(me).toMatchObject({ id: account.id, email: 'other@example.com' })
    const theirs = (await (
      await platform.call('/v2/account/api-keys', { key: secret })
    ).json()) as {
      apiKeys: unknown[]
    }
    expect(theirs.apiKeys).toHaveLength(1)
    const response = await platform.call(`/v2/account/api-keys/${adminKeys.apiKeys[0]!.id}`, {
      method: 'DELETE',
      key: secret,
    })
    expect(response.status).toBe(404)
  })
})
