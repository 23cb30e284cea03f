import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TestPlatform } from '../support/platform.js'
import {
  base,
  endpointsApiCalls,
  ok,
  problem,
  startEndpointsApiPlatform,
  type EndpointJson,
} from '../support/endpoints-api-fixtures.js'

/**
 * What a serverless endpoint names through the REST API: a template its container block and
 * CUDA versions come from, network volumes checked against its data centers, and templates,
 * registries and volumes kept from deletion while an endpoint uses them. The endpoint itself:
 * endpoints-api.test.ts.
 */
describe('REST serverless endpoints', () => {
  let platform: TestPlatform
  let strangerKey: string

  const { call, create } = endpointsApiCalls(() => platform)

  beforeAll(async () => {
    ;({ platform, strangerKey } = await startEndpointsApiPlatform())
  })
  afterAll(() => platform.close())

  it('takes the container block from a readable template, body fields overriding', async () => {
    const template = await ok<{ id: string }>(
      await call('POST', '/v2/templates', {
        name: 'worker-template',
        image: 'tpl:1',
        env: { A: '1' },
        args: 'run',
        serverless: true,
      }),
      201,
    )
    const endpoint = await create({ image: undefined, templateId: template.id, env: { B: '2' } })
    expect(endpoint).toMatchObject({
      templateId: template.id,
      image: 'tpl:1',
      args: 'run',
      env: { A: '1', B: '2' },
    })
    // Container fields beside templateId override the template's, image included.
    const overridden = await create({
      templateId: template.id,
      image: 'own:2',
      args: 'serve',
      disk: 12,
      ports: ['8000/http'],
    })
    expect(overridden).toMatchObject({
      templateId: template.id,
      image: 'own:2',
      args: 'serve',
      disk: 12,
      ports: ['8000/http'],
      env: { A: '1' },
    })
    const patched = await ok<EndpointJson>(
      await call('PATCH', `/v2/serverless/${overridden.id}`, {
        templateId: template.id,
        image: 'own:3',
      }),
    )
    expect(patched).toMatchObject({ templateId: template.id, image: 'own:3', args: 'run' })
    // The built-in templates are pod templates: an endpoint needs a serverless one.
    await problem(
      await call('POST', '/v2/serverless', {
        ...base,
        image: undefined,
        templateId: 'runpod-ubuntu',
      }),
      422,
    )
    // Another account's private template is not readable (404, like an unknown one).
    const body = await problem(
      await call(
        'POST',
        '/v2/serverless',
        { ...base, image: undefined, templateId: template.id },
        strangerKey,
      ),
      404,
    )
    expect(body.detail).toBe(`template "${template.id}" not found`)
    expect(
      (
        await problem(
          await call('POST', '/v2/serverless', { ...base, image: undefined, templateId: 'nope' }),
          404,
        )
      ).detail,
    ).toBe('template "nope" not found')
  })

  it("takes a template's allowedCudaVersions unless the request gives a CUDA constraint", async () => {
    const template = await ok<{ id: string }>(
      await call(
        'POST',
        '/v2/templates',
        {
          name: 'cuda-template',
          image: 'tpl:cuda',
          serverless: true,
          allowedCudaVersions: ['12.4'],
        },
        strangerKey,
      ),
      201,
    )
    const seeded = await create({ image: undefined, templateId: template.id }, strangerKey)
    expect(seeded.gpu).toMatchObject({ allowedCudaVersions: ['12.4'], minCudaVersion: null })
    const own = await create(
      { templateId: template.id, gpu: { pools: ['ADA_24'], allowedCudaVersions: ['12.8'] } },
      strangerKey,
    )
    expect(own.gpu).toMatchObject({ allowedCudaVersions: ['12.8'] })
    const minimum = await create(
      { templateId: template.id, gpu: { pools: ['ADA_24'], minCudaVersion: '12.1' } },
      strangerKey,
    )
    expect(minimum.gpu).toMatchObject({ allowedCudaVersions: [], minCudaVersion: '12.1' })
    // Without a template nothing is seeded.
    const plain = await create({}, strangerKey)
    expect(plain.gpu).toMatchObject({ allowedCudaVersions: [] })
    for (const { id } of [seeded, own, minimum, plain]) {
      await ok(await call('DELETE', `/v2/serverless/${id}`, undefined, strangerKey), 204)
    }
  })

  it('checks network volumes against the data centers, one per data center', async () => {
    const volume = (name: string, dataCenterId: string, key?: string) =>
      call('POST', '/v2/network-volumes', { name, size: 10, dataCenterId }, key).then((r) =>
        ok<{ id: string }>(r, 201),
      )
    const ro = await volume('ro', 'EU-RO-1')
    const ro2 = await volume('ro2', 'EU-RO-1')
    const ks = await volume('ks', 'US-KS-2')
    const theirs = await volume('theirs', 'EU-RO-1', strangerKey)
    const both = await create({ networkVolumes: [ro.id, ks.id] })
    expect(both.networkVolumes).toEqual([ro.id, ks.id])
    await create({ networkVolumes: [ro.id], dataCenterIds: ['EU-RO-1', 'US-KS-2'] })
    for (const [json, detail] of [
      [
        { networkVolumes: [ks.id], dataCenterIds: ['EU-RO-1'] },
        `network volume ${ks.id} is in US-KS-2, which is not among the endpoint's data centers (EU-RO-1)`,
      ],
      [
        { networkVolumes: [ro.id, ro2.id] },
        `network volumes ${ro.id} and ${ro2.id} are both in EU-RO-1; give at most one per data center`,
      ],
      [{ networkVolumes: [ro.id, ro.id] }, `networkVolumes names ${ro.id} twice`],
      [{ networkVolumes: [theirs.id] }, `network volume "${theirs.id}" not found in your account`],
    ] as const) {
      expect(
        (await problem(await call('POST', '/v2/serverless', { ...base, ...json }), 400)).detail,
      ).toBe(detail)
    }
    expect(
      (
        await problem(
          await call('PATCH', `/v2/serverless/${both.id}`, { dataCenterIds: ['EU-RO-1'] }),
          400,
        )
      ).detail,
    ).toBe(
      `network volume ${ks.id} is in US-KS-2, which is not among the endpoint's data centers (EU-RO-1)`,
    )
  })

  it('keeps templates, registries and volumes in use by an endpoint from being deleted', async () => {
    const registry = await ok<{ id: string }>(
      await call('POST', '/v2/registries', { name: 'in-use', username: 'u', password: 'p' }),
      201,
    )
    const template = await ok<{ id: string }>(
      await call('POST', '/v2/templates', {
        name: 'in-use',
        image: 'x',
        public: true,
        serverless: true,
      }),
      201,
    )
    const volume = await ok<{ id: string }>(
      await call('POST', '/v2/network-volumes', {
        name: 'in-use',
        size: 10,
        dataCenterId: 'EU-RO-1',
      }),
      201,
    )
    const endpoint = await create({
      name: 'user',
      image: undefined,
      templateId: template.id,
      registry: registry.id,
      networkVolumes: [volume.id],
    })
    const user = `endpoint ${endpoint.id} (user)`
    const refusals = [
      [`/v2/templates/${template.id}`, `template ${template.id} is in use by ${user}`],
      [`/v2/registries/${registry.id}`, `${user}`],
      [`/v2/network-volumes/${volume.id}`, `${user}`],
    ] as const
    for (const [path, detail] of refusals) {
      const body = await problem(await call('DELETE', path), 400)
      expect(body.detail).toContain(detail)
    }
    // Another account's endpoint on the public template counts too, without its name.
    const theirs = await create(
      { name: 'theirs', image: undefined, templateId: template.id },
      strangerKey,
    )
    await ok(
      await call('PATCH', `/v2/serverless/${endpoint.id}`, {
        image: 'x',
        registry: null,
        networkVolumes: [],
      }),
    )
    expect((await problem(await call('DELETE', `/v2/templates/${template.id}`), 400)).detail).toBe(
      `template ${template.id} is in use by 1 endpoint(s) of other accounts`,
    )
    await ok(await call('DELETE', `/v2/registries/${registry.id}`), 204)
    await ok(await call('DELETE', `/v2/network-volumes/${volume.id}`), 204)
    await ok(await call('DELETE', `/v2/serverless/${theirs.id}`, undefined, strangerKey), 204)
    await ok(await call('DELETE', `/v2/templates/${template.id}`), 204)
    // The other direction: an endpoint cannot name what is gone.
    expect(
      (
        await problem(
          await call('PATCH', `/v2/serverless/${endpoint.id}`, { templateId: template.id }),
          404,
        )
      ).detail,
    ).toBe(`template "${template.id}" not found`)
    expect(
      (
        await problem(
          await call('PATCH', `/v2/serverless/${endpoint.id}`, { registry: registry.id }),
          400,
        )
      ).detail,
    ).toBe(`registry "${registry.id}" not found`)
    expect(
      (
        await problem(
          await call('PATCH', `/v2/serverless/${endpoint.id}`, { networkVolumes: [volume.id] }),
          400,
        )
      ).detail,
    ).toBe(`network volume "${volume.id}" not found in your account`)
    await ok(await call('DELETE', `/v2/serverless/${endpoint.id}`), 204)
  })
})
