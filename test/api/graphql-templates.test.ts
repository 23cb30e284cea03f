import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  TEST_ADMIN_KEY,
  otherAccountKey,
  startTestPlatform,
  type TestPlatform,
} from '../support/platform.js'

/**
 * Templates over GraphQL with the documents RunPod's clients send (wire-compat §6.2, §6.3):
 * runpod-python's create_template inlines every value; runpodctl-style documents use variables.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

/** runpod-python's saveTemplate selection. */
const PYTHON_SELECTION =
  'id name imageName dockerArgs containerDiskInGb volumeInGb volumeMountPath ports env { key value } isServerless'
/** The union of the clients' saveTemplate selections (wire-compat §6.3). */
const SAVE_SELECTION =
  'id name imageName dockerArgs containerDiskInGb volumeInGb volumeMountPath ports env { key value } isServerless advancedStart readme startJupyter startScript startSsh'
/** `myself { podTemplates { ... } }` as wire-compat §6.2 lists it. */
const MYSELF_SELECTION =
  'id name imageName dockerArgs env { key value } ports volumeMountPath volumeInGb containerDiskInGb containerRegistryAuthId startJupyter startSsh startScript isServerless isPublic readme advancedStart category'

/** What runpod-python's generate_pod_template sends for create_template(name, image_name, ...). */
function pythonCreate(fields: {
  name: string
  imageName: string
  dockerArgs?: string
  containerDiskInGb?: number
  volumeInGb?: number
  volumeMountPath?: string
  ports?: string
  env?: Record<string, string>
  isServerless?: boolean
  registryAuthId?: string
}): string {
  const env = Object.entries(fields.env ?? {})
    .map(([key, value]) => `{ key: "${key}", value: "${value}" }`)
    .join(', ')
  const input = [
    `name: "${fields.name}"`,
    `imageName: "${fields.imageName}"`,
    `dockerArgs: "${fields.dockerArgs ?? ''}"`,
    `containerDiskInGb: ${fields.containerDiskInGb ?? 10}`,
    `volumeInGb: ${fields.volumeInGb ?? 0}`,
    ...(fields.volumeMountPath ? [`volumeMountPath: "${fields.volumeMountPath}"`] : []),
    `ports: "${fields.ports ?? ''}"`,
    `env: [${env}]`,
    `isServerless: ${fields.isServerless ?? false}`,
    `containerRegistryAuthId : "${fields.registryAuthId ?? ''}"`,
    'startSsh: true',
    'isPublic: false',
    'readme: ""',
  ].join(', ')
  return `mutation { saveTemplate( input: { ${input} } ) { ${PYTHON_SELECTION} } }`
}

describe('GraphQL templates', () => {
  let platform: TestPlatform
  let otherKey: string

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

  /** A domain error: HTTP 200, `errors[0]` with path and code, the field null (wire-compat §6.1). */
  async function fails(body: Record<string, unknown>, field: string, key?: string) {
    const result = await post(body, key)
    expect(result.status, JSON.stringify(result.body)).toBe(200)
    expect(result.body.data).toEqual({ [field]: null })
    expect(result.body.errors).toHaveLength(1)
    const [error] = result.body.errors
    expect(error.path).toEqual([field])
    return error as { message: string; extensions: { code: string; errors?: string[] } }
  }

  beforeAll(async () => {
    platform = await startTestPlatform()
    otherKey = await otherAccountKey(platform, 'templates-other@example.com')
  })
  afterAll(() => platform.close())

  it('creates a template as runpod-python`s create_template sends it, visible over REST', async () => {
    const data = await ok({
      query: pythonCreate({
        name: 'py-template',
        imageName: 'runpod/base:0.1.0',
        dockerArgs: 'python -m http.server 8888',
        containerDiskInGb: 20,
        volumeInGb: 15,
        volumeMountPath: '/data',
        ports: '8888/http,22/tcp',
        env: { MODEL: 'llama', EMPTY: '' },
      }),
    })
    expect(data.saveTemplate).toEqual({
      id: expect.stringMatching(/^[a-z0-9]+$/),
      name: 'py-template',
      imageName: 'runpod/base:0.1.0',
      dockerArgs: 'python -m http.server 8888',
      containerDiskInGb: 20,
      volumeInGb: 15,
      volumeMountPath: '/data',
      ports: '8888/http,22/tcp',
      env: [
        { key: 'MODEL', value: 'llama' },
        { key: 'EMPTY', value: '' },
      ],
      isServerless: false,
    })
    const rest = (await (
      await platform.call(`/v2/templates/${data.saveTemplate.id}`)
    ).json()) as Json
    expect(rest).toMatchObject({
      name: 'py-template',
      image: 'runpod/base:0.1.0',
      args: 'python -m http.server 8888',
      disk: 20,
      mounts: { persistent: { size: 15, path: '/data' } },
      ports: ['8888/http', '22/tcp'],
      env: { MODEL: 'llama', EMPTY: '' },
      registry: null,
      startSsh: true,
      public: false,
    })
  })

  it('treats volumeInGb 0 as no volume and "" as no registry, and answers every saveTemplate field', async () => {
    const data = await ok({
      query: `mutation saveTemplate($input: SaveTemplateInput) { saveTemplate(input: $input) { ${SAVE_SELECTION} } }`,
      variables: {
        input: {
          name: 'no-volume',
          imageName: 'ubuntu:22.04',
          dockerArgs: '',
          containerDiskInGb: 5,
          volumeInGb: 0,
          volumeMountPath: '/workspace',
          ports: '',
          env: [],
          isServerless: true,
          containerRegistryAuthId: '',
          startSsh: false,
          startJupyter: false,
          startScript: '',
          readme: '',
          advancedStart: false,
          portsConfig: [],
        },
      },
    })
    expect(data.saveTemplate).toEqual({
      id: expect.any(String),
      name: 'no-volume',
      imageName: 'ubuntu:22.04',
      dockerArgs: '',
      containerDiskInGb: 5,
      volumeInGb: 0,
      volumeMountPath: null,
      ports: '',
      env: [],
      isServerless: true,
      advancedStart: false,
      readme: '',
      startJupyter: false,
      startScript: null,
      startSsh: false,
    })
  })

  it('updates only the fields given when id is given, and reads back through podTemplate and myself', async () => {
    const created = (
      await ok({
        query: pythonCreate({
          name: 'to-update',
          imageName: 'ubuntu:22.04',
          volumeInGb: 20,
          volumeMountPath: '/data',
          ports: '8888/http',
          env: { A: '1' },
        }),
      })
    ).saveTemplate
    const updated = (
      await ok({
        query: `mutation { saveTemplate(input: {id: "${created.id}", imageName: "ubuntu:24.04", ports: "8888/http, 22/tcp", volumeMountPath: "/workspace", category: "CPU"}) { ${SAVE_SELECTION} } }`,
      })
    ).saveTemplate
    expect(updated).toMatchObject({
      id: created.id,
      name: 'to-update',
      imageName: 'ubuntu:24.04',
      ports: '8888/http,22/tcp',
      // The path moved; the size stayed.
      volumeInGb: 20,
      volumeMountPath: '/workspace',
      env: [{ key: 'A', value: '1' }],
    })

    const one = await ok({
      query: `query getPodTemplate($id: String) { podTemplate(id: $id) { id name imageName isServerless isPublic isRunpod category containerDiskInGb volumeInGb volumeMountPath ports portsConfig { port name } env { key value } containerRegistryAuthId readme } }`,
      variables: { id: created.id },
    })
    expect(one.podTemplate).toEqual({
      id: created.id,
      name: 'to-update',
      imageName: 'ubuntu:24.04',
      isServerless: false,
      isPublic: false,
      isRunpod: false,
      category: 'CPU',
      containerDiskInGb: 10,
      volumeInGb: 20,
      volumeMountPath: '/workspace',
      ports: '8888/http,22/tcp',
      portsConfig: [
        { port: '8888', name: null },
        { port: '22', name: null },
      ],
      env: [{ key: 'A', value: '1' }],
      containerRegistryAuthId: null,
      readme: '',
    })

    const mine = await ok({ query: `query { myself { podTemplates { ${MYSELF_SELECTION} } } }` })
    expect(mine.myself.podTemplates).toContainEqual({
      id: created.id,
      name: 'to-update',
      imageName: 'ubuntu:24.04',
      dockerArgs: '',
      env: [{ key: 'A', value: '1' }],
      ports: '8888/http,22/tcp',
      volumeMountPath: '/workspace',
      volumeInGb: 20,
      containerDiskInGb: 10,
      containerRegistryAuthId: null,
      startJupyter: true,
      startSsh: true,
      startScript: null,
      isServerless: false,
      isPublic: false,
      readme: '',
      advancedStart: false,
      category: 'CPU',
    })

    // volumeInGb 0 on an update removes the volume.
    const dropped = await ok({
      query: `mutation { saveTemplate(input: {id: "${created.id}", volumeInGb: 0}) { volumeInGb volumeMountPath } }`,
    })
    expect(dropped.saveTemplate).toEqual({ volumeInGb: 0, volumeMountPath: null })
  })

  it('reads a built-in template by id', async () => {
    const data = await ok({
      query: 'query { podTemplate(id: "runpod-ubuntu") { id isRunpod imageName } }',
    })
    expect(data.podTemplate).toMatchObject({ id: 'runpod-ubuntu', isRunpod: true })
  })

  it('names the GraphQL fields of invalid input', async () => {
    const error = await fails(
      {
        query:
          'mutation { saveTemplate(input: {name: "bad", imageName: "x", ports: "8888/ftp", env: [{key: "1BAD", value: "v"}], volumeInGb: 5, volumeMountPath: "data", category: "TPU", containerDiskInGb: 0}) { id } }',
      },
      'saveTemplate',
    )
    expect(error.extensions.code).toBe('VALIDATION_FAILED')
    for (const field of [
      'input.ports',
      'input.env',
      'input.volumeInGb',
      'input.volumeMountPath',
      'input.category',
      'input.containerDiskInGb',
    ]) {
      expect(error.message).toContain(field)
    }
    const missing = await fails(
      { query: 'mutation { saveTemplate(input: {dockerArgs: ""}) { id } }' },
      'saveTemplate',
    )
    expect(missing.message).toBe(
      'the request failed validation: input.name: is required; input.imageName: is required',
    )
    const script = await fails(
      {
        query:
          'mutation { saveTemplate(input: {name: "s", imageName: "x", startScript: "echo hi"}) { id } }',
      },
      'saveTemplate',
    )
    expect(script.message).toContain('input.startScript: is not offered')
    const noInput = await fails(
      {
        query: 'mutation s($input: SaveTemplateInput) { saveTemplate(input: $input) { id } }',
        variables: null,
      },
      'saveTemplate',
    )
    expect(noInput.message).toContain('input: is required')
  })

  it('refuses a second template with the same name, and an unknown registry', async () => {
    await ok({ query: pythonCreate({ name: 'dup', imageName: 'ubuntu' }) })
    const dup = await fails(
      { query: pythonCreate({ name: 'dup', imageName: 'ubuntu' }) },
      'saveTemplate',
    )
    expect(dup.extensions.code).toBe('RULE_CONFLICT')
    expect(dup.message).toMatch(/^a template named "dup" already exists/)
    const registry = await fails(
      { query: pythonCreate({ name: 'reg', imageName: 'ubuntu', registryAuthId: 'clnope' }) },
      'saveTemplate',
    )
    expect(registry).toMatchObject({
      message: 'registry "clnope" not found',
      extensions: { code: 'RULE_CONFLICT' },
    })
  })

  it('hides another account`s template: podTemplate, update and delete are NOT_FOUND', async () => {
    const theirs = (
      await ok({ query: pythonCreate({ name: 'theirs', imageName: 'ubuntu' }) }, otherKey)
    ).saveTemplate
    const read = await fails({ query: `{ podTemplate(id: "${theirs.id}") { id } }` }, 'podTemplate')
    expect(read).toMatchObject({
      message: `template ${theirs.id} not found`,
      extensions: { code: 'NOT_FOUND' },
    })
    const update = await fails(
      { query: `mutation { saveTemplate(input: {id: "${theirs.id}", name: "mine now"}) { id } }` },
      'saveTemplate',
    )
    expect(update.extensions.code).toBe('NOT_FOUND')
    const remove = await fails(
      { query: 'mutation { deleteTemplate(templateName: "theirs") }' },
      'deleteTemplate',
    )
    expect(remove).toMatchObject({
      message: 'no template of yours is named "theirs"',
      extensions: { code: 'NOT_FOUND' },
    })
    const builtin = await fails(
      { query: 'mutation { saveTemplate(input: {id: "runpod-ubuntu", name: "x"}) { id } }' },
      'saveTemplate',
    )
    expect(builtin.extensions.code).toBe('FORBIDDEN')
    // Still there for its owner.
    expect(
      (await ok({ query: `{ podTemplate(id: "${theirs.id}") { name } }` }, otherKey)).podTemplate,
    ).toEqual({ name: 'theirs' })
  })

  it('deletes by name; a template in use is refused with the domain`s message', async () => {
    const template = (
      await ok({
        query: pythonCreate({
          name: 'in-use',
          imageName: 'ubuntu',
          dockerArgs: 'sleep 600',
          isServerless: true,
        }),
      })
    ).saveTemplate
    // Pods keep no link to their template; an endpoint does.
    const created = await platform.call('/v2/serverless', {
      method: 'POST',
      json: { name: 'user', templateId: template.id, gpu: { pools: ['ADA_24'] } },
    })
    expect(created.status, await created.clone().text()).toBe(201)
    const endpoint = (await created.json()) as { id: string }
    try {
      const refused = await fails(
        { query: 'mutation deleteTemplate { deleteTemplate(templateName: "in-use") }' },
        'deleteTemplate',
      )
      expect(refused).toMatchObject({
        message: expect.stringMatching(
          new RegExp(`^template ${template.id} is in use by endpoint ${endpoint.id}`),
        ),
        extensions: { code: 'RULE_CONFLICT' },
      })
    } finally {
      await platform.call(`/v2/serverless/${endpoint.id}`, { method: 'DELETE' })
    }
    const done = await ok({
      query: 'mutation deleteTemplate($name: String) { deleteTemplate(templateName: $name) }',
      variables: { name: 'in-use' },
    })
    expect(done).toEqual({ deleteTemplate: true })
    expect((await platform.call(`/v2/templates/${template.id}`)).status).toBe(404)
  })

  it('refuses template mutations with a read-only key', async () => {
    const created = await platform.call('/v2/account/api-keys', {
      method: 'POST',
      json: { name: 'ro', permission: 'READ_ONLY' },
    })
    const { key } = (await created.json()) as { key: string }
    const error = await fails(
      { query: pythonCreate({ name: 'ro', imageName: 'ubuntu' }) },
      'saveTemplate',
      key,
    )
    expect(error.extensions.code).toBe('FORBIDDEN')
  })
})
