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
 * The REST API of serverless endpoints (/v2/serverless): create with the documented defaults,
 * read, list, update and delete; the schema's bounds (422) and the rules across fields (400);
 * the version that counts what workers run; another account's 404; the OpenAPI document.
 * Templates, registries and network volumes an endpoint names: endpoints-api-references.test.ts.
 */
describe('REST serverless endpoints', () => {
  let platform: TestPlatform
  let strangerKey: string

  const { call, create } = endpointsApiCalls(() => platform)

  beforeAll(async () => {
    ;({ platform, strangerKey } = await startEndpointsApiPlatform())
  })
  afterAll(() => platform.close())

  it('creates with the documented defaults and reads, lists, updates and deletes', async () => {
    const created = await create({ name: 'sdxl' })
    const b = `${platform.url}/v2/${created.id}`
    expect(created).toEqual({
      id: expect.stringMatching(/^[a-z0-9]{14}$/),
      name: 'sdxl',
      type: 'QUEUE',
      templateId: null,
      image: 'worker:1',
      args: '',
      disk: 50,
      env: {},
      ports: [],
      registry: null,
      requestUrls: {
        run: `${b}/run`,
        runSync: `${b}/runsync`,
        status: `${b}/status/{job_id}`,
        stream: `${b}/stream/{job_id}`,
        cancel: `${b}/cancel/{job_id}`,
        retry: `${b}/retry/{job_id}`,
        purgeQueue: `${b}/purge-queue`,
        health: `${b}/health`,
      },
      gpu: {
        pools: ['ADA_24'],
        excludedTypes: [],
        count: 1,
        allowedCudaVersions: [],
        minCudaVersion: null,
      },
      workers: { min: 0, max: 3, idleTimeout: 10 },
      scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
      dataCenterIds: [],
      networkVolumes: [],
      timeout: 300000,
      flashboot: 'OFF',
      version: 1,
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      updatedAt: created.createdAt,
    })
    // One endpoint's view adds where its image is ready: no Docker host here, so nowhere.
    expect(await ok(await call('GET', `/v2/serverless/${created.id}`))).toEqual({
      ...created,
      imageReadiness: [],
    })
    const { endpoints } = await ok<{ endpoints: EndpointJson[] }>(
      await call('GET', '/v2/serverless'),
    )
    expect(endpoints.map((e) => e.id)).toContain(created.id)
    const updated = await ok(
      await call('PATCH', `/v2/serverless/${created.id}`, { name: 'sdxl-2', workers: { max: 5 } }),
    )
    expect(updated).toMatchObject({
      name: 'sdxl-2',
      workers: { min: 0, max: 5, idleTimeout: 10 },
      version: 1,
    })
    await ok(await call('DELETE', `/v2/serverless/${created.id}`), 204)
    expect((await call('GET', `/v2/serverless/${created.id}`)).status).toBe(404)
  })

  it('creates CPU endpoints with memory from the flavor, and every option set', async () => {
    const endpoint = await create({
      name: 'cpu',
      gpu: undefined,
      cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
      workers: { min: 1, max: 1 },
      scaling: { type: 'REQUEST_COUNT', requestCount: 1 },
      timeout: 5000,
      flashboot: 'PRIORITY_FLASHBOOT',
      dataCenterIds: ['EU-RO-1'],
      env: { MODEL: 'x' },
      ports: ['8000/http'],
      args: 'python handler.py',
      disk: 1,
    })
    expect(endpoint).toMatchObject({
      cpu: [{ id: 'cpu3c', vcpuCount: 2, memory: 4 }],
      workers: { min: 1, max: 1 },
      scaling: { type: 'REQUEST_COUNT', requestCount: 1 },
      timeout: 5000,
      flashboot: 'PRIORITY_FLASHBOOT',
      dataCenterIds: ['EU-RO-1'],
      env: { MODEL: 'x' },
      args: 'python handler.py',
      disk: 1,
    })
    expect(endpoint).not.toHaveProperty('gpu')
    const upper = await create({
      timeout: 7 * 24 * 3600 * 1000,
      workers: { max: 100 },
      scaling: { type: 'QUEUE_DELAY', queueDelay: 0.5 },
      gpu: { pools: ['AMPERE_16', 'AMPERE_24'], count: 2, minCudaVersion: '12.1' },
    })
    expect(upper).toMatchObject({
      timeout: 604800000,
      workers: { min: 0, max: 100 },
      scaling: { queueDelay: 0.5 },
      gpu: { pools: ['AMPERE_16', 'AMPERE_24'], count: 2, minCudaVersion: '12.1' },
    })
  })

  it('validates the schema: 422 listing each failure at the bounds', async () => {
    const invalid: [Record<string, unknown>, string | RegExp][] = [
      [{ name: undefined }, 'body.name: is required'],
      [{ name: '' }, /^body\.name: /],
      [{ name: 'x'.repeat(192) }, /^body\.name: /],
      [{ gpu: { pools: ['TPU_16'] } }, /^body\.gpu\.pools\[0\]: /],
      [{ gpu: { pools: ['ADA_24'], count: 0 } }, 'body.gpu.count: must be >= 1'],
      [
        { gpu: { pools: ['ADA_24'], allowedCudaVersions: ['9.0'] } },
        /^body\.gpu\.allowedCudaVersions\[0\]: /,
      ],
      [{ gpu: { pools: ['ADA_24'], minCudaVersion: 'twelve' } }, /^body\.gpu\.minCudaVersion/],
      [{ gpu: undefined, cpu: [] }, /^body\.cpu: /],
      [
        { gpu: undefined, cpu: [{ id: 'cpu3c', vcpuCount: 3 }] },
        'body.cpu[0].vcpuCount: must be a power of two >= 2',
      ],
      [{ gpu: undefined, cpu: [{ id: 'cpu3c', vcpuCount: 1 }] }, /^body\.cpu\[0\]\.vcpuCount: /],
      [{ workers: { min: -1 } }, 'body.workers.min: must be >= 0'],
      [{ workers: { max: 101 } }, 'body.workers.max: must be <= 100'],
      [{ workers: { idleTimeout: 0 } }, 'body.workers.idleTimeout: must be >= 1'],
      [{ workers: { idleTimeout: 3601 } }, 'body.workers.idleTimeout: must be <= 3600'],
      [
        { scaling: { type: 'QUEUE_DELAY', queueDelay: 0.4 } },
        'body.scaling.queueDelay: must be >= 0.5',
      ],
      [
        { scaling: { type: 'REQUEST_COUNT', requestCount: 0 } },
        'body.scaling.requestCount: must be >= 1',
      ],
      [{ scaling: { type: 'CPU_LOAD' } }, /^body\.scaling\.type: /],
      [{ timeout: 4999 }, 'body.timeout: must be >= 5000'],
      [{ timeout: 604800001 }, 'body.timeout: must be <= 604800000'],
      [{ flashboot: true }, /^body\.flashboot: /],
      [{ type: 'SERVERLESS' }, /^body\.type: /],
      [{ disk: 0 }, 'body.disk: must be >= 1'],
      [{ ports: ['http'] }, /^body\.ports\[0\]: /],
      [{ bogus: 1 }, 'body.bogus: unknown property'],
    ]
    for (const [patch, error] of invalid) {
      const response = await call('POST', '/v2/serverless', { ...base, ...patch })
      const body = await problem(response, 422)
      const errors = body.errors ?? []
      if (typeof error === 'string') expect(errors, JSON.stringify(patch)).toContain(error)
      else
        expect(
          errors.some((e) => error.test(e)),
          `${JSON.stringify(patch)}: ${errors.join('\n')}`,
        ).toBe(true)
    }
  })

  it('refuses rule conflicts with 400 naming the rule', async () => {
    const cpu = await ok<{ vcpuCounts: number[] }>(await call('GET', '/v2/catalog/cpus/cpu3c'))
    const tooMany = Math.max(...cpu.vcpuCounts) * 2
    const conflicts: [Record<string, unknown>, string | RegExp][] = [
      [{ type: 'LOAD_BALANCER' }, 'load-balancing endpoints are not supported'],
      [{ image: undefined }, 'give either templateId or image'],
      [{ gpu: undefined }, 'give gpu (with gpu.pools) or cpu: an endpoint needs compute'],
      [{ cpu: [{ id: 'cpu3c', vcpuCount: 2 }] }, 'give either gpu or cpu, not both'],
      [{ gpu: {} }, 'gpu.pools must name at least one GPU pool'],
      [{ gpu: { pools: [] } }, 'gpu.pools must name at least one GPU pool'],
      [
        { gpu: { pools: ['ADA_24'], excludedTypes: ['RTX 9999'] } },
        /^gpu\.excludedTypes: unknown GPU type "RTX 9999"/,
      ],
      [
        { gpu: { pools: ['ADA_24'], excludedTypes: ['NVIDIA GeForce RTX 4090'] } },
        'gpu.excludedTypes exclude every GPU type of the pools ADA_24',
      ],
      [
        { gpu: { pools: ['ADA_24'], allowedCudaVersions: ['12.4'], minCudaVersion: '12.1' } },
        'give gpu.allowedCudaVersions or gpu.minCudaVersion, not both',
      ],
      [
        { gpu: undefined, cpu: [{ id: 'cpu3m', vcpuCount: 2 }] },
        /^CPU flavor "cpu3m" is not offered for endpoints/,
      ],
      [
        { gpu: undefined, cpu: [{ id: 'cpu9x', vcpuCount: 2 }] },
        /^CPU flavor "cpu9x" is not offered/,
      ],
      [
        {
          gpu: undefined,
          cpu: [
            { id: 'cpu3c', vcpuCount: 2 },
            { id: 'cpu3c', vcpuCount: 4 },
          ],
        },
        'cpu names flavor cpu3c twice',
      ],
      [
        { gpu: undefined, cpu: [{ id: 'cpu3c', vcpuCount: tooMany }] },
        new RegExp(`^CPU flavor cpu3c does not offer ${tooMany} vCPUs`),
      ],
      [{ workers: { min: 4, max: 3 } }, 'workers.max (3) must be at least workers.min (4)'],
      [
        { scaling: { type: 'QUEUE_DELAY', requestCount: 2 } },
        /^scaling\.requestCount applies to REQUEST_COUNT/,
      ],
      [
        { scaling: { type: 'REQUEST_COUNT', queueDelay: 2 } },
        /^scaling\.queueDelay applies to QUEUE_DELAY/,
      ],
      [{ dataCenterIds: ['MARS-1'] }, /^unknown data center "MARS-1"/],
      [{ networkVolumes: ['nope'] }, 'network volume "nope" not found in your account'],
      [{ registry: 'nope' }, 'registry "nope" not found'],
    ]
    for (const [patch, detail] of conflicts) {
      const body = await problem(await call('POST', '/v2/serverless', { ...base, ...patch }), 400)
      if (typeof detail === 'string') expect(body.detail, JSON.stringify(patch)).toBe(detail)
      else expect(body.detail, JSON.stringify(patch)).toMatch(detail)
    }
    // workers.max defaults to 3, or to min when min is above it.
    expect((await create({ workers: { min: 5 } })).workers).toEqual({
      min: 5,
      max: 5,
      idleTimeout: 10,
    })
  })

  it('bumps the version only when what workers run changes', async () => {
    const template = await ok<{ id: string }>(
      await call('POST', '/v2/templates', { name: 'versioned', image: 'v:1', serverless: true }),
      201,
    )
    const endpoint = await create({ name: 'versions' })
    const patch = async (json: Record<string, unknown>) =>
      ok(await call('PATCH', `/v2/serverless/${endpoint.id}`, json))
    const steps: [Record<string, unknown>, number][] = [
      [{ name: 'renamed' }, 1],
      [{ workers: { min: 1, max: 2, idleTimeout: 60 } }, 1],
      [{ scaling: { type: 'REQUEST_COUNT', requestCount: 3 } }, 1],
      [{ timeout: 600000, flashboot: 'FLASHBOOT', dataCenterIds: ['US-KS-2'] }, 1],
      [{ env: { A: '1' } }, 2],
      [{ env: { A: '1' } }, 2],
      [{ image: 'worker:2' }, 3],
      [{ args: 'serve' }, 4],
      [{ gpu: { count: 2 } }, 5],
      [{ gpu: { excludedTypes: [] } }, 5],
      [{ templateId: template.id }, 6],
    ]
    for (const [json, version] of steps) {
      expect((await patch(json)).version, JSON.stringify(json)).toBe(version)
    }
    const latest = await ok(await call('GET', `/v2/serverless/${endpoint.id}`))
    expect(latest).toMatchObject({
      name: 'renamed',
      templateId: template.id,
      image: 'v:1',
      env: {},
      // REQUEST_COUNT scaling: the idle timeout does not apply and is left out.
      workers: { min: 1, max: 2 },
      scaling: { type: 'REQUEST_COUNT', requestCount: 3 },
      timeout: 600000,
      flashboot: 'FLASHBOOT',
      dataCenterIds: ['US-KS-2'],
      gpu: { pools: ['ADA_24'], count: 2 },
    })
    // An image replaces the template; the compute type is fixed; rules hold on the merged result.
    expect(await patch({ image: 'own:1' })).toMatchObject({
      templateId: null,
      image: 'own:1',
      version: 7,
    })
    for (const [json, detail] of [
      [
        { cpu: [{ id: 'cpu3c', vcpuCount: 2 }] },
        'the compute type of an endpoint cannot change: this is a GPU endpoint',
      ],
      [{ workers: { max: 0 } }, 'workers.max (0) must be at least workers.min (1)'],
      [{ type: 'LOAD_BALANCER' }, 'load-balancing endpoints are not supported'],
      [
        { gpu: { minCudaVersion: '12.0', allowedCudaVersions: ['12.4'] } },
        'give gpu.allowedCudaVersions or gpu.minCudaVersion, not both',
      ],
    ] as const) {
      expect(
        (await problem(await call('PATCH', `/v2/serverless/${endpoint.id}`, json), 400)).detail,
      ).toBe(detail)
    }
    expect(
      (await problem(await call('PATCH', `/v2/serverless/${endpoint.id}`, { timeout: 1 }), 422))
        .errors,
    ).toContain('body.timeout: must be >= 5000')
    // One CUDA constraint replaces the other.
    expect((await patch({ gpu: { allowedCudaVersions: ['12.4'] } })).gpu).toMatchObject({
      allowedCudaVersions: ['12.4'],
      minCudaVersion: null,
    })
    expect((await patch({ gpu: { minCudaVersion: '12' } })).gpu).toMatchObject({
      allowedCudaVersions: [],
      minCudaVersion: '12',
    })
  })

  it('is 404 for another account, which never sees the endpoint', async () => {
    const endpoint = await create({ name: 'private' })
    for (const [method, json] of [
      ['GET', undefined],
      ['PATCH', { name: 'mine' }],
      ['DELETE', undefined],
    ] as const) {
      const body = await problem(
        await call(method, `/v2/serverless/${endpoint.id}`, json, strangerKey),
        404,
      )
      expect(body.detail).toBe(`endpoint ${endpoint.id} not found`)
    }
    const theirs = await ok<{ endpoints: EndpointJson[] }>(
      await call('GET', '/v2/serverless', undefined, strangerKey),
    )
    expect(theirs.endpoints).toEqual([])
    expect((await call('GET', `/v2/serverless/${endpoint.id}`)).status).toBe(200)
  })

  it('documents the routes in the OpenAPI document', async () => {
    const doc = await ok<{ paths: Record<string, Record<string, { operationId?: string }>> }>(
      await call('GET', '/v2/openapi.json'),
    )
    expect(doc.paths['/v2/serverless']?.get?.operationId).toBe('listEndpoints')
    expect(doc.paths['/v2/serverless']?.post?.operationId).toBe('createEndpoint')
    expect(doc.paths['/v2/serverless/{id}']?.patch?.operationId).toBe('updateEndpoint')
    expect(doc.paths['/v2/serverless/{id}']?.delete?.operationId).toBe('deleteEndpoint')
  })
})
