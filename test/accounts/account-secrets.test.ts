import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'
import { until } from '../support/until.js'

const VALUE = 'hf_s3cr3t-Value-4b9d2e'

interface SecretJson {
  id: string
  name: string
  description: string | null
  createdAt: string
}

/**
 * Account secrets (docs/security.md, "Where secrets live"), as a second (non-admin) account
 * would use them: REST and GraphQL, a pod whose env refers to one, and the value never in any
 * response nor in the store's row.
 */
describe('account secrets', () => {
  let platform: TestPlatform
  let key: string
  /** Every response body this suite saw, to check none ever carried the value. */
  const bodies: string[] = []
  /** Every log line the server wrote, at its most verbose. */
  const logLines: string[] = []

  async function call(path: string, init: Parameters<TestPlatform['call']>[1] = {}) {
    const response = await platform.call(path, { key, ...init })
    const text = await response.text()
    bodies.push(text)
    return { status: response.status, text, body: text === '' ? null : JSON.parse(text) }
  }
  const graphql = (query: string, variables: Record<string, unknown> = {}) =>
    call('/graphql', { method: 'POST', json: { query, variables } })

  beforeAll(async () => {
    const logger = pino({ level: 'trace' }, { write: (line: string) => logLines.push(line) })
    platform = await startTestPlatform({}, { logger })
    key = await otherAccountKey(platform, 'secrets-member@example.com')
  })
  afterAll(async () => {
    await platform.close()
  })

  it('creates, lists without values, refuses a duplicate (409) and deletes', async () => {
    const created = await call('/v2/account/secrets', {
      method: 'POST',
      json: { name: 'HF_TOKEN', value: VALUE, description: 'hugging face' },
    })
    expect(created.status).toBe(201)
    const secret = created.body as SecretJson
    expect(secret).toEqual({
      id: expect.any(String),
      name: 'HF_TOKEN',
      description: 'hugging face',
      createdAt: expect.any(String),
    })

    const list = await call('/v2/account/secrets')
    expect(list.status).toBe(200)
    expect(list.body).toEqual([secret])

    const again = await call('/v2/account/secrets', {
      method: 'POST',
      json: { name: 'HF_TOKEN', value: 'other' },
    })
    expect(again.status).toBe(409)
    expect(again.body.detail).toBe('a secret named "HF_TOKEN" already exists')

    const badName = await call('/v2/account/secrets', {
      method: 'POST',
      json: { name: 'has space', value: 'x' },
    })
    expect(badName.status).toBe(422)
    expect(badName.body.detail).toMatch(/name/)

    // The admin's list does not show the member's secret; its delete is a 404, not a 403.
    const adminList = await platform.call('/v2/account/secrets')
    expect(await adminList.json()).toEqual([])
    const foreign = await platform.call(`/v2/account/secrets/${secret.id}`, { method: 'DELETE' })
    expect(foreign.status).toBe(404)

    const deleted = await call(`/v2/account/secrets/${secret.id}`, { method: 'DELETE' })
    expect(deleted.status).toBe(204)
    expect((await call('/v2/account/secrets')).body).toEqual([])
    expect((await call(`/v2/account/secrets/${secret.id}`, { method: 'DELETE' })).status).toBe(404)
  })

  it('has GraphQL secretCreate {id name description} and secretDelete (null)', async () => {
    const created = await graphql(
      'mutation($input: SecretCreateInput) { secretCreate(input: $input) { id name description } }',
      { input: { name: 'GQL_KEY', value: VALUE } },
    )
    expect(created.body.errors).toBeUndefined()
    const secret = created.body.data.secretCreate
    expect(secret).toEqual({ id: expect.any(String), name: 'GQL_KEY', description: null })

    const duplicate = await graphql(
      'mutation { secretCreate(input: {name: "GQL_KEY", value: "x"}) { id } }',
    )
    expect(duplicate.body.errors[0].message).toBe('a secret named "GQL_KEY" already exists')

    const deleted = await graphql('mutation($id: String) { secretDelete(id: $id) }', {
      id: secret.id,
    })
    expect(deleted.body).toEqual({ data: { secretDelete: null } })
    expect((await call('/v2/account/secrets')).body).toEqual([])
  })

  it('resolves a reference into the pod at launch; the pod keeps the reference', async () => {
    const secret = (
      await call('/v2/account/secrets', {
        method: 'POST',
        json: { name: 'API_TOKEN', value: VALUE },
      })
    ).body as SecretJson
    // Sealed at rest: the row holds neither the value nor anything it can be read from.
    const row = await platform.store.db
      .selectFrom('account_secrets')
      .selectAll()
      .where('id', '=', secret.id)
      .executeTakeFirstOrThrow()
    expect(row.value_sealed).toMatch(/^v1:/)
    expect(JSON.stringify(row)).not.toContain(VALUE)
    expect(row.value_sealed).not.toContain(Buffer.from(VALUE).toString('base64'))

    const reference = 'Bearer {{ RUNPOD_SECRET_API_TOKEN }}'
    const created = await call('/v2/pods', {
      method: 'POST',
      json: {
        name: 'uses-secret',
        image: 'x',
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        env: { TOKEN: reference },
        args: 'echo "token=$TOKEN"; exec sleep 1000',
      },
    })
    expect(created.status).toBe(201)
    const id = created.body.id as string
    const logs = await until(
      'the pod printing its token',
      async () => (await platform.call(`/v2/pods/${id}/logs?follow=false`, { key })).text(),
      (text) => text.includes('token='),
      20_000,
    )
    expect(logs).toContain(`token=Bearer ${VALUE}`)
    const pod = await call(`/v2/pods/${id}`)
    expect(pod.body.env).toEqual({ TOKEN: reference })
    await call(`/v2/pods/${id}`, { method: 'DELETE' })
  })

  it('puts a pod that refers to an unknown secret in ERROR, naming it', async () => {
    const created = await call('/v2/pods', {
      method: 'POST',
      json: {
        name: 'missing-secret',
        image: 'x',
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        env: { TOKEN: '{{ RUNPOD_SECRET_NOT_THERE }}' },
        args: 'exec sleep 1000',
      },
    })
    expect(created.status).toBe(201)
    const pod = await until(
      'the pod in ERROR',
      async () => (await call(`/v2/pods/${created.body.id}`)).body,
      (p) => p.status === 'ERROR',
      20_000,
    )
    expect(pod.statusReason).toBe(
      'could not start: its env refers to the secret "NOT_THERE", which the account does not have',
    )
  })

  it('never returned the value in any response, nor logged it', () => {
    expect(bodies.length).toBeGreaterThan(10)
    for (const body of bodies) expect(body).not.toContain(VALUE)
    expect(logLines.length).toBeGreaterThan(10)
    for (const line of logLines) expect(line).not.toContain(VALUE)
  })
})
