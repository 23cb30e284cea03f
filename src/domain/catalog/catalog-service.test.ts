import { beforeEach, describe, expect, it } from 'vitest'
import type { Allocation, AllocationOwnerKind } from './capacity.js'
import { CatalogService } from './catalog-service.js'
import { demoFleet } from './demo-fleet.js'
import { withLocalHost, type Host } from './fleet.js'
import { parseFleet } from './fleet-parse.js'
import { DEFAULT_GPU_PRICES } from './price-table.js'
import type { AllocationRepo } from './ports.js'

class MemoryAllocationRepo implements AllocationRepo {
  readonly rows: Allocation[] = []
  async list() {
    return [...this.rows]
  }
  async listByHost(hostId: string) {
    return this.rows.filter((a) => a.hostId === hostId)
  }
  async insert(allocation: Allocation) {
    if (
      this.rows.some(
        (a) => a.ownerKind === allocation.ownerKind && a.ownerId === allocation.ownerId,
      )
    ) {
      throw new Error('owner already holds an allocation')
    }
    this.rows.push(allocation)
  }
  async remove(ownerKind: AllocationOwnerKind, ownerId: string) {
    const i = this.rows.findIndex((a) => a.ownerKind === ownerKind && a.ownerId === ownerId)
    if (i < 0) return false
    this.rows.splice(i, 1)
    return true
  }
  async findByOwner(ownerKind: AllocationOwnerKind, ownerId: string) {
    return this.rows.find((a) => a.ownerKind === ownerKind && a.ownerId === ownerId)
  }
}

const RTX4090 = 'NVIDIA GeForce RTX 4090'
const H100 = 'NVIDIA H100 80GB HBM3'

let n = 0
function take(host: Host | undefined, gpuIndices: number[], vcpus = 0, memoryGb = 0): Allocation {
  n++
  return {
    id: `alloc_${n}`,
    hostId: host!.id,
    ownerKind: 'pod',
    ownerId: `pod${n}`,
    gpuCount: gpuIndices.length,
    gpuIndices,
    vcpus,
    memoryGb,
    diskGb: 10,
    createdAt: '2026-01-01T00:00:00.000Z',
  }
}

const host = (id: string) => demoFleet.hosts.find((h) => h.id === id)

describe('CatalogService on the demo fleet', () => {
  let repo: MemoryAllocationRepo
  let catalog: CatalogService

  beforeEach(() => {
    repo = new MemoryAllocationRepo()
    catalog = new CatalogService(demoFleet, repo)
  })

  it('lists only the GPU types of the fleet, in table order', async () => {
    const gpus = await catalog.listGpuTypes({})
    expect(gpus.map((g) => g.name)).toEqual([
      'MI300X',
      'A100 SXM',
      'A40',
      'RTX 3090',
      'RTX 4090',
      'RTX 5090',
      'H100 SXM',
      'H200 SXM',
      'L40S',
      'RTX A5000',
      'RTX A6000',
    ])
  })

  it('returns the v2 GpuType shape', async () => {
    expect(await catalog.getGpuType(RTX4090, {})).toEqual({
      id: RTX4090,
      name: 'RTX 4090',
      pool: 'ADA_24',
      manufacturer: 'NVIDIA',
      memory: 24,
      secure: true,
      community: true,
      price: { secure: 0.59, community: 0.34, serverless: 1.1 },
      maxCount: { secure: 4, community: 4 },
      availability: 'HIGH',
    })
  })

  it("lists both clouds' prices, with a zero maxCount where a cloud has no host", async () => {
    const h100 = await catalog.getGpuType(H100)
    expect(h100).toMatchObject({
      secure: true,
      community: false,
      maxCount: { secure: 8, community: 0 },
    })
    expect(h100?.price).toEqual({
      secure: 2.69,
      community: DEFAULT_GPU_PRICES[H100]!.community,
      serverless: 4.18,
    })
    const mi300x = await catalog.getGpuType('AMD Instinct MI300X OAM')
    expect(mi300x).toMatchObject({
      manufacturer: 'AMD',
      pool: null,
      memory: 192,
    })
    expect(mi300x?.price).not.toHaveProperty('serverless')
  })

  it('gives undefined for a type that is unknown or not in the fleet', async () => {
    expect(await catalog.getGpuType('RTX 9999')).toBeUndefined()
    expect(await catalog.getGpuType('NVIDIA B200')).toBeUndefined()
  })

  it('adds data centers and CUDA versions on detail', async () => {
    const gpu = await catalog.getGpuType(RTX4090, { detail: true })
    expect(gpu?.dataCenters).toEqual([
      { id: 'US-KS-2', name: 'US Kansas 2', availability: 'HIGH' },
      { id: 'CA-MTL-1', name: 'CA Montreal 1', availability: 'HIGH' },
    ])
    expect(gpu?.cudaVersions).toEqual([
      { version: '12.8', available: true },
      { version: '12.6', available: true },
    ])
    const community = await catalog.getGpuType(RTX4090, { detail: true, cloud: 'COMMUNITY' })
    expect(community?.dataCenters?.map((d) => d.id)).toEqual(['CA-MTL-1'])
    expect(community?.cudaVersions).toEqual([{ version: '12.6', available: true }])
    expect((await catalog.getGpuType(RTX4090))?.dataCenters).toBeUndefined()
  })

  it('filters availability by count, cloud and CUDA version', async () => {
    expect((await catalog.getGpuType(RTX4090, { count: 4 }))?.availability).toBe('HIGH')
    expect((await catalog.getGpuType(RTX4090, { count: 5 }))?.availability).toBe('NONE')
    expect((await catalog.getGpuType(RTX4090, { cudaVersions: ['12.6'] }))?.availability).toBe(
      'HIGH',
    )
    expect((await catalog.getGpuType(RTX4090, { cudaVersions: ['12.4'] }))?.availability).toBe(
      'NONE',
    )
    expect(
      (await catalog.getGpuType(RTX4090, { minCudaVersion: '12.7', cloud: 'COMMUNITY' }))
        ?.availability,
    ).toBe('NONE')
    expect(
      (await catalog.getGpuType(RTX4090, { minCudaVersion: '12.7', cloud: 'SECURE' }))
        ?.availability,
    ).toBe('HIGH')
  })

  it('reflects allocations: HIGH -> MEDIUM -> LOW -> NONE', async () => {
    const h100 = host('us-ks-2-h100-1')
    const level = async () => (await catalog.getGpuType(H100))?.availability
    expect(await level()).toBe('HIGH')
    await repo.insert(take(h100, [0, 1, 2, 3], 96, 1000))
    expect(await level()).toBe('MEDIUM')
    await repo.insert(take(h100, [4, 5, 6], 72, 750))
    expect(await level()).toBe('LOW')
    await repo.insert(take(h100, [7], 24, 250))
    expect(await level()).toBe('NONE')
    const detail = await catalog.getGpuType(H100, { detail: true })
    expect(detail?.dataCenters).toEqual([
      { id: 'US-KS-2', name: 'US Kansas 2', availability: 'NONE' },
    ])
    expect(detail?.cudaVersions).toEqual([{ version: '12.9', available: false }])
    expect(await catalog.availableGpuCounts(H100)).toEqual([])
    expect(await catalog.availableGpuCounts(RTX4090, 'SECURE')).toEqual([1, 2, 3, 4])
  })

  it('returns the v2 CpuType shape for flavors some host offers', async () => {
    const cpus = await catalog.listCpuTypes({})
    expect(cpus.map((c) => c.id)).toEqual(['cpu3c', 'cpu3g', 'cpu3m', 'cpu5c', 'cpu5g', 'cpu5m'])
    expect(await catalog.getCpuType('cpu3c')).toEqual({
      id: 'cpu3c',
      name: 'Compute-Optimized',
      group: 'Gen 3',
      vcpu: { min: 2, max: 64 },
      vcpuCounts: [2, 4, 8, 16, 32, 64],
      ramGbPerVcpu: 2,
      price: { securePerVcpu: 0.04, serverlessPerVcpu: 0.03 },
      availability: 'HIGH',
    })
    expect((await catalog.getCpuType('cpu3m'))?.vcpu).toEqual({ min: 2, max: 64 })
    expect(await catalog.getCpuType('cpu4c')).toBeUndefined()
  })

  it('shows CPU stock per data center and for a vCPU count', async () => {
    const cpu3g = await catalog.getCpuType('cpu3g', { detail: true })
    expect(cpu3g?.dataCenters).toEqual([
      { id: 'US-KS-2', name: 'US Kansas 2', availability: 'HIGH' },
      { id: 'CA-MTL-1', name: 'CA Montreal 1', availability: 'HIGH' },
    ])
    expect((await catalog.getCpuType('cpu3g', { vcpuCount: 64 }))?.availability).toBe('HIGH')
    expect((await catalog.getCpuType('cpu3g', { vcpuCount: 128 }))?.availability).toBe('NONE')
    await repo.insert(take(host('us-ks-2-cpu-1'), [], 60, 240))
    expect((await catalog.getCpuType('cpu3g', { vcpuCount: 8 }))?.availability).toBe('MEDIUM')
    expect((await catalog.getCpuType('cpu3g', { vcpuCount: 32 }))?.availability).toBe('MEDIUM')
    expect((await catalog.getCpuType('cpu3g', { vcpuCount: 64 }))?.availability).toBe('NONE')
  })

  it('returns the v2 DataCenter shape and filters data centers', async () => {
    expect(await catalog.getDataCenter('EU-RO-1')).toEqual({
      id: 'EU-RO-1',
      name: 'EU Romania 1',
      region: 'EUROPE',
      countryCode: 'RO',
      globalNetwork: true,
      networkVolumeTypes: ['STANDARD'],
      compliance: ['GDPR', 'ISO_IEC_27001', 'SOC_2_TYPE_2'],
    })
    expect(await catalog.getDataCenter('US-XX-1')).toBeUndefined()
    const ids = async (q: Parameters<CatalogService['listDataCenters']>[0]) =>
      (await catalog.listDataCenters(q)).map((d) => d.id)
    expect(await ids({})).toEqual(['US-KS-2', 'EU-RO-1', 'CA-MTL-1', 'EUR-IS-1'])
    expect(await ids({ globalNetwork: true })).toEqual(['US-KS-2', 'EU-RO-1'])
    expect(await ids({ globalNetwork: false })).toEqual(['CA-MTL-1', 'EUR-IS-1'])
    expect(await ids({ regions: ['EUROPE', 'ASIA'] })).toEqual(['EU-RO-1', 'EUR-IS-1'])
    expect(await ids({ networkVolumeTypes: ['HIGH_PERFORMANCE'] })).toEqual(['US-KS-2', 'EUR-IS-1'])
    expect(await ids({ compliance: ['GDPR', 'RENEWABLE'] })).toEqual(['EUR-IS-1'])
    expect(await ids({ compliance: ['ITAR'] })).toEqual([])
  })

  it('adds GPU and CPU availability of a data center on request', async () => {
    const dc = await catalog.getDataCenter('CA-MTL-1', { gpuDetail: true, cpuDetail: true })
    expect(dc?.gpuAvailability).toEqual([
      { id: 'AMD Instinct MI300X OAM', name: 'MI300X', availability: 'HIGH' },
      { id: 'NVIDIA A40', name: 'A40', availability: 'HIGH' },
      { id: RTX4090, name: 'RTX 4090', availability: 'HIGH' },
      { id: 'NVIDIA RTX A5000', name: 'RTX A5000', availability: 'HIGH' },
    ])
    expect(dc?.cpuAvailability).toEqual([
      { id: 'cpu3c', name: 'Compute-Optimized', availability: 'HIGH' },
      { id: 'cpu3g', name: 'General Purpose', availability: 'HIGH' },
    ])
    const plain = await catalog.getDataCenter('CA-MTL-1', { gpuDetail: false })
    expect(plain).not.toHaveProperty('gpuAvailability')
    expect(plain).not.toHaveProperty('cpuAvailability')
  })

  it('exposes the fleet and a snapshot for the scheduler', async () => {
    const allocation = take(host('eu-ro-1-l40s-1'), [0], 16, 62)
    await repo.insert(allocation)
    expect(catalog.fleet).toBe(demoFleet)
    expect(await catalog.snapshot()).toEqual({
      hosts: demoFleet.hosts,
      allocations: [allocation],
      unavailable: {},
    })
  })

  it('finds a host by id as it offers itself, also after its offer changed', () => {
    const declared = host('eu-ro-1-l40s-1')!
    let offered: readonly Host[] = demoFleet.hosts
    const reporting = new CatalogService(demoFleet, repo, undefined, () => offered)
    expect(reporting.host(declared.id)).toBe(declared)
    expect(reporting.host('no-such-host')).toBeUndefined()
    // The host reported fewer vCPUs: the board hands out another array with its lowered offer.
    const lowered = { ...declared, vcpus: 8 }
    offered = demoFleet.hosts.map((h) => (h.id === declared.id ? lowered : h))
    expect(reporting.host(declared.id)).toBe(lowered)
  })

  it('counts no stock on hosts that take no new pods (DOWN, cordoned, draining)', async () => {
    let unavailable: Record<string, string> = {}
    const gated = new CatalogService(demoFleet, repo, () => unavailable)
    const h100 = 'NVIDIA H100 80GB HBM3'
    expect((await gated.getGpuType(h100))?.availability).not.toBe('NONE')
    expect(await gated.availableGpuCounts(h100)).toContain(8)
    unavailable = { 'us-ks-2-h100-1': 'is DOWN since 2026-01-01T00:00:00.000Z: gone' }
    const view = await gated.getGpuType(h100, { detail: true })
    expect(view?.availability).toBe('NONE')
    // Still listed, with its price and size: the host comes back.
    expect(view?.maxCount.secure).toBe(8)
    expect(await gated.availableGpuCounts(h100)).toEqual([])
    expect((await gated.snapshot()).unavailable).toEqual(unavailable)
    const cpu = await gated.getCpuType('cpu3c', { detail: true })
    unavailable = { 'us-ks-2-cpu-1': 'is cordoned', 'ca-mtl-1-cpu-1': 'is draining' }
    expect((await gated.getCpuType('cpu3c'))?.availability).toBe('NONE')
    expect(cpu?.availability).not.toBe('NONE')
    const dc = await gated.getDataCenter('US-KS-2', { cpuDetail: true })
    expect(dc?.cpuAvailability?.find((a) => a.id === 'cpu3c')?.availability).toBe('NONE')
  })
})

describe('CatalogService on the none fleet with a discovered machine', () => {
  it('lists the local GPU and the default CPU flavors sized to the machine', async () => {
    const fleet = withLocalHost(
      parseFleet(
        { dataCenters: [{ id: 'LOCAL-1', name: 'Local machine', region: 'UNKNOWN' }] },
        't',
      ),
      {
        vcpus: 12,
        memoryGb: 30,
        diskGb: 100,
        gpus: { typeId: RTX4090, count: 1, cudaVersion: '12.2' },
      },
    )
    const catalog = new CatalogService(fleet, new MemoryAllocationRepo())
    expect((await catalog.listGpuTypes()).map((g) => [g.id, g.maxCount])).toEqual([
      [RTX4090, { secure: 1, community: 0 }],
    ])
    const cpus = await catalog.listCpuTypes()
    // 12 vCPUs and 30 GB: cpu3c (2 GB/vCPU) fits 8 vCPUs, cpu3g (4 GB/vCPU) only 4.
    expect(cpus.map((c) => [c.id, c.vcpu.max, c.vcpuCounts])).toEqual([
      ['cpu3c', 8, [2, 4, 8]],
      ['cpu3g', 4, [2, 4]],
    ])
  })

  it('lists nothing when the fleet has no hosts', async () => {
    const fleet = parseFleet(
      {
        dataCenters: [{ id: 'LOCAL-1', name: 'Local machine', region: 'UNKNOWN' }],
        localHost: false,
      },
      't',
    )
    const catalog = new CatalogService(fleet, new MemoryAllocationRepo())
    expect(await catalog.listGpuTypes()).toEqual([])
    expect(await catalog.listCpuTypes()).toEqual([])
    expect(await catalog.listDataCenters({ gpuDetail: true, cpuDetail: true })).toEqual([
      expect.objectContaining({ id: 'LOCAL-1', gpuAvailability: [], cpuAvailability: [] }),
    ])
  })
})
