import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TEST_ADMIN_KEY, startTestPlatform, type TestPlatform } from '../support/platform.js'

describe('GraphQL authentication', () => {
  let platform: TestPlatform
  const query = JSON.stringify({ query: '{ myself { id email } }' })

  function graphql(search: string, headers: Record<string, string> = {}) {
    return fetch(`${platform.url}/graphql${search}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: query,
    })
  }

  beforeAll(async () => {
    platform = await startTestPlatform()
  })
  afterAll(() => platform.close())

  it('accepts the key as ?api_key= and as a Bearer header', async () => {
    for (const response of [
      await graphql(`?api_key=${TEST_ADMIN_KEY}`),
      await graphql('', { authorization: `Bearer ${TEST_ADMIN_KEY}` }),
    ]) {
      expect(response.status).toBe(200)
      expect(await response.json()).toEqual({
        data: { myself: { id: expect.stringMatching(/^acct_/), email: 'admin@podyard.local' } },
      })
    }
  })

  it('401 with errors[] for a missing, empty or unknown key', async () => {
    for (const response of [
      await graphql(''),
      await graphql('?api_key='),
      await graphql(`?api_key=pyd_${'n'.repeat(40)}`),
    ]) {
      expect(response.status).toBe(401)
      const body = (await response.json()) as {
        errors: Array<{ message: string; extensions: { code: string } }>
      }
      expect(body.errors[0]!.extensions.code).toBe('UNAUTHENTICATED')
    }
  })

  it('403 with errors[] for a key restricted to serverless endpoints', async () => {
    const created = await platform.call('/v2/account/api-keys', {
      method: 'POST',
      json: { name: 'ep only', permission: 'RESTRICTED', endpoints: ['ep1'] },
    })
    const { key } = (await created.json()) as { key: string }
    const response = await graphql(`?api_key=${key}`)
    expect(response.status).toBe(403)
    expect(await response.json()).toMatchObject({ errors: [{ extensions: { code: 'FORBIDDEN' } }] })
  })
})

describe('GraphQL rate limits', () => {
  let platform: TestPlatform

  beforeAll(async () => {
    platform = await startTestPlatform({ rateLimit: { minute: 3, hour: 1000, day: 10000 } })
  })
  afterAll(() => platform.close())

  it('counts GraphQL and REST requests of an account against the same windows', async () => {
    const graphql = () =>
      fetch(`${platform.url}/graphql?api_key=${TEST_ADMIN_KEY}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ myself { id } }' }),
      })
    const first = await graphql()
    expect(first.status).toBe(200)
    expect(first.headers.get('ratelimit')).toMatch(/"minute";r=2;t=\d+/)
    expect((await platform.call('/v2/account')).status).toBe(200)
    expect((await graphql()).status).toBe(200)

    const refused = await graphql()
    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    const body = (await refused.json()) as {
      data: null
      errors: Array<{ message: string; extensions: { code: string } }>
    }
    expect(body.data).toBeNull()
    expect(body.errors[0]!.extensions.code).toBe('RATE_LIMITED')
    expect(body.errors[0]!.message).toMatch(/minute window/)
    expect((await platform.call('/v2/account')).status).toBe(429)
  })
})
