import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { measureOpenAPI } from '../support/openapi-quality.js'
import { startTestPlatform, type TestPlatform } from '../support/platform.js'

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020

interface Operation {
  operationId?: string
  summary?: string
  tags?: string[]
  requestBody?: { content: Record<string, { schema: unknown }> }
  responses: Record<string, { content?: Record<string, { schema: unknown }> }>
}
interface OpenAPIDocument {
  servers?: Array<{ url: string; variables?: Record<string, { default: string }> }>
  tags: Array<{ name: string }>
  paths: Record<string, Record<string, Operation>>
  components: {
    schemas: Record<string, unknown>
    responses: Record<string, { content?: Record<string, { schema: unknown }> }>
    parameters: Record<string, unknown>
  }
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch']

describe('the OpenAPI document', () => {
  let platform: TestPlatform
  let document: OpenAPIDocument
  const operations: Array<{ method: string; path: string; operation: Operation }> = []

  beforeAll(async () => {
    platform = await startTestPlatform()
    document = (await (
      await platform.call('/v2/openapi.json', { key: null })
    ).json()) as OpenAPIDocument
    for (const [path, item] of Object.entries(document.paths)) {
      for (const method of METHODS) {
        const operation = item[method]
        if (operation) operations.push({ method, path, operation })
      }
    }
  })
  afterAll(() => platform.close())

  it('names, summarizes and tags every operation, with tags it declares', () => {
    const declared = new Set(document.tags.map((t) => t.name))
    const ids = operations.map(({ operation }) => operation.operationId)
    expect(ids.filter((id) => id === undefined)).toEqual([])
    expect(new Set(ids).size).toBe(ids.length)
    for (const { method, path, operation } of operations) {
      const where = `${method} ${path}`
      expect(operation.summary, where).toMatch(/\S/)
      expect(operation.tags?.length, where).toBeGreaterThan(0)
      for (const tag of operation.tags!) expect(declared, where).toContain(tag)
    }
  })

  it('starts with a server URL clients can fetch, then one to fill in; the docs page adds its own', async () => {
    const [fixed, variable] = document.servers!
    // Node's fetch takes it as a base URL (it refused the '/' of before).
    expect(new URL('/v2/pods', fixed!.url).href).toBe('http://localhost:8080/v2/pods')
    expect(variable!.url).toBe('{baseUrl}')
    expect(variable!.variables!.baseUrl!.default).toBe(fixed!.url)
    const page = (await (await platform.call('/v2/docs/json', { key: null })).json()) as {
      servers: Array<{ url: string }>
    }
    expect(page.servers.map((server) => server.url)).toEqual(['/', fixed!.url, '{baseUrl}'])
  })

  it('keeps what client generators need at its target, for every route, new ones too', () => {
    const quality = measureOpenAPI(document as unknown as Record<string, unknown>)
    expect(quality.operations).toBeGreaterThan(100)
    expect({
      operationsWithoutDescription: quality.operationsWithoutDescription,
      defaultResponseDescriptions: quality.defaultResponseDescriptions,
      inlineRequestBodies: quality.inlineRequestBodies,
      inlineSuccessBodies: quality.inlineSuccessBodies,
      inlineErrorResponses: quality.inlineErrorResponses,
      anonymousNestedObjects: quality.anonymousNestedObjects,
      anyOfOfConstants: quality.anyOfOfConstants,
      requestsWithoutExample: quality.requestsWithoutExample,
      answersWithoutExample: quality.answersWithoutExample,
    }).toEqual({
      operationsWithoutDescription: [],
      defaultResponseDescriptions: 0,
      inlineRequestBodies: [],
      inlineSuccessBodies: [],
      inlineErrorResponses: 0,
      anonymousNestedObjects: [],
      anyOfOfConstants: 0,
      requestsWithoutExample: [],
      answersWithoutExample: [],
    })
    // The errors and path parameters are shared: one NotFound, one `id` parameter.
    expect(Object.keys(document.components.responses)).toEqual(
      expect.arrayContaining(['BadRequest', 'Unauthorized', 'NotFound', 'TooManyRequests']),
    )
    expect(JSON.stringify(document.paths)).not.toContain('"Default Response"')
  })

  it('names the query parameters operations share once, under components.parameters', () => {
    const inline = new Map<string, string[]>()
    for (const { method, path, operation } of operations) {
      const parameters = (operation as { parameters?: Array<Record<string, unknown>> }).parameters
      for (const parameter of parameters ?? []) {
        if (parameter.$ref !== undefined || parameter.in !== 'query') continue
        const text = JSON.stringify(parameter)
        inline.set(text, [...(inline.get(text) ?? []), `${method} ${path}`])
      }
    }
    // A parameter written out in place is one operation's own.
    expect([...inline.values()].filter((where) => where.length > 1)).toEqual([])
    expect(Object.keys(document.components.parameters)).toEqual(
      expect.arrayContaining(['WaitQuery', 'StartTimeQuery', 'EndTimeQuery', 'BucketSizeQuery']),
    )
  })

  it('measures what it claims: an inline body, a bare answer and a union of constants count', () => {
    const bad = {
      paths: {
        '/x': {
          post: {
            requestBody: {
              content: { 'application/json': { schema: { type: 'object', properties: {} } } },
            },
            responses: {
              '200': {
                description: 'Default Response',
                content: {
                  'application/json': {
                    schema: {
                      type: 'object',
                      properties: {
                        kind: { anyOf: [{ const: 'a' }, { type: 'string', enum: ['b'] }] },
                      },
                    },
                  },
                },
              },
              '404': { description: 'not found' },
            },
          },
        },
      },
      components: {
        schemas: {
          Thing: {
            type: 'object',
            properties: { inner: { type: 'object', properties: { a: { type: 'string' } } } },
          },
        },
      },
    }
    const quality = measureOpenAPI(bad)
    expect(quality.operationsWithoutDescription).toEqual(['POST /x'])
    expect(quality.defaultResponseDescriptions).toBe(1)
    expect(quality.inlineRequestBodies).toEqual(['POST /x'])
    expect(quality.inlineSuccessBodies).toEqual(['POST /x 200'])
    expect(quality.inlineErrorResponses).toBe(1)
    expect(quality.anonymousNestedObjects).toEqual(['Thing: a'])
    expect(quality.anyOfOfConstants).toBe(1)
    expect(quality.requestsWithoutExample).toEqual(['POST /x'])
    expect(quality.answersWithoutExample).toEqual(['POST /x'])
  })

  it('writes unions of single values as plain enums and the image-or-template rule as schema', () => {
    const schemas = document.components.schemas as Record<string, Record<string, unknown>>
    const status = (schemas.Pod!.properties as Record<string, Record<string, unknown>>).status!
    expect(status.anyOf).toBeUndefined()
    expect(status.enum).toEqual(expect.arrayContaining(['RUNNING', 'EXITED', 'TERMINATED']))
    const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }))
    ajv.addSchema({ $id: 'podyard', components: document.components })
    for (const name of ['PodCreateInput', 'EndpointCreateInput']) {
      const validate = ajv.compile({ $ref: `podyard#/components/schemas/${name}` })
      const base = {
        name: 'x',
        ...(name === 'PodCreateInput' ? {} : { gpu: { pools: ['ADA_24'] } }),
      }
      expect(validate({ ...base, image: 'worker:1' }), name).toBe(true)
      expect(validate({ ...base, templateId: 't1' }), name).toBe(true)
      expect(validate(base), `${name} without image or template`).toBe(false)
    }
    const endpoint = ajv.getSchema('podyard#/components/schemas/EndpointCreateInput')!
    expect(endpoint({ name: 'x', image: 'worker:1', templateId: 't1' })).toBe(false)
  })

  it('gives every operation a success answer with its content, but the routes not offered', () => {
    for (const { method, path, operation } of operations) {
      const codes = Object.keys(operation.responses)
      if (codes.every((code) => !code.startsWith('2'))) {
        expect(codes, `${method} ${path}`).toContain('501')
        continue
      }
      const success = codes.filter((code) => code.startsWith('2'))
      const described = success.some(
        (code) => code === '204' || operation.responses[code]!.content !== undefined,
      )
      expect(described, `${method} ${path}`).toBe(true)
    }
  })

  it('shows the bodies clients send to the job API, the worker protocol and the REST API', () => {
    const bodyOf = (path: string, method = 'post') =>
      document.paths[path]?.[method]?.requestBody?.content['application/json']?.schema
    expect(bodyOf('/v2/{endpointId}/run')).toEqual({ $ref: '#/components/schemas/JobSubmission' })
    expect(bodyOf('/v2/{endpointId}/runsync')).toEqual({
      $ref: '#/components/schemas/JobSubmission',
    })
    expect(bodyOf('/v2/{endpointId}/job-done/{workerId}/{jobId}')).toEqual({
      $ref: '#/components/schemas/JobDoneReport',
    })
    expect(bodyOf('/v2/pods')).toEqual({ $ref: '#/components/schemas/PodCreateInput' })
    expect(bodyOf('/v2/serverless')).toEqual({ $ref: '#/components/schemas/EndpointCreateInput' })
    expect(bodyOf('/v2/{endpointId}/openai/v1/chat/completions')).toEqual({
      $ref: '#/components/schemas/OpenAIRequest',
    })
  })

  it('names the shared shapes once, under components', () => {
    const names = Object.keys(document.components.schemas)
    for (const name of ['Pod', 'Endpoint', 'Job', 'QueuedJob', 'Problem', 'Template', 'WorkerJob'])
      expect(names).toContain(name)
    const text = JSON.stringify(document.paths)
    expect(text.match(/"\$ref":"#\/components\/schemas\/Pod"/g)!.length).toBeGreaterThan(3)
  })

  it('names every component by what it is, never with a number added where two names clashed', () => {
    const sections = document.components as unknown as Record<string, Record<string, unknown>>
    const numbered = Object.entries(sections).flatMap(([section, named]) =>
      Object.keys(named)
        .filter((name) => /\d$/.test(name))
        .map((name) => `${section}.${name}`),
    )
    expect(numbered).toEqual([])
    // A tagged union's variants take their tag's name; the worker protocol's workerId is one.
    expect(Object.keys(document.components.schemas)).toEqual(
      expect.arrayContaining(['EndpointScalingQueueDelay', 'EndpointScalingRequestCount']),
    )
    const workerIds = Object.keys(sections.parameters!).filter((name) =>
      name.startsWith('WorkerId'),
    )
    expect(workerIds.sort()).toEqual(['WorkerIdPath', 'WorkerIdPathWorkerProtocol'])
  })

  it('puts the worker protocol under its own tag and keeps GraphQL out', () => {
    const workerPaths = operations.filter(({ operation }) =>
      operation.tags?.includes('Worker protocol'),
    )
    expect(workerPaths.map(({ operation }) => operation.operationId).sort()).toEqual([
      'jobsToStop',
      'pingWorker',
      'reportJobDone',
      'reportJobsDone',
      'streamJobOutput',
      'takeJob',
      'takeJobBatch',
    ])
    expect(Object.keys(document.paths).filter((p) => /graph/i.test(p))).toEqual([])
  })

  it('shows public models on the job routes once, with a model id as the parameter', () => {
    expect(Object.keys(document.paths).filter((p) => p.includes('podyard-reference'))).toEqual([])
    const modelOperations = operations
      .filter(({ operation }) => operation.tags?.includes('Public models'))
      .map(({ operation }) => operation.operationId)
    expect(modelOperations).toEqual(
      expect.arrayContaining(['runJob', 'runJobSync', 'getJobStatus', 'cancelJob', 'openaiModels']),
    )
  })

  it('tells the truth: real answers match the documented schemas', async () => {
    const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }))
    ajv.addSchema({ $id: 'podyard', components: document.components })
    const check = async (method: string, path: string, url: string, init: RequestInit = {}) => {
      const response = await platform.call(url, { method: method.toUpperCase(), ...init })
      const body: unknown = await response.json()
      const declared = document.paths[path]![method]!.responses[String(response.status)] as
        { $ref?: string; content?: Record<string, { schema: unknown }> } | undefined
      const documented = declared?.$ref
        ? document.components.responses[declared.$ref.split('/').pop()!]
        : declared
      // Under the media type it came as: errors are application/problem+json.
      const media = response.headers.get('content-type')?.split(';')[0] ?? ''
      const schema = documented?.content?.[media]?.schema
      expect(schema, `${method} ${url} ${response.status}`).toBeDefined()
      const validate = ajv.compile(
        JSON.parse(JSON.stringify(schema).replaceAll('"#/components', '"podyard#/components')),
      )
      expect(validate(body) ? [] : validate.errors, `${method} ${url}`).toEqual([])
      return body as Record<string, unknown>
    }
    const json = (value: unknown) => ({
      body: JSON.stringify(value),
      headers: { 'content-type': 'application/json' },
    })
    const endpoint = await check(
      'post',
      '/v2/serverless',
      '/v2/serverless',
      json({ name: 'contract', image: 'worker:1', gpu: { pools: ['ADA_24'] } }),
    )
    const id = endpoint.id as string
    const queued = await check('post', '/v2/{endpointId}/run', `/v2/${id}/run`, json({ input: {} }))
    const jobId = queued.id as string
    await check('get', '/v2/{endpointId}/status/{jobId}', `/v2/${id}/status/${jobId}`)
    await check('get', '/v2/{endpointId}/stream/{jobId}', `/v2/${id}/stream/${jobId}`)
    await check('get', '/v2/{endpointId}/health', `/v2/${id}/health`)
    await check('get', '/v2/{endpointId}/requests', `/v2/${id}/requests`)
    await check('post', '/v2/{endpointId}/cancel/{jobId}', `/v2/${id}/cancel/${jobId}`)
    await check('post', '/v2/{endpointId}/purge-queue', `/v2/${id}/purge-queue`)
    await check('get', '/v2/{endpointId}/status/{jobId}', `/v2/${id}/status/nope`)
    await check('post', '/v2/{endpointId}/run', `/v2/${id}/run`, json({ input: 'text' }))
    await check('get', '/v2/catalog/models', '/v2/catalog/models')
    await check('get', '/v2/pods', '/v2/pods')
    await check('get', '/v2/serverless/{id}', `/v2/serverless/${id}`)
  })

  it('gives real examples that the server takes', async () => {
    const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }))
    ajv.addSchema({ $id: 'podyard', components: document.components })
    // The body editor's example: @fastify/swagger moves a body schema's example to its media type.
    const exampleOf = (path: string) =>
      (
        document.paths[path]!.post!.requestBody!.content['application/json'] as {
          example?: unknown
        }
      ).example
    for (const [path, name] of [
      ['/v2/{endpointId}/run', 'JobSubmission'],
      ['/v2/pods', 'PodCreateInput'],
      ['/v2/serverless', 'EndpointCreateInput'],
    ] as const) {
      const validate = ajv.compile({ $ref: `podyard#/components/schemas/${name}` })
      expect(exampleOf(path), path).toBeDefined()
      expect(validate(exampleOf(path)) ? [] : validate.errors, name).toEqual([])
    }
    for (const path of ['/v2/pods', '/v2/serverless', '/v2/templates', '/v2/network-volumes']) {
      const response = await platform.call(path, { method: 'POST', json: exampleOf(path) })
      expect(response.status, `${path}: ${await response.clone().text()}`).toBe(201)
      const { id } = (await response.json()) as { id: string }
      expect((await platform.call(`${path}/${id}`, { method: 'DELETE' })).status).toBe(204)
    }
  })
})
