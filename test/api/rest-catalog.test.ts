import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KyselyAllocationRepo } from '../../src/store/allocation-repo.js'
import { startTestPlatform, type TestPlatform } from '../support/platform.js'

const RTX_5090 = 'NVIDIA GeForce RTX 5090'

describe('REST catalog', () => {
  let platform: TestPlatform

  async function get<T>(path: string): Promise<T> {
    const response = await platform.call(path)
    expect(response.status, path).toBe(200)
    return (await response.json()) as T
  }

  async function status(
    path: string,
  ): Promise<{ status: number; body: { detail: string; errors?: string[] } }> {
    const response = await platform.call(path)
    return {
      status: response.status,
      body: (await response.json()) as { detail: string; errors?: string[] },
    }
  }

  beforeAll(async () => {
    platform = await startTestPlatform()
  })
  afterAll(() => platform.close())

  it('lists the demo fleet’s GPU types in the v2 shape, wrapped in {"gpus": [...]}', async () => {
    const { gpus } = await get<{ gpus: Array<Record<string, unknown>> }>('/v2/catalog/gpus')
    expect(gpus.length).toBeGreaterThanOrEqual(8)
    const rtx4090 = gpus.find((g) => g.id === 'NVIDIA GeForce RTX 4090')
    expect(rtx4090).toEqual({
      id: 'NVIDIA GeForce RTX 4090',
      name: 'RTX 4090',
      pool: 'ADA_24',
      manufacturer: 'NVIDIA',
      memory: 24,
      secure: true,
      community: true,
      price: {
        secure: expect.any(Number),
        community: expect.any(Number),
        serverless: expect.any(Number),
      },
      maxCount: { secure: 4, community: 4 },
      availability: 'HIGH',
    })
    const mi300x = gpus.find((g) => g.id === 'AMD Instinct MI300X OAM')
    expect(mi300x).toMatchObject({
      manufacturer: 'AMD',
      memory: 192,
      community: false,
      maxCount: { community: 0 },
    })
    // RunPod's schema requires both clouds' prices as numbers; a type outside every serverless
    // pool has no serverless price at all (absent, not null).
    expect(mi300x!.price).toEqual({ secure: expect.any(Number), community: expect.any(Number) })
  })

  it('adds per-data-center and per-CUDA detail with include=AVAILABILITY, and filters by cloud', async () => {
    const gpu = await get<Record<string, unknown>>(
      `/v2/catalog/gpus/${encodeURIComponent('NVIDIA GeForce RTX 4090')}?include=AVAILABILITY`,
    )
    expect(gpu.dataCenters).toEqual(
      expect.arrayContaining([
        { id: 'US-KS-2', name: expect.any(String), availability: 'HIGH' },
        { id: 'CA-MTL-1', name: expect.any(String), availability: 'HIGH' },
      ]),
    )
    expect(gpu.cudaVersions).toEqual(expect.arrayContaining([{ version: '12.8', available: true }]))

    // `cloud` scopes availability to that cloud; H200s exist only in the secure cloud.
    const { gpus } = await get<{ gpus: Array<{ id: string; availability: string }> }>(
      '/v2/catalog/gpus?cloud=COMMUNITY',
    )
    expect(gpus.find((g) => g.id === 'NVIDIA H200')?.availability).toBe('NONE')
    expect(gpus.find((g) => g.id === 'NVIDIA GeForce RTX 3090')?.availability).toBe('HIGH')
    const tooMany = await get<{ availability: string }>(
      `/v2/catalog/gpus/${encodeURIComponent(RTX_5090)}?count=3`,
    )
    expect(tooMany.availability).toBe('NONE')
  })

  it('changes stock as capacity is taken and given back', async () => {
    const path = `/v2/catalog/gpus/${encodeURIComponent(RTX_5090)}`
    expect((await get<{ availability: string }>(path)).availability).toBe('HIGH')
    const allocations = new KyselyAllocationRepo(platform.store.db)
    const take = (ownerId: string, index: number) =>
      allocations.insert({
        id: `alloc_${ownerId}`,
        hostId: 'eu-ro-1-rtx5090-1',
        ownerKind: 'pod',
        ownerId,
        gpuCount: 1,
        gpuIndices: [index],
        vcpus: 16,
        memoryGb: 62,
        diskGb: 100,
        createdAt: new Date().toISOString(),
      })
    await take('pod-a', 0)
    expect((await get<{ availability: string }>(path)).availability).toBe('MEDIUM')
    await take('pod-b', 1)
    expect((await get<{ availability: string }>(path)).availability).toBe('NONE')
    const dc = await get<{ gpuAvailability: Array<{ id: string; availability: string }> }>(
      '/v2/catalog/datacenters/EU-RO-1?include=GPU_AVAILABILITY',
    )
    expect(dc.gpuAvailability.find((g) => g.id === RTX_5090)?.availability).toBe('NONE')
    await allocations.remove('pod', 'pod-a')
    await allocations.remove('pod', 'pod-b')
    expect((await get<{ availability: string }>(path)).availability).toBe('HIGH')
  })

  it('lists CPU flavors with RAM per vCPU and their valid vCPU counts', async () => {
    const { cpus } = await get<{ cpus: Array<Record<string, unknown>> }>('/v2/catalog/cpus')
    const cpu3c = cpus.find((c) => c.id === 'cpu3c')
    expect(cpu3c).toMatchObject({
      name: 'Compute-Optimized',
      group: 'Gen 3',
      ramGbPerVcpu: 2,
      vcpu: { min: 2, max: expect.any(Number) },
      price: { securePerVcpu: expect.any(Number), serverlessPerVcpu: expect.any(Number) },
      availability: 'HIGH',
    })
    const counts = cpu3c!.vcpuCounts as number[]
    expect(counts[0]).toBe(2)
    expect(counts.every((n) => Number.isInteger(Math.log2(n)))).toBe(true)
    expect(counts[counts.length - 1]).toBe((cpu3c!.vcpu as { max: number }).max)
    expect((await get<{ id: string }>('/v2/catalog/cpus/cpu5g')).id).toBe('cpu5g')
  })

  it('lists data centers with global networking, and filters them', async () => {
    const { dataCenters } = await get<{
      dataCenters: Array<{ id: string; globalNetwork: boolean; region: string }>
    }>('/v2/catalog/datacenters')
    expect(dataCenters.map((d) => d.id)).toEqual(
      expect.arrayContaining(['US-KS-2', 'EU-RO-1', 'CA-MTL-1', 'EUR-IS-1']),
    )
    expect(dataCenters.some((d) => d.globalNetwork)).toBe(true)
    expect(dataCenters.some((d) => !d.globalNetwork)).toBe(true)
    const global = await get<{ dataCenters: Array<{ globalNetwork: boolean }> }>(
      '/v2/catalog/datacenters?globalNetwork=true',
    )
    expect(global.dataCenters.length).toBeGreaterThan(0)
    expect(global.dataCenters.every((d) => d.globalNetwork)).toBe(true)
    const europe = await get<{ dataCenters: Array<{ region: string }> }>(
      '/v2/catalog/datacenters?regions=EUROPE',
    )
    expect(europe.dataCenters.every((d) => d.region === 'EUROPE')).toBe(true)
    const withCpu = await get<{ cpuAvailability: unknown[] }>(
      '/v2/catalog/datacenters/CA-MTL-1?include=CPU_AVAILABILITY',
    )
    expect(withCpu.cpuAvailability.length).toBeGreaterThan(0)
  })

  it('takes query lists comma-separated and repeated alike, as RunPod declares them', async () => {
    type Centers = { dataCenters: Array<{ id: string; region: string; countryCode?: string }> }
    const ids = (answer: Centers) => answer.dataCenters.map((d) => d.id).sort()
    const comma = await get<Centers>('/v2/catalog/datacenters?regions=EUROPE,NORTH_AMERICA')
    const repeated = await get<Centers>(
      '/v2/catalog/datacenters?regions=EUROPE&regions=NORTH_AMERICA',
    )
    expect(ids(repeated)).toEqual(ids(comma))
    expect(new Set(comma.dataCenters.map((d) => d.region))).toEqual(
      new Set(['EUROPE', 'NORTH_AMERICA']),
    )
    const countries = await get<Centers>('/v2/catalog/datacenters?countryCodes=RO&countryCodes=IS')
    expect(new Set(countries.dataCenters.map((d) => d.countryCode))).toEqual(new Set(['RO', 'IS']))
    const { gpus } = await get<{ gpus: Array<{ dataCenters?: unknown[] }> }>(
      '/v2/catalog/gpus?include=AVAILABILITY&product=POD&product=SERVERLESS&cudaVersions=12.8&cudaVersions=12.4',
    )
    expect(gpus.length).toBeGreaterThan(0)
    expect(gpus.every((g) => Array.isArray(g.dataCenters))).toBe(true)
    expect(
      (await status('/v2/catalog/gpus?include=AVAILABILITY&include=EVERYTHING')).body.errors,
    ).toEqual(['querystring.include: "EVERYTHING" is not one of AVAILABILITY'])

    const document = (await (await platform.call('/v2/openapi.json', { key: null })).json()) as {
      paths: Record<string, { get: { parameters: Array<Record<string, unknown>> } }>
      components: { parameters: Record<string, Record<string, unknown>> }
    }
    // A parameter several operations share is a reference to components.parameters.
    const parameter = (path: string, name: string) =>
      document.paths[path]!.get.parameters.map((p) =>
        typeof p.$ref === 'string' ? document.components.parameters[p.$ref.split('/').pop()!]! : p,
      ).find((p) => p.name === name)
    for (const [path, name] of [
      ['/v2/catalog/gpus', 'include'],
      ['/v2/catalog/gpus', 'product'],
      ['/v2/catalog/gpus', 'countryCodes'],
      ['/v2/catalog/gpus/{id}', 'cudaVersions'],
      ['/v2/catalog/cpus', 'include'],
      ['/v2/catalog/datacenters', 'regions'],
      ['/v2/catalog/datacenters', 'compliance'],
      ['/v2/catalog/datacenters', 'networkVolumeTypes'],
      ['/v2/catalog/datacenters/{id}', 'include'],
    ] as const) {
      expect(parameter(path, name), `${path} ${name}`).toMatchObject({
        in: 'query',
        style: 'form',
        explode: false,
        schema: { type: 'array', items: { type: 'string' } },
      })
    }
  })

  it('rejects bad query values with the parameter named', async () => {
    expect(await status('/v2/catalog/cpus?vcpuCount=3')).toMatchObject({
      status: 422,
      body: { errors: ['querystring.vcpuCount: must be a power of two >= 2'] },
    })
    expect((await status('/v2/catalog/cpus?vcpuCount=1')).status).toBe(422)
    expect((await status('/v2/catalog/gpus?count=0')).body.errors).toEqual([
      'querystring.count: must be >= 1',
    ])
    expect((await status('/v2/catalog/gpus?cloud=ALL')).status).toBe(422)
    expect((await status('/v2/catalog/gpus?include=EVERYTHING')).body.errors).toEqual([
      'querystring.include: "EVERYTHING" is not one of AVAILABILITY',
    ])
    expect(await status('/v2/catalog/gpus?cudaVersions=12.8&minCudaVersion=12')).toMatchObject({
      status: 400,
      body: { detail: 'give cudaVersions or minCudaVersion, not both' },
    })
    expect((await status('/v2/catalog/gpus?minCudaVersion=twelve')).status).toBe(422)
    expect((await status('/v2/catalog/datacenters/XX-NONE-1')).status).toBe(404)
    expect((await status('/v2/catalog/cpus/cpu9z')).status).toBe(404)
  })
})
