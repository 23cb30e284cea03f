import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  TEST_ADMIN_KEY,
  otherAccountKey,
  startTestPlatform,
  type TestPlatform,
} from '../support/platform.js'

/**
 * Registry credentials, user settings, serverless GPU pools and the key-less catalog over
 * GraphQL, with documents shaped like runpodctl's (variables, {} and null) and
 * runpod-python's (inlined values), wire-compat §6.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const ED25519 =
  'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHv8s0zN1wJq5gYxXb0m2m0d1t3n5n7p9r1t3v5x7z9B ada@laptop'
const RSA = 'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 bob@desk'

describe('GraphQL registries, user settings, pools and the public catalog', () => {
  let platform: TestPlatform
  let otherKey: string

  async function post(body: unknown, key: string | null = TEST_ADMIN_KEY, search = '') {
    const response = await fetch(`${platform.url}/graphql${search}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(key === null ? {} : { authorization: `Bearer ${key}` }),
      },
      body: JSON.stringify(body),
    })
    return { status: response.status, body: (await response.json()) as Json }
  }

  async function ok(body: Record<string, unknown>, key?: string | null): Promise<Json> {
    const result = await post(body, key)
    expect(result.status, JSON.stringify(result.body)).toBe(200)
    expect(result.body.errors, JSON.stringify(result.body.errors)).toBeUndefined()
    return result.body.data
  }

  async function fails(body: Record<string, unknown>, field: string, key?: string) {
    const result = await post(body, key)
    expect(result.status, JSON.stringify(result.body)).toBe(200)
    expect(result.body.data).toEqual({ [field]: null })
    expect(result.body.errors).toHaveLength(1)
    expect(result.body.errors[0].path).toEqual([field])
    return result.body.errors[0] as {
      message: string
      extensions: { code: string; errors?: string[] }
    }
  }

  beforeAll(async () => {
    platform = await startTestPlatform()
    otherKey = await otherAccountKey(platform, 'settings-other@example.com')
  })
  afterAll(() => platform.close())

  describe('registry credentials', () => {
    const save = `mutation saveRegistryAuth($input: SaveRegistryAuthInput!) { saveRegistryAuth(input: $input) { id name } }`
    const update = `mutation updateRegistryAuth($input: UpdateRegistryAuthInput!) { updateRegistryAuth(input: $input) { id name } }`

    it('saves, updates and deletes, never answering the password; REST sees the same registry', async () => {
      const saved = await ok({
        query: save,
        variables: { input: { name: 'docker hub', username: 'ada', password: 'dckr_pat_secret1' } },
      })
      expect(saved.saveRegistryAuth).toEqual({
        id: expect.stringMatching(/^cl[a-z0-9]{23}$/),
        name: 'docker hub',
      })
      const { id } = saved.saveRegistryAuth
      const raw = await post({
        query: save,
        variables: { input: { name: 'ghcr', username: 'ada', password: 'ghp_secret2' } },
      })
      expect(JSON.stringify(raw.body)).not.toContain('secret')
      expect(await (await platform.call(`/v2/registries/${id}`)).json()).toEqual({
        id,
        name: 'docker hub',
      })

      const row = () =>
        platform.store.db
          .selectFrom('registries')
          .select(['username', 'password_sealed'])
          .where('id', '=', id)
          .executeTakeFirstOrThrow()
      const before = await row()
      const updated = await ok({
        query: update,
        variables: { input: { id, username: 'ada2', password: 'dckr_pat_rotated' } },
      })
      expect(updated.updateRegistryAuth).toEqual({ id, name: 'docker hub' })
      expect(JSON.stringify(updated)).not.toContain('rotated')
      // Stored sealed, as on create: the user name changed, the password was sealed anew.
      const after = await row()
      expect(after.username).toBe('ada2')
      expect(after.password_sealed).not.toBe(before.password_sealed)
      expect(after.password_sealed).toMatch(/^v1:/)
      expect(after.password_sealed).not.toContain('rotated')

      const deleted = await ok({
        query: `mutation { deleteRegistryAuth(registryAuthId: "${id}") }`,
      })
      expect(deleted).toEqual({ deleteRegistryAuth: true })
      expect((await platform.call(`/v2/registries/${id}`)).status).toBe(404)
    })

    it('names the input fields of invalid credentials and refuses a duplicate name', async () => {
      const invalid = await fails(
        {
          query:
            'mutation { saveRegistryAuth(input: {name: " ", username: "", password: ""}) { id name } }',
        },
        'saveRegistryAuth',
      )
      expect(invalid.extensions.code).toBe('VALIDATION_FAILED')
      expect(invalid.message).toBe(
        'the request failed validation: input.name: must not be empty; input.username: must not be empty; input.password: must not be empty',
      )
      expect(invalid.extensions.errors).toEqual([
        'input.name: must not be empty',
        'input.username: must not be empty',
        'input.password: must not be empty',
      ])
      await ok({
        query:
          'mutation { saveRegistryAuth(input: {name: "twice", username: "u", password: "p"}) { id } }',
      })
      const twice = await fails(
        {
          query:
            'mutation { saveRegistryAuth(input: {name: "twice", username: "u", password: "p"}) { id } }',
        },
        'saveRegistryAuth',
      )
      expect(twice).toMatchObject({
        message: 'a registry named "twice" already exists',
        extensions: { code: 'RULE_CONFLICT' },
      })
      const { id } = (
        await ok({
          query:
            'mutation { saveRegistryAuth(input: {name: "upd", username: "u", password: "p"}) { id } }',
        })
      ).saveRegistryAuth
      const badUpdate = await fails(
        { query: update, variables: { input: { id, username: 'u', password: '' } } },
        'updateRegistryAuth',
      )
      expect(badUpdate.message).toBe(
        'the request failed validation: input.password: must not be empty',
      )
    })

    it('answers another account`s registry as NOT_FOUND on update and delete', async () => {
      const theirs = (
        await ok(
          {
            query:
              'mutation { saveRegistryAuth(input: {name: "theirs", username: "u", password: "p"}) { id } }',
          },
          otherKey,
        )
      ).saveRegistryAuth.id
      const updated = await fails(
        { query: update, variables: { input: { id: theirs, username: 'x', password: 'y' } } },
        'updateRegistryAuth',
      )
      expect(updated).toMatchObject({
        message: `registry ${theirs} not found`,
        extensions: { code: 'NOT_FOUND' },
      })
      const deleted = await fails(
        { query: `mutation { deleteRegistryAuth(registryAuthId: "${theirs}") }` },
        'deleteRegistryAuth',
      )
      expect(deleted.extensions.code).toBe('NOT_FOUND')
    })

    it('deletes credentials a template names; the template loses them', async () => {
      const { id } = (
        await ok({
          query:
            'mutation { saveRegistryAuth(input: {name: "used", username: "u", password: "p"}) { id } }',
        })
      ).saveRegistryAuth
      const template = (
        await ok({
          query: `mutation { saveTemplate(input: {name: "private-image", imageName: "ghcr.io/ada/x", containerRegistryAuthId: "${id}"}) { id } }`,
        })
      ).saveTemplate
      expect(
        await ok({ query: `mutation { deleteRegistryAuth(registryAuthId: "${id}") }` }),
      ).toEqual({ deleteRegistryAuth: true })
      expect(
        (await ok({ query: `{ podTemplate(id: "${template.id}") { containerRegistryAuthId } }` }))
          .podTemplate,
      ).toEqual({ containerRegistryAuthId: null })
    })
  })

  describe('updateUserSettings and myself.pubKey', () => {
    it('stores authorized_keys text as runpodctl sends it and answers it in myself', async () => {
      const other = await ok({ query: '{ myself { pubKey } }' }, otherKey)
      expect(other.myself.pubKey).toBeNull()

      // runpodctl joins the keys with blank lines.
      const text = `${ED25519}\n\n${RSA}`
      const data = await ok({
        query:
          'mutation Mutation($input: UpdateUserSettingsInput) { updateUserSettings(input: $input) { id pubKey } }',
        variables: { input: { pubKey: text } },
      })
      expect(data.updateUserSettings).toEqual({ id: expect.stringMatching(/^acct_/), pubKey: text })
      const myself = await ok({ query: 'query myself { myself { id pubKey } }', variables: null })
      expect(myself.myself).toEqual(data.updateUserSettings)
      // Another account's settings are its own.
      expect((await ok({ query: '{ myself { pubKey } }' }, otherKey)).myself.pubKey).toBeNull()

      const cleared = await ok({
        query: 'mutation { updateUserSettings(input: {pubKey: null}) { pubKey } }',
      })
      expect(cleared.updateUserSettings.pubKey).toBeNull()
    })

    it('shares the keys with REST /v2/account/ssh-keys', async () => {
      const put = await platform.call('/v2/account/ssh-keys', {
        method: 'PUT',
        json: { keys: [ED25519, RSA, ED25519] },
      })
      expect(put.status).toBe(200)
      expect(await put.json()).toEqual({ keys: [ED25519, RSA] })
      const myself = await ok({ query: '{ myself { pubKey } }' })
      expect(myself.myself.pubKey).toBe(`${ED25519}\n${RSA}`)
      await ok({ query: `mutation { updateUserSettings(input: {pubKey: "${RSA}"}) { id } }` })
      const listed = await platform.call('/v2/account/ssh-keys')
      expect(await listed.json()).toEqual({ keys: [RSA] })
      expect(await (await platform.call('/v2/account/ssh-keys', { key: otherKey })).json()).toEqual(
        {
          keys: [],
        },
      )

      const bad = await platform.call('/v2/account/ssh-keys', {
        method: 'PUT',
        json: { keys: [RSA, 'command="x" ssh-rsa AAAAB3 c', 'hello'] },
      })
      expect(bad.status).toBe(422)
      const problem = (await bad.json()) as Json
      expect(problem.errors).toEqual([
        expect.stringMatching(/^body\.keys\.1: is not an SSH public key/),
        expect.stringMatching(/^body\.keys\.2: is not an SSH public key/),
      ])
      expect(JSON.stringify(problem)).not.toContain('hello')

      const cleared = await platform.call('/v2/account/ssh-keys', {
        method: 'PUT',
        json: { keys: [] },
      })
      expect(await cleared.json()).toEqual({ keys: [] })
      expect((await ok({ query: '{ myself { pubKey } }' })).myself.pubKey).toBeNull()
    })

    it("puts the stored keys into the account's pods as PUBLIC_KEY", async () => {
      const keys = await ok({ query: '{ myself { pubKey } }' })
      expect(keys.myself.pubKey).toBeNull()
      await ok({ query: `mutation { updateUserSettings(input: {pubKey: "${ED25519}"}) { id } }` })
      const created = await platform.call('/v2/pods', {
        method: 'POST',
        json: {
          name: 'ssh',
          image: 'busybox',
          cpu: { id: 'cpu3c', vcpuCount: 2 },
          args: 'echo "key=[$PUBLIC_KEY]"; sleep 300',
          startSsh: true,
        },
      })
      expect(created.status).toBe(201)
      const pod = (await created.json()) as Json
      try {
        await expect
          .poll(
            async () =>
              (await (await platform.call(`/v2/pods/${pod.id}/logs?follow=false`)).text()).includes(
                `key=[${ED25519}]`,
              ),
            { timeout: 15_000, interval: 200 },
          )
          .toBe(true)
      } finally {
        await platform.call(`/v2/pods/${pod.id}`, { method: 'DELETE' })
        await ok({ query: 'mutation { updateUserSettings(input: {pubKey: null}) { id } }' })
      }
    }, 30_000)

    it('refuses a line that is not an SSH public key, naming the line and not echoing it', async () => {
      const error = await fails(
        {
          query: `mutation { updateUserSettings(input: {pubKey: "${ED25519}\\n# a comment\\nnot-a-key-secretish"}) { pubKey } }`,
        },
        'updateUserSettings',
      )
      expect(error).toMatchObject({
        message: expect.stringContaining('input.pubKey: line 3 is not an SSH public key'),
        extensions: { code: 'VALIDATION_FAILED' },
      })
      expect(error.message).not.toContain('secretish')
    })
  })

  it('lists serverless GPU pools with the fleet`s types of each, as the REST catalog groups them', async () => {
    const data = await ok({
      query: 'query { serverlessGpuPools { id gpuTypeIds } }',
      variables: {},
    })
    const gpus = ((await (await platform.call('/v2/catalog/gpus')).json()) as Json).gpus as Json[]
    const expected = new Map<string, string[]>()
    for (const gpu of gpus) {
      if (gpu.pool) expected.set(gpu.pool, [...(expected.get(gpu.pool) ?? []), gpu.id])
    }
    expect(new Map(data.serverlessGpuPools.map((p: Json) => [p.id, p.gpuTypeIds]))).toEqual(
      expected,
    )
    expect(data.serverlessGpuPools).toContainEqual({
      id: 'ADA_24',
      gpuTypeIds: ['NVIDIA GeForce RTX 4090'],
    })
    expect(data.serverlessGpuPools).toContainEqual({
      id: 'AMPERE_48',
      gpuTypeIds: ['NVIDIA A40', 'NVIDIA RTX A6000'],
    })
    // In §8.2 order; no pool without a type of the fleet; the MI300X is in no pool.
    const ids = data.serverlessGpuPools.map((p: Json) => p.id)
    expect(ids.indexOf('AMPERE_24')).toBeLessThan(ids.indexOf('ADA_24'))
    expect(data.serverlessGpuPools.every((p: Json) => p.gpuTypeIds.length > 0)).toBe(true)
    expect(JSON.stringify(data)).not.toContain('MI300X')
  })

  describe('without an API key', () => {
    it('answers gpuTypes and cpuTypes, with lowestPrice, fragments and introspection', async () => {
      const gpus = await ok(
        {
          query:
            'query GpuTypes { gpuTypes { id displayName memoryInGb lowestPrice(input: {gpuCount: 1}) { stockStatus } } }',
        },
        null,
      )
      expect(gpus.gpuTypes).toContainEqual({
        id: 'NVIDIA GeForce RTX 4090',
        displayName: 'RTX 4090',
        memoryInGb: 24,
        lowestPrice: { stockStatus: 'High' },
      })
      const cpus = await ok(
        { query: '{ cpuTypes { displayName cores threadsPerCore } }', variables: null },
        null,
      )
      expect(cpus.cpuTypes).toContainEqual({
        displayName: 'Compute-Optimized (Gen 3)',
        cores: 64,
        threadsPerCore: 1,
      })
      const both = await ok(
        {
          query:
            'query Both { __typename ...Catalog } fragment Catalog on Query { gpuTypes(input: {id: "NVIDIA GeForce RTX 4090"}) { id } cpuTypes { id } }',
          operationName: 'Both',
        },
        null,
      )
      expect(both.__typename).toBe('Query')
      expect(both.gpuTypes).toEqual([{ id: 'NVIDIA GeForce RTX 4090' }])
      const schema = await ok({ query: '{ __schema { queryType { name } } }' }, null)
      expect(schema).toEqual({ __schema: { queryType: { name: 'Query' } } })
      // GET works the same way.
      const get = await fetch(
        `${platform.url}/graphql?query=${encodeURIComponent('{ cpuTypes { id } }')}`,
      )
      expect(get.status).toBe(200)
    })

    it('answers 401 for anything else, even mixed with a public field', async () => {
      for (const body of [
        { query: '{ myself { id } }' },
        { query: '{ gpuTypes { id } myself { id } }' },
        { query: '{ gpuTypes { id } ...M } fragment M on Query { myself { id } }' },
        { query: '{ serverlessGpuPools { id } }' },
        { query: '{ dataCenters { id } myself { id } }' },
        { query: 'mutation { podTerminate(input: {podId: "x"}) }' },
        { query: 'query A { gpuTypes { id } } query B { myself { id } }', operationName: 'B' },
        { query: 'query A { gpuTypes { id } } query B { cpuTypes { id } }' },
        { query: '{ gpuTypes { id ' },
      ]) {
        const result = await post(body, null)
        expect(result.status, JSON.stringify(body)).toBe(401)
        expect(result.body.errors[0].extensions.code).toBe('UNAUTHENTICATED')
      }
    })

    it('still answers 401 for an invalid key, even on a public query', async () => {
      const result = await post({ query: '{ gpuTypes { id } }' }, `pyd_${'n'.repeat(40)}`)
      expect(result.status).toBe(401)
      const empty = await post({ query: '{ gpuTypes { id } }' }, null, '?api_key=')
      expect(empty.status).toBe(401)
    })
  })
})
