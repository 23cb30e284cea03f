import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/shared/clock.js'
import { startTestPlatform, type TestPlatform } from '../support/platform.js'

describe('REST errors', () => {
  let platform: TestPlatform

  beforeAll(async () => {
    platform = await startTestPlatform()
  })
  afterAll(() => platform.close())

  it('422 lists every schema failure, unknown properties included', async () => {
    const response = await platform.call('/v2/account/api-keys', {
      method: 'POST',
      json: { bogus: 1, permission: 'ROOT', endpoints: 'ep1' },
    })
    expect(response.status).toBe(422)
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    const body = (await response.json()) as {
      title: string
      status: number
      detail: string
      errors: string[]
    }
    expect(body.title).toBe('Unprocessable Entity')
    expect(body.status).toBe(422)
    expect(body.errors).toEqual(
      expect.arrayContaining([
        'body.name: is required',
        'body.bogus: unknown property',
        'body.endpoints: must be array',
      ]),
    )
    expect(body.errors.some((e) => e.startsWith('body.permission: '))).toBe(true)
  })

  it('400 for malformed JSON', async () => {
    const response = await platform.call('/v2/account/api-keys', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"name": ',
    })
    expect(response.status).toBe(400)
    const body = (await response.json()) as { title: string; detail: string }
    expect(body.title).toBe('Bad Request')
    expect(body.detail).not.toMatch(/at .*\.(js|ts):\d+/)
  })

  it('404 problem for an unknown route, before authentication', async () => {
    const response = await platform.call('/v2/nothing-here', { key: null })
    expect(response.status).toBe(404)
    expect(await response.json()).toEqual({
      title: 'Not Found',
      status: 404,
      detail: 'no route for GET /v2/nothing-here',
    })
  })

  it('404 problem for an unknown catalog id', async () => {
    const response = await platform.call('/v2/catalog/gpus/NVIDIA%20GeForce%20RTX%209999')
    expect(response.status).toBe(404)
    expect(((await response.json()) as { detail: string }).detail).toBe(
      'GPU type NVIDIA GeForce RTX 9999 not found',
    )
  })
})

describe('REST rate limits', () => {
  let platform: TestPlatform
  const clock = new ManualClock('2026-05-01T08:00:50.000Z')

  beforeAll(async () => {
    platform = await startTestPlatform(
      { rateLimit: { minute: 3, hour: 1000, day: 10000 } },
      { clock },
    )
  })
  afterAll(() => platform.close())

  it('sends RateLimit headers, 429 past the quota with Retry-After, and lets the next window in', async () => {
    const first = await platform.call('/v2/catalog/datacenters')
    expect(first.status).toBe(200)
    expect(first.headers.get('ratelimit')).toBe(
      '"minute";r=2;t=10, "hour";r=999;t=3550, "day";r=9999;t=57550',
    )
    expect(first.headers.get('ratelimit-policy')).toBe(
      '"minute";q=3;w=60, "hour";q=1000;w=3600, "day";q=10000;w=86400',
    )
    expect((await platform.call('/v2/catalog/datacenters')).status).toBe(200)
    expect((await platform.call('/v2/catalog/datacenters')).status).toBe(200)

    clock.set('2026-05-01T08:00:55.500Z')
    const refused = await platform.call('/v2/catalog/datacenters')
    expect(refused.status).toBe(429)
    expect(refused.headers.get('retry-after')).toBe('5')
    expect(refused.headers.get('ratelimit')).toMatch(/^"minute";r=0;t=5, /)
    expect(refused.headers.get('ratelimit-policy')).toMatch(/^"minute";q=3;w=60/)
    const body = (await refused.json()) as { title: string; status: number; detail: string }
    expect(body).toMatchObject({ title: 'Too Many Requests', status: 429 })
    expect(body.detail).toMatch(/minute window/)

    clock.set('2026-05-01T08:01:00.000Z')
    const next = await platform.call('/v2/catalog/datacenters')
    expect(next.status).toBe(200)
    expect(next.headers.get('ratelimit')).toMatch(/^"minute";r=2;t=60, "hour";r=996;/)
  })
})
