import { describe, expect, it } from 'vitest'
import { seededRandom } from '../../shared/seeded-random.js'
import { freeCapacity, type Allocation } from './capacity.js'
import { CapacityIndex } from './capacity-index.js'
import type { Host } from './fleet.js'

function host(id: string, extra: Partial<Host> = {}): Host {
  return {
    id,
    dataCenterId: 'US-KS-2',
    cloud: 'SECURE',
    gpu: null,
    vcpus: 32,
    memoryGb: 128,
    diskGb: 500,
    driver: 'process',
    cpuFlavors: ['cpu3c'],
    simulated: true,
    ...extra,
  }
}

const gpuHost = (id: string, dataCenterId = 'US-KS-2') =>
  host(id, {
    dataCenterId,
    gpu: { typeId: 'NVIDIA A40', count: 4, cudaVersion: '12.8' },
    cpuFlavors: [],
  })

let seq = 0
function allocation(hostId: string, rest: Partial<Allocation> = {}): Allocation {
  seq++
  return {
    id: `a${seq}`,
    hostId,
    ownerKind: 'pod',
    ownerId: `pod${seq}`,
    gpuCount: 0,
    gpuIndices: [],
    vcpus: 2,
    memoryGb: 4,
    diskGb: 10,
    createdAt: '2026-01-01T00:00:00.000Z',
    ...rest,
  }
}

describe('CapacityIndex', () => {
  it("keeps each host's free capacity as freeCapacity() computes it, as allocations come and go", () => {
    const hosts = [gpuHost('g1'), gpuHost('g2', 'EU-RO-1'), host('c1'), host('c2')]
    const rand = seededRandom(11)
    const index = new CapacityIndex(hosts)
    let held: Allocation[] = []
    for (let step = 0; step < 500; step++) {
      if (held.length > 0 && rand() < 0.4) {
        const victim = held[Math.floor(rand() * held.length)]!
        expect(index.remove(victim.ownerKind, victim.ownerId)).toEqual(victim)
        held = held.filter((a) => a !== victim)
      } else {
        const on = hosts[Math.floor(rand() * hosts.length)]!
        const gpuIndices = on.gpu ? [Math.floor(rand() * 4)] : []
        const added = allocation(on.id, {
          gpuIndices,
          gpuCount: gpuIndices.length,
          vcpus: Math.floor(rand() * 40),
          diskGb: Math.floor(rand() * 300),
        })
        index.add(added)
        held.push(added)
      }
      for (const h of hosts) expect(index.free(h.id)).toEqual(freeCapacity(h, held))
      expect(index.allocations()).toEqual(held)
    }
  })

  it('lists the hosts with room in best-fit order: fewest free units, then id, per data center', () => {
    const hosts = [gpuHost('g-b'), gpuHost('g-a'), gpuHost('g-c', 'EU-RO-1')]
    const index = new CapacityIndex(hosts, [
      allocation('g-c', { gpuIndices: [0, 1, 2], gpuCount: 3 }),
      allocation('g-b', { gpuIndices: [3], gpuCount: 1 }),
    ])
    const ids = (found: Iterable<Host>) => [...found].map((h) => h.id)
    expect(ids(index.gpuCandidates('NVIDIA A40', 1))).toEqual(['g-c', 'g-b', 'g-a'])
    expect(ids(index.gpuCandidates('NVIDIA A40', 2))).toEqual(['g-b', 'g-a'])
    expect(ids(index.gpuCandidates('NVIDIA A40', 4))).toEqual(['g-a'])
    expect(ids(index.gpuCandidates('NVIDIA A40', 1, 'EU-RO-1'))).toEqual(['g-c'])
    expect(ids(index.gpuCandidates('NVIDIA H100 80GB HBM3', 1))).toEqual([])
    expect(ids(index.cpuCandidates('cpu3c', 2))).toEqual([])
  })

  it('refuses a second allocation of one owner, and keeps those of hosts gone from the fleet', () => {
    const index = new CapacityIndex([host('c1')])
    const first = allocation('c1')
    index.add(first)
    expect(() => index.add({ ...first, id: 'other' })).toThrow(/already holds/)
    const orphan = allocation('gone')
    index.add(orphan)
    expect(index.findByOwner('pod', orphan.ownerId)).toEqual(orphan)
    expect(index.free('c1')).toMatchObject({ vcpus: 30 })
    expect(index.free('gone')).toBeUndefined()
    expect(index.remove('pod', orphan.ownerId)).toEqual(orphan)
    expect(index.remove('pod', orphan.ownerId)).toBeUndefined()
  })
})
