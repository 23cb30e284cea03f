import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  TEST_ADMIN_KEY,
  otherAccountKey,
  startTestPlatform,
  type TestPlatform,
} from '../support/platform.js'

/**
 * Serverless endpoints over GraphQL with the documents RunPod's clients send (wire-compat §6.2,
 * §6.3): runpod-python's create_endpoint and update_endpoint_template inline every value;
 * runpodctl-style documents use variables. An endpoint saved here is the same one REST serves.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

/** runpod-python's saveEndpoint selection (generate_endpoint_mutation). */
const PYTHON_SELECTION =
  'id name templateId gpuIds networkVolumeId locations idleTimeout scalerType scalerValue workersMin workersMax'
/** The union of the clients' saveEndpoint selections (wire-compat §6.3). */
const SAVE_SELECTION =
  'id name templateId gpuIds gpuCount instanceIds computeType networkVolumeId networkVolumeIds { networkVolumeId dataCenterId } locations idleTimeout scalerType scalerValue workersMin workersMax allowedCudaVersions minCudaVersion executionTimeoutMs flashBootType modelReferences userId'
/** `myself { endpoints { ... } }` as wire-compat §6.2 lists it. */
const MYSELF_SELECTION =
  'aiKey gpuIds id idleTimeout name networkVolumeId locations scalerType scalerValue templateId type userId version workersMax workersMin workersStandby gpuCount env { key value } createdAt networkVolume { id dataCenterId }'

/** What runpod-python's generate_endpoint_mutation sends, its defaults included. */
function pythonCreate(fields: {
  name: string
  templateId: string
  gpuIds?: string
  networkVolumeId?: string
  locations?: string
}): string {
  const input = [
    `name: "${fields.name}"`,
    `templateId: "${fields.templateId}"`,
    `gpuIds: "${fields.gpuIds ?? 'AMPERE_16'}"`,
    `networkVolumeId: "${fields.networkVolumeId ?? ''}"`,
    `locations: "${fields.locations ?? ''}"`,
    'idleTimeout: 5',
    'scalerType: "QUEUE_DELAY"',
    'scalerValue: 4',
    'workersMin: 0',
    'workersMax: 3',
  ].join(', ')
  return `mutation { saveEndpoint( input: { ${input} } ) { ${PYTHON_SELECTION} } }`
}

describe('GraphQL endpoints', () => {
  let platform: TestPlatform
  let otherKey: string
  let templateId: string
  let otherTemplateId: string
  let adminAccountId: string

  async function post(body: unknown, key: string = TEST_ADMIN_KEY) {
    const response = await fetch(`${platform.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify(body),
    })
    return { status: response.status, body: (await response.json()) as Json }
  }

  async function ok(body: Record<string, unknown>, key?: string): Promise<Json> {
    const result = await post(body, key)
    expect(result.status, JSON.stringify(result.body)).toBe(200)
    expect(result.body.errors, JSON.stringify(result.body.errors)).toBeUndefined()
    return result.body.data
  }

  /** A domain error: HTTP 200, one error with the code, the mutation's data null. */
  async function fails(body: Record<string, unknown>, field: string, code: string) {
    const result = await post(body)
    expect(result.status).toBe(200)
    expect(result.body.errors).toHaveLength(1)
    expect(result.body.errors[0].extensions.code).toBe(code)
    expect(result.body.errors[0].path).toEqual([field])
    expect(result.body.data).toEqual({ [field]: null })
    return result.body.errors[0].message as string
  }

  async function createTemplate(name: string, env: Record<string, string> = {}) {
    const response = await platform.call('/v2/templates', {
      method: 'POST',
      json: { name, image: 'busybox:latest', env, serverless: true },
    })
    expect(response.status).toBe(201)
    return ((await response.json()) as Json).id as string
  }

  beforeAll(async () => {
    platform = await startTestPlatform()
    otherKey = await otherAccountKey(platform, 'endpoints-other@example.com')
    templateId = await createTemplate('worker-v1', { MODE: 'one' })
    otherTemplateId = await createTemplate('worker-v2', { MODE: 'two' })
    adminAccountId = ((await (await platform.call('/v2/account')).json()) as Json).id
  })

  afterAll(async () => {
    await platform?.close()
  })

  it('creates an endpoint as runpod-python does, the same endpoint over REST', async () => {
    const data = await ok({
      query: pythonCreate({ name: 'py-endpoint', templateId, gpuIds: 'AMPERE_16,ADA_24' }),
    })
    const saved = data.saveEndpoint
    expect(saved).toEqual({
      id: expect.stringMatching(/^[a-z0-9]{14}$/),
      name: 'py-endpoint',
      templateId,
      gpuIds: 'AMPERE_16,ADA_24',
      networkVolumeId: null,
      locations: '',
      idleTimeout: 5,
      scalerType: 'QUEUE_DELAY',
      scalerValue: 4,
      workersMin: 0,
      workersMax: 3,
    })
    const rest = (await (await platform.call(`/v2/serverless/${saved.id}`)).json()) as Json
    expect(rest).toMatchObject({
      id: saved.id,
      name: 'py-endpoint',
      templateId,
      image: 'busybox:latest',
      env: { MODE: 'one' },
      gpu: { pools: ['AMPERE_16', 'ADA_24'], count: 1 },
      workers: { min: 0, max: 3, idleTimeout: 5 },
      scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
    })
  })

  it('answers every field of the clients saveEndpoint selection, with variables', async () => {
    const volume = (await (
      await platform.call('/v2/network-volumes', {
        method: 'POST',
        json: { name: 'models', size: 10, dataCenterId: 'EU-RO-1' },
      })
    ).json()) as Json
    const data = await ok({
      query: `mutation save($input: EndpointInput!) { saveEndpoint(input: $input) { ${SAVE_SELECTION} } }`,
      variables: {
        input: {
          name: 'vars-endpoint',
          templateId,
          gpuIds: 'AMPERE_24,-NVIDIA L4',
          gpuCount: 2,
          workersMin: 0,
          workersMax: 5,
          locations: 'EU',
          networkVolumeIds: [{ networkVolumeId: volume.id }],
          idleTimeout: 30,
          scalerType: 'REQUEST_COUNT',
          scalerValue: 2,
          executionTimeoutMs: 60000,
          allowedCudaVersions: ['12.4,12.6'],
          flashBootType: 'FLASHBOOT',
          type: 'QB',
        },
      },
    })
    expect(data.saveEndpoint).toEqual({
      id: expect.any(String),
      name: 'vars-endpoint',
      templateId,
      gpuIds: 'AMPERE_24,-NVIDIA L4',
      gpuCount: 2,
      instanceIds: [],
      computeType: 'GPU',
      networkVolumeId: volume.id,
      networkVolumeIds: [{ networkVolumeId: volume.id, dataCenterId: 'EU-RO-1' }],
      locations: 'EU-RO-1',
      idleTimeout: 30,
      scalerType: 'REQUEST_COUNT',
      scalerValue: 2,
      workersMin: 0,
      workersMax: 5,
      allowedCudaVersions: '12.4,12.6',
      minCudaVersion: null,
      executionTimeoutMs: 60000,
      flashBootType: 'FLASHBOOT',
      modelReferences: [],
      userId: adminAccountId,
    })
  })

  it('takes a GPU type id in gpuIds as that type alone, and CPU instance ids', async () => {
    const gpu = await ok({
      query: pythonCreate({ name: 'one-type', templateId, gpuIds: 'NVIDIA L4' }),
    })
    const rest = (await (
      await platform.call(`/v2/serverless/${gpu.saveEndpoint.id}`)
    ).json()) as Json
    expect(rest.gpu.pools).toEqual(['AMPERE_24'])
    expect(rest.gpu.excludedTypes.sort()).toEqual(['NVIDIA GeForce RTX 3090', 'NVIDIA RTX A5000'])

    const cpu = await ok({
      query: `mutation { saveEndpoint(input: { name: "cpu-endpoint", templateId: "${templateId}", instanceIds: ["cpu3c-2-4"] }) { id computeType gpuIds instanceIds } }`,
    })
    expect(cpu.saveEndpoint).toMatchObject({
      computeType: 'CPU',
      gpuIds: null,
      instanceIds: ['cpu3c-2-4'],
    })
  })

  it('creates an endpoint from an inline template', async () => {
    const data = await ok({
      query: `mutation { saveEndpoint(input: { name: "inline", gpuIds: "AMPERE_24", template: { name: "inline", imageName: "alpine:3", containerDiskInGb: 7, dockerArgs: "sleep 1", env: [{ key: "A", value: "1" }] } }) { id templateId env { key value } } }`,
    })
    expect(data.saveEndpoint.templateId).toBeNull()
    expect(data.saveEndpoint.env).toEqual([{ key: 'A', value: '1' }])
    const rest = (await (
      await platform.call(`/v2/serverless/${data.saveEndpoint.id}`)
    ).json()) as Json
    expect(rest).toMatchObject({ image: 'alpine:3', disk: 7, args: 'sleep 1', env: { A: '1' } })
  })

  it('replaces the whole endpoint when the input has an id', async () => {
    const created = (
      await ok({
        query: `mutation { saveEndpoint(input: { name: "to-replace", templateId: "${templateId}", gpuIds: "AMPERE_16", workersMax: 7, idleTimeout: 40, executionTimeoutMs: 60000 }) { id } }`,
      })
    ).saveEndpoint.id
    const replaced = await ok({
      query: `mutation { saveEndpoint(input: { id: "${created}", name: "replaced", templateId: "${templateId}", gpuIds: "ADA_24" }) { id name gpuIds workersMax idleTimeout executionTimeoutMs } }`,
    })
    // Left out = the create defaults again, not the old values.
    expect(replaced.saveEndpoint).toEqual({
      id: created,
      name: 'replaced',
      gpuIds: 'ADA_24',
      workersMax: 3,
      idleTimeout: 10,
      executionTimeoutMs: 300000,
    })
  })

  it('moves an endpoint to another template as runpod-python does', async () => {
    const created = await ok({ query: pythonCreate({ name: 'template-move', templateId }) })
    const id = created.saveEndpoint.id
    const data = await ok({
      query: `mutation { updateEndpointTemplate(input: {templateId: "${otherTemplateId}", endpointId: "${id}"}) { id templateId } }`,
    })
    expect(data.updateEndpointTemplate).toEqual({ id, templateId: otherTemplateId })
    const rest = (await (await platform.call(`/v2/serverless/${id}`)).json()) as Json
    expect(rest.env).toEqual({ MODE: 'two' })
    expect(rest.version).toBe(2)
  })

  it('lists the account endpoints under myself with every field the clients read', async () => {
    const data = await ok({ query: `query { myself { endpoints { ${MYSELF_SELECTION} } } }` })
    const endpoints = data.myself.endpoints as Json[]
    expect(endpoints.length).toBeGreaterThanOrEqual(2)
    const python = endpoints.find((e) => e.name === 'py-endpoint')
    expect(python).toMatchObject({
      gpuIds: 'AMPERE_16,ADA_24',
      type: 'QB',
      userId: adminAccountId,
      version: 1,
      workersMin: 0,
      workersStandby: 0,
      gpuCount: 1,
      env: [{ key: 'MODE', value: 'one' }],
      networkVolume: null,
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    })
    const workerKey = (await (
      await platform.call(`/v2/serverless/${python.id}/worker-key`)
    ).json()) as Json
    expect(python.aiKey).toBe(workerKey.workerKey)
    expect(python.aiKey).toMatch(/^pydw_/)
    const other = await ok({ query: 'query { myself { endpoints { id } } }' }, otherKey)
    expect(other.myself.endpoints).toEqual([])
  })

  it('deletes an endpoint; another account cannot see or delete it', async () => {
    const created = await ok({ query: pythonCreate({ name: 'to-delete', templateId }) })
    const id = created.saveEndpoint.id
    const foreign = await post({ query: `mutation { deleteEndpoint(id: "${id}") }` }, otherKey)
    expect(foreign.body.errors[0].extensions.code).toBe('NOT_FOUND')
    const foreignReplace = await post(
      {
        query: `mutation { saveEndpoint(input: { id: "${id}", name: "x", templateId: "${templateId}" }) { id } }`,
      },
      otherKey,
    )
    expect(foreignReplace.body.errors[0].extensions.code).toBe('NOT_FOUND')
    expect(await ok({ query: `mutation { deleteEndpoint(id: "${id}") }` })).toEqual({
      deleteEndpoint: true,
    })
    expect((await platform.call(`/v2/serverless/${id}`)).status).toBe(404)
  })

  it('answers bad input with errors a person can act on', async () => {
    const unknownPool = await fails(
      { query: pythonCreate({ name: 'bad', templateId, gpuIds: 'AMPERE_99' }) },
      'saveEndpoint',
      'VALIDATION_FAILED',
    )
    expect(unknownPool).toContain('input.gpuIds: "AMPERE_99" is neither')
    const place = await fails(
      { query: pythonCreate({ name: 'bad', templateId, locations: 'MARS' }) },
      'saveEndpoint',
      'VALIDATION_FAILED',
    )
    expect(place).toContain('input.locations: "MARS"')
    const template = await fails(
      { query: pythonCreate({ name: 'bad', templateId: 'nosuchtemplate' }) },
      'saveEndpoint',
      'NOT_FOUND',
    )
    expect(template).toContain('template "nosuchtemplate" not found')
    const scaler = await fails(
      {
        query: `mutation { saveEndpoint(input: { name: "bad", templateId: "${templateId}", scalerType: "FASTEST" }) { id } }`,
      },
      'saveEndpoint',
      'VALIDATION_FAILED',
    )
    expect(scaler).toContain('input.scalerType')
    const workers = await fails(
      {
        query: `mutation { saveEndpoint(input: { name: "bad", templateId: "${templateId}", workersMin: 4, workersMax: 2 }) { id } }`,
      },
      'saveEndpoint',
      'RULE_CONFLICT',
    )
    expect(workers).toContain('workers.max (2) must be at least workers.min (4)')
    const hub = await fails(
      { query: `mutation { saveEndpoint(input: { name: "bad", hubReleaseId: "r1" }) { id } }` },
      'saveEndpoint',
      'VALIDATION_FAILED',
    )
    expect(hub).toContain('input.hubReleaseId')
  })

  it('refuses endpoint mutations with a read-only key', async () => {
    const response = await platform.call('/v2/account/api-keys', {
      method: 'POST',
      json: { name: 'reader', permission: 'READ_ONLY' },
    })
    const reader = ((await response.json()) as Json).key as string
    const result = await post({ query: pythonCreate({ name: 'ro', templateId }) }, reader)
    expect(result.body.errors[0].extensions.code).toBe('FORBIDDEN')
    // A worker key takes jobs: a read-only key may list endpoints but not read their keys.
    const listed = await ok({ query: 'query { myself { endpoints { id aiKey } } }' }, reader)
    expect(listed.myself.endpoints.length).toBeGreaterThan(0)
    for (const endpoint of listed.myself.endpoints) expect(endpoint.aiKey).toBeNull()
  })
})
