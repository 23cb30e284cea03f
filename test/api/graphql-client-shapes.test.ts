import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestPlatform, TEST_ADMIN_KEY, type TestPlatform } from '../support/platform.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

/**
 * GraphQL shapes RunPod's real clients send: runpod-python's default CPU
 * pod, runpodctl's declared input types and string ports, the queries RunPod serves without a
 * key, and requests with no query at all.
 */
describe('GraphQL shapes of real clients', () => {
  let platform: TestPlatform

  const post = (body: unknown, search = `?api_key=${TEST_ADMIN_KEY}`) =>
    fetch(`${platform.url}/graphql${search}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    })
  const ok = async (body: unknown, search?: string): Promise<Json> => {
    const response = await post(body, search)
    const json = (await response.json()) as Json
    expect(response.status, JSON.stringify(json)).toBe(200)
    expect(json.errors, JSON.stringify(json.errors)).toBeUndefined()
    return json.data
  }

  beforeAll(async () => {
    platform = await startTestPlatform()
  })
  afterAll(() => platform.close())

  it("runs runpod-python's default CPU pod call (deployCpuPod without instanceId)", async () => {
    // runpod.create_pod(name, image_name) without a GPU type: exactly what 1.12 inlines.
    const data = await ok({
      query: `
    mutation {
      deployCpuPod(
        input: {
          name: "cpu-default", imageName: "ubuntu:22.04", cloudType: ALL, startSsh: true, dataCenterId: null, templateId: "runpod-ubuntu"
        }
      ) {
        id
        imageName
        env
        machineId
        machine {
          podHostId
        }
      }
    }
    `,
    })
    const pod = data.deployCpuPod
    expect(pod.imageName).toBe('ubuntu:22.04')
    const rest = (await (await platform.call(`/v2/pods/${pod.id}`)).json()) as Json
    expect(rest.cpu).toEqual({ id: 'cpu3c', vcpuCount: 2, memory: 4 })
    // The pod names the template it was created from, in REST and in GraphQL alike.
    expect(rest.template).toBe('runpod-ubuntu')
    const named = await ok({ query: `query { pod(input: {podId: "${pod.id}"}) { templateId } }` })
    expect(named.pod.templateId).toBe('runpod-ubuntu')
    await platform.call(`/v2/pods/${pod.id}`, { method: 'DELETE' })
  })

  it('takes podTemplates(input: PodTemplateInput) as runpodctl declares it', async () => {
    const data = await ok({
      query:
        'query PodTemplates($input: PodTemplateInput) { podTemplates(input: $input) { id isRunpod } }',
      variables: { input: { isRunpod: true } },
    })
    expect(data.podTemplates.map((t: Json) => t.id)).toContain('runpod-ubuntu')
  })

  it('takes portsConfig ports as strings or numbers, and answers strings', async () => {
    const save = (port: string | number, name: string) =>
      ok({
        query:
          'mutation saveTemplate($input: SaveTemplateInput) { saveTemplate(input: $input) { id ports portsConfig { port name } } }',
        variables: {
          input: {
            name,
            imageName: 'busybox',
            ports: '8888/http,22/tcp',
            portsConfig: [{ port, name: 'jupyter' }],
          },
        },
      })
    const asString = (await save('8888', 'ports-string')).saveTemplate
    const asNumber = (await save(8888, 'ports-number')).saveTemplate
    for (const template of [asString, asNumber]) {
      expect(template.portsConfig).toEqual([
        { port: '8888', name: null },
        { port: '22', name: null },
      ])
    }
    const inline = await ok({
      query: `mutation { saveTemplate(input: { name: "ports-inline", imageName: "busybox", portsConfig: [{ port: "22", name: "ssh" }, { port: 8888 }] }) { id } }`,
    })
    expect(inline.saveTemplate.id).toEqual(expect.any(String))
    const bad = await post({
      query: `mutation { saveTemplate(input: { name: "ports-bad", imageName: "busybox", portsConfig: [{ port: "ssh" }] }) { id } }`,
    })
    expect(((await bad.json()) as Json).errors[0].message).toContain('port')
  })

  describe('queries RunPod serves without a key', () => {
    it('gpuTypes with lowestPrice and its gpuTypeCudaVersions', async () => {
      const data = await ok(
        {
          query: `query { gpuTypes { id displayName lowestPrice(input: { gpuCount: 1 }) { stockStatus uninterruptablePrice gpuTypeCudaVersions { cudaVersion availability } } } }`,
        },
        '',
      )
      const rtx4090 = data.gpuTypes.find((g: Json) => g.id === 'NVIDIA GeForce RTX 4090')
      expect(rtx4090.lowestPrice.gpuTypeCudaVersions).toEqual([
        { cudaVersion: '12.8', availability: 'AVAILABLE' },
        { cudaVersion: '12.6', availability: 'AVAILABLE' },
      ])
    })

    it("allAiApiPublicConfigs lists the platform's public models", async () => {
      const data = await ok(
        {
          query:
            'query GetAllPublicEndpoints { allAiApiPublicConfigs { id aiApiId modelName displayName description metadata isLive createdAt updatedAt __typename } }',
        },
        '',
      )
      const image = data.allAiApiPublicConfigs.find(
        (c: Json) => c.aiApiId === 'podyard-reference-image',
      )
      expect(image).toMatchObject({
        id: 'cfg_podyard-reference-image',
        isLive: true,
        __typename: 'AiApiPublicConfig',
      })
      expect(JSON.parse(image.metadata)).toMatchObject({ source: 'image', unit: 'megapixel' })
      expect(
        data.allAiApiPublicConfigs
          .map((c: Json) => c.aiApiId)
          .sort((a: string, b: string) => a.localeCompare(b)),
      ).toEqual(['podyard-reference-image', 'podyard-reference-text'])
    })

    it('listings is an empty list: there is no hub', async () => {
      const data = await ok(
        {
          query:
            'query { listings(input: {}) { id title repoName repoOwner deploys listedRelease { id build { imageName } } } }',
        },
        '',
      )
      expect(data).toEqual({ listings: [] })
    })
  })

  describe('a request with no query is a 400 with GraphQL errors', () => {
    const expectNoQuery = async (response: Response) => {
      const body = (await response.json()) as Json
      expect(response.status, JSON.stringify(body)).toBe(400)
      expect(body.errors[0].message).toMatch(/query/i)
      expect(body.errors[0].extensions?.code).not.toBe('INTERNAL')
    }

    it('with a key', async () => {
      await expectNoQuery(await post({}))
      await expectNoQuery(await post(''))
      await expectNoQuery(await fetch(`${platform.url}/graphql?api_key=${TEST_ADMIN_KEY}`))
    })

    it('without a key', async () => {
      await expectNoQuery(await post({}, ''))
      await expectNoQuery(await fetch(`${platform.url}/graphql`))
    })
  })

  it('a wrong ?api_key= says the key is not valid, or too short to be a key', async () => {
    for (const [search, message] of [
      ['?api_key=wrong', /^the API key is too short to be a podyard key/],
      [`?api_key=pyd_${'x'.repeat(40)}`, /^the API key is not valid$/],
    ] as const) {
      const response = await post({ query: '{ myself { id } }' }, search)
      const body = (await response.json()) as Json
      expect(response.status).toBe(401)
      expect(body.errors[0].message).toMatch(message)
    }
    const empty = await post({ query: '{ myself { id } }' }, '?api_key=')
    expect(((await empty.json()) as Json).errors[0].message).toMatch(/api_key/)
  })
})
