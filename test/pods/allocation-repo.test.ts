import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { Allocation } from '../../src/domain/catalog/capacity.js'
import { newId } from '../../src/shared/ids.js'
import { KyselyAllocationRepo } from '../../src/store/allocation-repo.js'
import type { Store } from '../../src/store/open-store.js'
import { testStores } from '../support/stores.js'

function allocation(overrides: Partial<Allocation> = {}): Allocation {
  return {
    id: newId.allocation(),
    hostId: 'us-ks-2-h100-1',
    ownerKind: 'pod',
    ownerId: newId.pod(),
    gpuCount: 2,
    gpuIndices: [3, 5],
    vcpus: 48,
    memoryGb: 500,
    diskGb: 50,
    createdAt: '2026-01-01T00:00:00.000Z',
    ...overrides,
  }
}

describe.each(testStores())('KyselyAllocationRepo on $name', ({ open }) => {
  let store: Store
  let repo: KyselyAllocationRepo

  beforeEach(async () => {
    store = await open()
    repo = new KyselyAllocationRepo(store.db)
  })

  afterEach(async () => {
    await store.close()
  })

  it('round-trips every field, GPU indices included', async () => {
    const a = allocation()
    await repo.insert(a)
    expect(await repo.findByOwner('pod', a.ownerId)).toEqual(a)
    expect(await repo.list()).toEqual([a])
  })

  it('stores allocations without GPUs', async () => {
    const cpu = allocation({
      hostId: 'us-ks-2-cpu-1',
      gpuCount: 0,
      gpuIndices: [],
      vcpus: 4,
      memoryGb: 8,
    })
    await repo.insert(cpu)
    expect(await repo.findByOwner('pod', cpu.ownerId)).toEqual(cpu)
  })

  it('lists oldest first and by host', async () => {
    const late = allocation({ createdAt: '2026-01-03T00:00:00.000Z' })
    const early = allocation({ createdAt: '2026-01-01T00:00:00.000Z', hostId: 'other' })
    const middle = allocation({ createdAt: '2026-01-02T00:00:00.000Z', ownerKind: 'worker' })
    for (const a of [late, early, middle]) await repo.insert(a)
    expect(await repo.list()).toEqual([early, middle, late])
    expect(await repo.listByHost('us-ks-2-h100-1')).toEqual([middle, late])
    expect(await repo.listByHost('nowhere')).toEqual([])
  })

  it('keeps one allocation per owner, told apart by kind', async () => {
    const a = allocation()
    await repo.insert(a)
    await expect(repo.insert(allocation({ ownerId: a.ownerId }))).rejects.toThrow()
    const worker = allocation({ ownerKind: 'worker', ownerId: a.ownerId })
    await repo.insert(worker)
    expect(await repo.findByOwner('worker', a.ownerId)).toEqual(worker)
    expect(await repo.findByOwner('pod', a.ownerId)).toEqual(a)
  })

  it('removes by owner and says whether there was anything to remove', async () => {
    const a = allocation()
    const b = allocation()
    await repo.insert(a)
    await repo.insert(b)
    expect(await repo.remove('pod', a.ownerId)).toBe(true)
    expect(await repo.remove('pod', a.ownerId)).toBe(false)
    expect(await repo.remove('worker', b.ownerId)).toBe(false)
    expect(await repo.findByOwner('pod', a.ownerId)).toBeUndefined()
    expect(await repo.list()).toEqual([b])
  })

  it('starts empty: each store is isolated', async () => {
    expect(await repo.list()).toEqual([])
  })
})
