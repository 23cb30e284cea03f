import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'

const USERNAME = 'registry-user-7f3a'
const PASSWORD = 'registry-Passw0rd-9c1e'

interface Problem {
  title: string
  status: number
  detail: string
  errors?: string[]
}

describe('REST registries', () => {
  let platform: TestPlatform
  /** Every response body this suite saw, to check none ever carried a credential. */
  const bodies: string[] = []

  async function call(
    path: string,
    init: RequestInit & { key?: string | null; json?: unknown } = {},
  ): Promise<{ status: number; text: string; contentType: string | null }> {
    const response = await platform.call(path, init)
    const text = await response.text()
    bodies.push(text)
    return { status: response.status, text, contentType: response.headers.get('content-type') }
  }
  const json = <T>(result: { text: string }) => JSON.parse(result.text) as T
  const create = (body: Record<string, unknown>, key?: string) =>
    call('/v2/registries', { method: 'POST', json: body, ...(key ? { key } : {}) })
  const problem = (result: { text: string; contentType: string | null }) => {
    expect(result.contentType).toMatch(/^application\/problem\+json/)
    return json<Problem>(result)
  }

  beforeAll(async () => {
    platform = await startTestPlatform()
  })
  afterAll(async () => {
    await platform.close()
  })

  it('creates (201 {id, name}), lists, gets and deletes a registry', async () => {
    const created = await create({ name: 'docker hub', username: USERNAME, password: PASSWORD })
    expect(created.status).toBe(201)
    const registry = json<{ id: string; name: string }>(created)
    expect(registry).toEqual({ id: expect.stringMatching(/^cl[a-z0-9]{23}$/), name: 'docker hub' })

    const list = await call('/v2/registries')
    expect(list.status).toBe(200)
    expect(json(list)).toEqual({ registries: [registry] })

    const got = await call(`/v2/registries/${registry.id}`)
    expect(got.status).toBe(200)
    expect(json(got)).toEqual(registry)

    const deleted = await call(`/v2/registries/${registry.id}`, { method: 'DELETE' })
    expect(deleted.status).toBe(204)
    expect(deleted.text).toBe('')
    expect(json(await call('/v2/registries'))).toEqual({ registries: [] })
    const gone = await call(`/v2/registries/${registry.id}`)
    expect(gone.status).toBe(404)
    expect(problem(gone).detail).toBe(`registry ${registry.id} not found`)
  })

  it('hides a registry from another account: 404 on get and delete, absent from its list', async () => {
    const registry = json<{ id: string }>(
      await create({ name: 'private', username: USERNAME, password: PASSWORD }),
    )
    const stranger = await otherAccountKey(platform, 'registry-stranger@example.com')

    const got = await call(`/v2/registries/${registry.id}`, { key: stranger })
    expect(got.status).toBe(404)
    expect(problem(got)).toEqual({
      title: 'Not Found',
      status: 404,
      detail: `registry ${registry.id} not found`,
    })
    const deleted = await call(`/v2/registries/${registry.id}`, { method: 'DELETE', key: stranger })
    expect(deleted.status).toBe(404)
    expect(json(await call('/v2/registries', { key: stranger }))).toEqual({ registries: [] })

    expect((await call(`/v2/registries/${registry.id}`)).status).toBe(200)
  })

  it.each<[string, Record<string, unknown>, string]>([
    ['name missing', { username: 'u', password: 'p' }, 'body.name: is required'],
    ['username missing', { name: 'n', password: 'p' }, 'body.username: is required'],
    ['password missing', { name: 'n', username: 'u' }, 'body.password: is required'],
    [
      'an extra property',
      { name: 'n', username: 'u', password: 'p', url: 'ghcr.io' },
      'body.url: unknown property',
    ],
    [
      'an empty password',
      { name: 'n', username: 'u', password: '' },
      'body.password: must NOT have fewer than 1 characters',
    ],
    ['a number as name', { name: 7, username: 'u', password: 'p' }, 'body.name: must be string'],
  ])('422 for %s', async (_case, body, error) => {
    const result = await create(body)
    expect(result.status).toBe(422)
    expect(problem(result).errors).toContain(error)
  })

  it('400 for a second registry with the same name', async () => {
    await create({ name: 'twice', username: USERNAME, password: PASSWORD })
    const again = await create({ name: 'twice', username: USERNAME, password: PASSWORD })
    expect(again.status).toBe(400)
    expect(problem(again).detail).toBe('a registry named "twice" already exists')
  })

  it('401 without a key and 403 for a read-only key on create', async () => {
    expect((await call('/v2/registries', { key: null })).status).toBe(401)
    const keyResponse = await platform.call('/v2/account/api-keys', {
      method: 'POST',
      json: { name: 'viewer', permission: 'READ_ONLY' },
    })
    const { key } = (await keyResponse.json()) as { key: string }
    expect((await call('/v2/registries', { key })).status).toBe(200)
    expect((await create({ name: 'ro', username: USERNAME, password: PASSWORD }, key)).status).toBe(
      403,
    )
  })

  it('documents the routes in the OpenAPI document, without the password in any response', async () => {
    const doc = json<{
      paths: Record<string, Record<string, { operationId: string; tags: string[] }>>
    }>(await call('/v2/openapi.json', { key: null }))
    expect(doc.paths['/v2/registries']?.get?.operationId).toBe('listRegistries')
    expect(doc.paths['/v2/registries']?.post).toMatchObject({
      operationId: 'createRegistry',
      tags: ['Registries'],
    })
    expect(doc.paths['/v2/registries/{id}']?.get?.operationId).toBe('getRegistry')
    expect(doc.paths['/v2/registries/{id}']?.delete?.operationId).toBe('deleteRegistry')
  })

  it('never returned the username or the password in any response of this suite', () => {
    expect(bodies.length).toBeGreaterThan(10)
    for (const body of bodies) {
      expect(body).not.toContain(PASSWORD)
      expect(body).not.toContain(USERNAME)
    }
  })
})
