import { getIntrospectionQuery } from 'graphql'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAX_QUERY_FIELDS } from '../../src/api/graphql/query-limits.js'
import { TEST_ADMIN_KEY, startTestPlatform, type TestPlatform } from '../support/platform.js'

/**
 * Catalog, account and transport over GraphQL, with the documents RunPod's clients send
 * (wire-compat §6): runpod-python inlines values; runpodctl uses variables.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const RTX_4090 = 'NVIDIA GeForce RTX 4090'
const RTX_5090 = 'NVIDIA GeForce RTX 5090'

describe('GraphQL catalog, account and transport', () => {
  let platform: TestPlatform

  async function post(body: unknown, search = `?api_key=${TEST_ADMIN_KEY}`) {
    const response = await fetch(`${platform.url}/graphql${search}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    return { status: response.status, body: (await response.json()) as Json }
  }

  async function ok(body: Record<string, unknown>): Promise<Json> {
    const result = await post(body)
    expect(result.status, JSON.stringify(result.body)).toBe(200)
    expect(result.body.errors, JSON.stringify(result.body.errors)).toBeUndefined()
    return result.body.data
  }

  beforeAll(async () => {
    platform = await startTestPlatform()
  })
  afterAll(() => platform.close())

  describe('gpuTypes', () => {
    it('lists the fleet`s GPU types as runpod-python`s get_gpus asks', async () => {
      const data = await ok({ query: 'query GpuTypes { gpuTypes { id displayName memoryInGb } }' })
      expect(data.gpuTypes).toContainEqual({
        id: RTX_4090,
        displayName: 'RTX 4090',
        memoryInGb: 24,
      })
      const rest = ((await (await platform.call('/v2/catalog/gpus')).json()) as Json).gpus as Json[]
      expect(data.gpuTypes.map((t: Json) => t.id)).toEqual(rest.map((t) => t.id))
    })

    it('answers runpod-python`s get_gpu with prices, clouds and lowestPrice', async () => {
      const data = await ok({
        query: `query GpuTypes { gpuTypes(input: {id: "${RTX_4090}"}) { id displayName memoryInGb secureCloud communityCloud securePrice communityPrice lowestPrice(input: {gpuCount: 1}) { minimumBidPrice uninterruptablePrice stockStatus availableGpuCounts } } }`,
      })
      expect(data.gpuTypes).toEqual([
        {
          id: RTX_4090,
          displayName: 'RTX 4090',
          memoryInGb: 24,
          secureCloud: true,
          communityCloud: true,
          securePrice: 0.59,
          communityPrice: 0.34,
          lowestPrice: {
            // Half the community price: the least bid of a spot pod (docs/pods.md).
            minimumBidPrice: 0.17,
            // Either cloud: the cheaper, community.
            uninterruptablePrice: 0.34,
            stockStatus: 'High',
            availableGpuCounts: [1, 2, 3, 4],
          },
        },
      ])
    })

    it('answers runpodctl`s variables with every field, and follows live capacity', async () => {
      const query = `query GpuTypes($input: GpuTypeFilter, $lowestPriceInput: GpuLowestPriceInput) {
        gpuTypes(input: $input) {
          id displayName memoryInGb maxGpuCount manufacturer cudaCores secureCloud communityCloud
          securePrice communityPrice oneMonthPrice threeMonthPrice oneWeekPrice
          communitySpotPrice secureSpotPrice
          lowestPrice(input: $lowestPriceInput) {
            minimumBidPrice uninterruptablePrice stockStatus availableGpuCounts gpuName gpuTypeId
            minMemory minVcpu
          }
        }
      }`
      const ask = async () =>
        (
          await ok({
            query,
            variables: {
              input: { id: RTX_5090 },
              lowestPriceInput: {
                gpuCount: 1,
                secureCloud: true,
                minMemoryInGb: 8,
                minVcpuCount: 2,
                totalDisk: 20,
              },
            },
          })
        ).gpuTypes[0]
      expect(await ask()).toEqual({
        id: RTX_5090,
        displayName: 'RTX 5090',
        memoryInGb: 32,
        maxGpuCount: 2,
        manufacturer: 'NVIDIA',
        cudaCores: null,
        secureCloud: true,
        communityCloud: false,
        securePrice: 0.89,
        communityPrice: null,
        oneMonthPrice: null,
        threeMonthPrice: null,
        oneWeekPrice: null,
        communitySpotPrice: null,
        secureSpotPrice: null,
        lowestPrice: {
          minimumBidPrice: null,
          uninterruptablePrice: 0.89,
          stockStatus: 'High',
          availableGpuCounts: [1, 2],
          gpuName: 'RTX 5090',
          gpuTypeId: RTX_5090,
          minMemory: 62,
          minVcpu: 16,
        },
      })

      const created = await platform.call('/v2/pods', {
        method: 'POST',
        json: {
          name: 'holder',
          image: 'ubuntu',
          args: 'sleep 600',
          gpu: { id: RTX_5090, count: 1 },
        },
      })
      expect(created.status).toBe(201)
      const pod = (await created.json()) as { id: string }
      try {
        const half = await ask()
        expect(half.lowestPrice).toMatchObject({ stockStatus: 'Medium', availableGpuCounts: [1] })
        const rest = (await (
          await platform.call(`/v2/catalog/gpus/${encodeURIComponent(RTX_5090)}`)
        ).json()) as Json
        expect(rest.availability).toBe('MEDIUM')
      } finally {
        await platform.call(`/v2/pods/${pod.id}`, { method: 'DELETE' })
      }
      expect((await ask()).lowestPrice.availableGpuCounts).toEqual([1, 2])
    })

    it('applies secureCloud and the vCPU and memory minimums to price and stock', async () => {
      const lowest = async (input: string) =>
        (
          await ok({
            query: `{ gpuTypes(input: {id: "${RTX_4090}"}) { lowestPrice(input: ${input}) { uninterruptablePrice stockStatus availableGpuCounts minVcpu } } }`,
          })
        ).gpuTypes[0].lowestPrice
      expect(await lowest('{gpuCount: 1, secureCloud: true}')).toEqual({
        uninterruptablePrice: 0.59,
        stockStatus: 'High',
        availableGpuCounts: [1, 2, 3, 4],
        minVcpu: 16,
      })
      // The community host gives 8 vCPUs per GPU: 12 need two of its GPUs.
      expect(await lowest('{gpuCount: 1, secureCloud: false, minVcpuCount: 12}')).toEqual({
        uninterruptablePrice: null,
        stockStatus: 'None',
        availableGpuCounts: [2, 3, 4],
        minVcpu: null,
      })
      expect(await lowest('{gpuCount: 2, secureCloud: false, minVcpuCount: 12}')).toMatchObject({
        uninterruptablePrice: 0.34,
        stockStatus: 'High',
        minVcpu: 16,
      })
    })

    it('gives an empty list for an unknown id', async () => {
      expect(
        await ok({ query: '{ gpuTypes(input: {id: "NVIDIA GeForce RTX 9999"}) { id } }' }),
      ).toEqual({
        gpuTypes: [],
      })
    })
  })

  it('lists data centers with GPU stock', async () => {
    const data = await ok({
      query:
        'query { dataCenters { id name location gpuAvailability { gpuTypeId displayName stockStatus } } }',
      variables: null,
    })
    const ks = data.dataCenters.find((dc: Json) => dc.id === 'US-KS-2')
    expect(ks).toMatchObject({ name: 'US Kansas 2', location: 'NORTH_AMERICA' })
    expect(ks.gpuAvailability).toContainEqual({
      gpuTypeId: RTX_4090,
      displayName: 'RTX 4090',
      stockStatus: 'High',
    })
    expect(data.dataCenters.map((dc: Json) => dc.id)).toEqual([
      'US-KS-2',
      'EU-RO-1',
      'CA-MTL-1',
      'EUR-IS-1',
    ])
  })

  it('lists CPU flavors as cpuTypes, sized like the REST catalog', async () => {
    const data = await ok({
      query: '{ cpuTypes { id displayName cores threadsPerCore } }',
      variables: {},
    })
    const rest = ((await (await platform.call('/v2/catalog/cpus')).json()) as Json).cpus as Json[]
    expect(data.cpuTypes).toEqual(
      rest.map((flavor) => ({
        id: flavor.id,
        displayName: `${flavor.name} (${flavor.group})`,
        cores: flavor.vcpu.max,
        threadsPerCore: 1,
      })),
    )
    expect(data.cpuTypes).toContainEqual({
      id: 'cpu3c',
      displayName: 'Compute-Optimized (Gen 3)',
      cores: 64,
      threadsPerCore: 1,
    })
  })

  it('lists templates: built-in ones as isRunpod, the account`s own under myself', async () => {
    const created = await platform.call('/v2/templates', {
      method: 'POST',
      json: {
        name: 'mine',
        image: 'ubuntu:22.04',
        args: 'sleep 1',
        ports: ['8888/http', '22/tcp'],
        env: { A: 'b' },
        mounts: { persistent: { size: 20, path: '/data' } },
      },
    })
    expect(created.status).toBe(201)
    const template = (await created.json()) as { id: string }
    const fields =
      'id name imageName dockerArgs env { key value } ports volumeMountPath volumeInGb containerDiskInGb containerRegistryAuthId startJupyter startSsh startScript isServerless isPublic isRunpod readme advancedStart category'
    const data = await ok({
      query: `{ podTemplates(input: {isRunpod: true}) { ${fields} } myself { podTemplates { ${fields} } } }`,
    })
    expect(data.podTemplates.map((t: Json) => t.id)).toContain('runpod-ubuntu')
    expect(data.podTemplates.every((t: Json) => t.isRunpod)).toBe(true)
    expect(data.myself.podTemplates).toEqual([
      {
        id: template.id,
        name: 'mine',
        imageName: 'ubuntu:22.04',
        dockerArgs: 'sleep 1',
        env: [{ key: 'A', value: 'b' }],
        ports: '8888/http,22/tcp',
        volumeMountPath: '/data',
        volumeInGb: 20,
        containerDiskInGb: 50,
        containerRegistryAuthId: null,
        startJupyter: true,
        startSsh: true,
        startScript: null,
        isServerless: false,
        isPublic: false,
        isRunpod: false,
        readme: '',
        advancedStart: false,
        category: 'NVIDIA',
      },
    ])
    const all = await ok({ query: '{ podTemplates { id } }' })
    expect(all.podTemplates.map((t: Json) => t.id)).toEqual(
      expect.arrayContaining(['runpod-ubuntu', template.id]),
    )
  })

  it('answers myself as runpod-python`s get_user and runpodctl ask', async () => {
    const data = await ok({
      query:
        'query myself { myself { id email pubKey currentSpendPerHr networkVolumes { id name size dataCenterId } } }',
    })
    expect(data.myself).toEqual({
      id: expect.stringMatching(/^acct_/),
      email: 'admin@podyard.local',
      pubKey: null,
      currentSpendPerHr: 0,
      networkVolumes: [],
    })
  })

  describe('transport', () => {
    const doc = 'query A { myself { id } } query B { myself { email } }'

    it('accepts variables absent, {} and null, and picks the operation by operationName', async () => {
      for (const body of [
        { query: '{ myself { id } }' },
        { query: '{ myself { id } }', variables: {} },
        { query: '{ myself { id } }', variables: null },
      ]) {
        expect((await ok(body)).myself.id).toMatch(/^acct_/)
      }
      expect(await ok({ query: doc, operationName: 'B' })).toEqual({
        myself: { email: 'admin@podyard.local' },
      })
      const ambiguous = await post({ query: doc })
      expect(ambiguous.body).toEqual({
        data: null,
        errors: [{ message: 'Must provide operation name if query contains multiple operations.' }],
      })
    })

    it('answers syntax and schema errors with the standard GraphQL error response', async () => {
      const syntax = await post({ query: '{ myself { id ' })
      expect(syntax.status).toBe(400)
      expect(syntax.body).toMatchObject({
        data: null,
        errors: [{ message: expect.stringMatching(/^Syntax Error/) }],
      })
      const unknown = await post({ query: '{ myself { balance } }' })
      expect(unknown.status).toBe(400)
      expect(unknown.body.errors[0].message).toBe('Cannot query field "balance" on type "Myself".')
      const badVariables = await post({ query: '{ myself { id } }', variables: 'x' })
      expect(badVariables.status).toBe(400)
    })

    it('serves introspection, and stops documents nested too deep with a clear error', async () => {
      const schema = await ok({ query: getIntrospectionQuery() })
      const names = schema.__schema.types.map((t: Json) => t.name)
      expect(names).toEqual(
        expect.arrayContaining(['Pod', 'GpuType', 'PodFindAndDeployOnDemandInput']),
      )

      // graphql-js stops nested `fields`; nothing bounds an `ofType` chain but our limit.
      const ofTypes = `${'ofType { '.repeat(20)}name${' }'.repeat(20)}`
      const deep = await post({ query: `{ __schema { types { ${ofTypes} } } }` })
      expect(deep.status).toBe(400)
      expect(deep.body.errors).toEqual([
        expect.objectContaining({
          message: 'this query nests introspection 23 levels deep; the limit is 20',
          extensions: { code: 'VALIDATION_FAILED' },
        }),
      ])
    })

    it('stops documents that select too many fields (aliases expanded) before they run', async () => {
      // Each alias selects gpuTypes and id: 2 fields.
      const aliases = Array.from(
        { length: MAX_QUERY_FIELDS / 2 + 1 },
        (_, i) => `a${i}: gpuTypes { id }`,
      ).join(' ')
      const costly = await post({ query: `{ ${aliases} }` })
      expect(costly.status).toBe(400)
      expect(costly.body.errors).toEqual([
        expect.objectContaining({
          message: `this query selects ${MAX_QUERY_FIELDS + 2} fields (fragments and aliases expanded); the limit is ${MAX_QUERY_FIELDS}: split it into smaller documents`,
          extensions: { code: 'VALIDATION_FAILED' },
        }),
      ])
    })

    it('serves a GraphiQL page at /graphiql that needs nothing from the internet', async () => {
      const page = await fetch(`${platform.url}/graphiql`)
      expect(page.status).toBe(200)
      expect(page.headers.get('content-type')).toMatch(/^text\/html/)
      const html = await page.text()
      expect(html).toContain("fetch('/graphql'")
      expect(html).not.toMatch(/https?:\/\//)
      const sdl = await (await fetch(`${platform.url}/graphiql/schema.graphql`)).text()
      expect(sdl).toContain('podFindAndDeployOnDemand(input: PodFindAndDeployOnDemandInput): Pod')
    })
  })
})
