import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { Allocation } from '../../src/domain/catalog/capacity.js'
import type { Host } from '../../src/domain/catalog/fleet.js'
import { newId } from '../../src/shared/ids.js'
import { AllocationLedger } from '../../src/store/allocation-ledger.js'
import { KyselyAllocationRepo } from '../../src/store/allocation-repo.js'
import type { Store } from '../../src/store/open-store.js'
import { testStores } from '../support/stores.js'

const host: Host = {
  id: 'cpu-1',
  dataCenterId: 'US-KS-2',
  cloud: 'SECURE',
  gpu: null,
  vcpus: 32,
  memoryGb: 128,
  diskGb: 1000,
  driver: 'process',
  cpuFlavors: ['cpu3c'],
  simulated: true,
}

function allocation(vcpus = 2): Allocation {
  return {
    id: newId.allocation(),
    hostId: host.id,
    ownerKind: 'pod',
    ownerId: newId.pod(),
    gpuCount: 0,
    gpuIndices: [],
    vcpus,
    memoryGb: vcpus * 2,
    diskGb: 10,
    createdAt: '2026-01-01T00:00:00.000Z',
  }
}

const noLock = async () => {}

/** The index as one unit sees it (vCPUs free on the host). */
async function freeVcpus(ledger: AllocationLedger): Promise<number> {
  return ledger.exclusive(noLock, async (_, allocations) => allocations.index.free(host.id)!.vcpus)
}

describe.each(testStores())('AllocationLedger on $name', ({ open }) => {
  let store: Store
  let ledger: AllocationLedger

  beforeEach(async () => {
    store = await open()
    ledger = new AllocationLedger(store.db, [host])
  })

  afterEach(async () => {
    await store.close()
  })

  it('keeps its index through its own writes, in units and outside them, without reading them back', async () => {
    const kept: Allocation[] = []
    for (let i = 0; i < 5; i++) {
      const added = allocation()
      await ledger.exclusive(noLock, (_, allocations) => allocations.insert(added))
      kept.push(added)
    }
    expect(await ledger.repo().remove('pod', kept[0]!.ownerId)).toBe(true)
    expect(await ledger.repo().remove('pod', kept[0]!.ownerId)).toBe(false)
    await ledger.repo().insert(allocation(4))
    expect(await freeVcpus(ledger)).toBe(32 - 4 * 2 - 4)
    expect(ledger.rebuilds).toBe(1)
    expect(await new KyselyAllocationRepo(store.db).list()).toHaveLength(5)
  })

  it("sees another writer's changes (another replica, a tool) at its next unit", async () => {
    await ledger.exclusive(noLock, (_, allocations) => allocations.insert(allocation()))
    const other = new KyselyAllocationRepo(store.db)
    const foreign = allocation(8)
    await other.insert(foreign)
    expect(await freeVcpus(ledger)).toBe(32 - 2 - 8)
    await other.remove('pod', foreign.ownerId)
    expect(await freeVcpus(ledger)).toBe(30)
    // Its own write right after a foreign one is not taken for the whole change.
    await other.insert(allocation(8))
    await ledger.repo().insert(allocation(4))
    expect(await freeVcpus(ledger)).toBe(32 - 2 - 8 - 4)
    const second = new AllocationLedger(store.db, [host])
    await second.exclusive(noLock, (_, allocations) => allocations.insert(allocation(16)))
    expect(await freeVcpus(ledger)).toBe(32 - 2 - 8 - 4 - 16)
  })

  it('takes back what a failed unit wrote', async () => {
    await ledger.exclusive(noLock, (_, allocations) => allocations.insert(allocation()))
    await expect(
      ledger.exclusive(noLock, async (_, allocations) => {
        await allocations.insert(allocation(8))
        throw new Error('the pod insert failed')
      }),
    ).rejects.toThrow('the pod insert failed')
    expect(await freeVcpus(ledger)).toBe(30)
    expect(await new KyselyAllocationRepo(store.db).list()).toHaveLength(1)
  })

  it("takes in another replica's few changes without reading every allocation again", async () => {
    const second = new AllocationLedger(store.db, [host])
    const mine: Allocation[] = []
    // Creates taken in turn by two replicas, as behind a load balancer.
    for (let i = 0; i < 4; i++) {
      const added = allocation(1)
      await (i % 2 === 0 ? ledger : second).exclusive(noLock, (_, allocations) =>
        allocations.insert(added),
      )
      mine.push(added)
    }
    // A tool's write and a removal through the other replica are taken in too.
    await new KyselyAllocationRepo(store.db).insert(allocation(8))
    expect(await second.repo().remove('pod', mine[0]!.ownerId)).toBe(true)
    expect(await freeVcpus(ledger)).toBe(32 - 3 - 8)
    expect(await freeVcpus(second)).toBe(32 - 3 - 8)
    expect([ledger.rebuilds, second.rebuilds]).toEqual([1, 1])
    expect([ledger.caughtUp, second.caughtUp]).toEqual([2, 2])
  })

  it('reads every allocation again when more changed meanwhile than the store keeps', async () => {
    expect(await freeVcpus(ledger)).toBe(32)
    const other = new KyselyAllocationRepo(store.db)
    const foreign = allocation(1)
    await other.insert(foreign)
    // 1 001 changes more: the first of them is no longer kept (migration 0031 keeps 1 000).
    for (let i = 0; i < 500; i++) {
      await other.remove('pod', foreign.ownerId)
      await other.insert(foreign)
    }
    expect(await freeVcpus(ledger)).toBe(31)
    expect([ledger.rebuilds, ledger.caughtUp]).toEqual([2, 0])
  })
})
