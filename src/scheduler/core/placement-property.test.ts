import { describe, expect, it } from 'vitest'
import type { Allocation } from '../../domain/catalog/capacity.js'
import { CapacityIndex } from '../../domain/catalog/capacity-index.js'
import type { Host } from '../../domain/catalog/fleet.js'
import { place, type PlacementRequest } from './placement.js'
import { seededRandom } from '../../shared/seeded-random.js'
import {
  A40,
  cpuHost,
  DATA_CENTERS,
  gpuHost,
  H100,
  MI300X,
  RTX4090,
} from '../../../test/support/placement-fixtures.js'

describe('place: never over-commits (property)', () => {
  const fleet: Host[] = [
    gpuHost('ks-h100-1', 'US-KS-2', H100, 8, { diskGb: 2000 }),
    gpuHost('ks-h100-2', 'US-KS-2', H100, 4, {
      gpu: { typeId: H100, count: 4, cudaVersion: '12.4' },
      cpuFlavors: ['cpu3c', 'cpu3g'],
    }),
    gpuHost('ks-4090-c', 'US-KS-2', RTX4090, 4, { cloud: 'COMMUNITY', diskGb: 600 }),
    gpuHost('ro-a40', 'EU-RO-1', A40, 4, { vcpus: 30, memoryGb: 100 }),
    gpuHost('ro-h100', 'EU-RO-1', H100, 2, {
      gpu: { typeId: H100, count: 2, cudaVersion: '12.9' },
    }),
    gpuHost('mtl-mi300x', 'CA-MTL-1', MI300X, 8, { diskGb: 4000 }),
    gpuHost('mtl-4090', 'CA-MTL-1', RTX4090, 2, { cpuFlavors: ['cpu3c'] }),
    cpuHost('ks-cpu', 'US-KS-2', ['cpu3c', 'cpu3g', 'cpu3m'], 64, 512),
    cpuHost('ro-cpu', 'EU-RO-1', ['cpu5c', 'cpu5g', 'cpu5m'], 32, 128, { diskGb: 400 }),
    cpuHost('is-cpu', 'EUR-IS-1', ['cpu3c', 'cpu5c'], 16, 40, { cloud: 'COMMUNITY' }),
  ]
  const gpuTypes = [H100, H100, A40, RTX4090, MI300X]
  const flavors = ['cpu3c', 'cpu3g', 'cpu3m', 'cpu5c', 'cpu5g', 'cpu5m']
  const dcIds = [...DATA_CENTERS.map((d) => d.id), 'EU-SE-1']
  const cudas = ['11.8', '12.4', '12.8', '12.9', '13.0']

  function randomRequest(rand: () => number): PlacementRequest {
    const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!
    const dataCenterIds = dcIds.filter(() => rand() < 0.3)
    const base = {
      dataCenterIds: rand() < 0.5 ? [] : dataCenterIds,
      globalNetworking: rand() < 0.2,
      diskGb: Math.floor(rand() * 400),
      ...(rand() < 0.3 ? { cloud: pick(['SECURE', 'COMMUNITY'] as const) } : {}),
      ...(rand() < 0.1 ? { pinnedHostId: pick(fleet).id } : {}),
      ...(rand() < 0.2 ? { preferredHostId: pick(fleet).id } : {}),
    }
    if (rand() < 0.6) {
      const r = rand()
      return {
        ...base,
        compute: {
          kind: 'gpu',
          gpuTypeId: pick(gpuTypes),
          gpuCount: 1 + Math.floor(rand() * rand() * 8),
          ...(r < 0.15 ? { minCudaVersion: pick(cudas) } : {}),
          ...(r > 0.9 ? { cudaVersions: cudas.filter(() => rand() < 0.5) } : {}),
        },
      }
    }
    return {
      ...base,
      compute: {
        kind: 'cpu',
        flavorId: pick(flavors),
        vcpuCount: 2 ** (1 + Math.floor(rand() * 4)),
      },
    }
  }

  function checkInvariants(allocations: readonly Allocation[]) {
    for (const host of fleet) {
      const mine = allocations.filter((a) => a.hostId === host.id)
      const indices = mine.flatMap((a) => a.gpuIndices)
      expect(new Set(indices).size, `${host.id} GPU indices unique`).toBe(indices.length)
      for (const i of indices) {
        expect(i).toBeGreaterThanOrEqual(0)
        expect(i).toBeLessThan(host.gpu?.count ?? 0)
      }
      const sum = (pick: (a: Allocation) => number) => mine.reduce((n, a) => n + pick(a), 0)
      expect(
        sum((a) => a.vcpus),
        `${host.id} vCPUs`,
      ).toBeLessThanOrEqual(host.vcpus)
      expect(
        sum((a) => a.memoryGb),
        `${host.id} memory`,
      ).toBeLessThanOrEqual(host.memoryGb)
      expect(
        sum((a) => a.diskGb),
        `${host.id} disk`,
      ).toBeLessThanOrEqual(host.diskGb)
    }
  }

  it.each([1, 7, 42, 2026])('seed %i: 400 requests, some pods released', (seed) => {
    const rand = seededRandom(seed)
    let allocations: Allocation[] = []
    // Kept alongside, as the store keeps it: changed as allocations come and go.
    const index = new CapacityIndex(fleet)
    let placedCount = 0
    for (let step = 0; step < 400; step++) {
      // Release now and then, so freed indices and capacity get reused.
      if (allocations.length > 0 && rand() < 0.15) {
        const victim = Math.floor(rand() * allocations.length)
        const released = allocations[victim]!
        index.remove(released.ownerKind, released.ownerId)
        allocations = allocations.filter((_, i) => i !== victim)
      }
      const request = randomRequest(rand)
      const snapshot = { hosts: fleet, dataCenters: DATA_CENTERS, allocations }
      const result = place(snapshot, request)
      expect(place(snapshot, request), 'deterministic').toEqual(result)
      expect(place({ ...snapshot, allocations: index }, request), 'indexed').toEqual(result)
      expect(index.allocations()).toEqual(allocations)
      if (!result.ok) {
        expect(result.detail).not.toBe('')
        expect(result.rejections.map((r) => r.hostId)).toEqual(fleet.map((h) => h.id))
        continue
      }
      const p = result.placement
      const host = fleet.find((h) => h.id === p.hostId)!
      const c = request.compute
      expect(p.dataCenterId).toBe(host.dataCenterId)
      if (request.dataCenterIds.length > 0) expect(request.dataCenterIds).toContain(p.dataCenterId)
      if (request.cloud) expect(host.cloud).toBe(request.cloud)
      if (request.pinnedHostId) expect(p.hostId).toBe(request.pinnedHostId)
      if (request.globalNetworking) {
        expect(DATA_CENTERS.find((d) => d.id === p.dataCenterId)!.globalNetwork).toBe(true)
      }
      if (c.kind === 'gpu') {
        expect(host.gpu?.typeId).toBe(c.gpuTypeId)
        expect(p.gpuIndices).toHaveLength(c.gpuCount)
      } else {
        expect(host.cpuFlavors).toContain(c.flavorId)
        expect(p.gpuIndices).toEqual([])
      }
      placedCount++
      allocations = [
        ...allocations,
        {
          id: `p${step}`,
          hostId: p.hostId,
          ownerKind: 'pod',
          ownerId: `pod-${step}`,
          gpuCount: p.gpuIndices.length,
          gpuIndices: p.gpuIndices,
          vcpus: p.vcpus,
          memoryGb: p.memoryGb,
          diskGb: p.diskGb,
          createdAt: '2026-01-01T00:00:00.000Z',
        },
      ]
      index.add(allocations.at(-1)!)
      checkInvariants(allocations)
    }
    // The run must actually exercise placement, not fail every request.
    expect(placedCount).toBeGreaterThan(40)
  })
})
