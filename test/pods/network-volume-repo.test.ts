import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { NetworkVolume } from '../../src/domain/volumes/network-volume.js'
import { newId } from '../../src/shared/ids.js'
import { KyselyNetworkVolumeRepo } from '../../src/store/network-volume-repo.js'
import type { Store } from '../../src/store/open-store.js'
import { addTestAccount, testStores } from '../support/stores.js'

describe.each(testStores())('KyselyNetworkVolumeRepo on $name', ({ open }) => {
  let store: Store
  let repo: KyselyNetworkVolumeRepo
  let accountId: string

  const volume = (overrides: Partial<NetworkVolume> = {}): NetworkVolume => ({
    id: newId.networkVolume(),
    accountId,
    name: 'data',
    sizeGb: 50,
    dataCenterId: 'US-KS-2',
    type: 'HIGH_PERFORMANCE',
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
    ...overrides,
  })

  beforeEach(async () => {
    store = await open()
    repo = new KyselyNetworkVolumeRepo(store.db)
    accountId = await addTestAccount(store)
  })

  afterEach(async () => {
    await store.close()
  })

  it('round-trips every field and starts the size history at creation', async () => {
    const v = volume({ name: 'ünïcode name', sizeGb: 4096 })
    await repo.insert(v)
    expect(await repo.findById(v.id)).toEqual(v)
    expect(await repo.findById('nosuch0000')).toBeUndefined()
    expect(await repo.sizeHistory(v.id)).toEqual([
      { sizeGb: 4096, changedAt: '2026-01-01T00:00:00.000Z' },
    ])
  })

  it('lets concurrent guarded inserts see each other: only those within the quota are stored', async () => {
    // The guard is what the volume-GB quota passes: refuse beyond 100 GB.
    const guard = (usedGb: number) => {
      if (usedGb + 30 > 100) throw new Error(`over: ${usedGb}`)
    }
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, () => repo.insert(volume({ sizeGb: 30 }), guard)),
    )
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3)
    expect((await repo.listByAccount(accountId)).reduce((sum, v) => sum + v.sizeGb, 0)).toBe(90)
    const first = (await repo.listByAccount(accountId))[0]!
    await expect(
      repo.update({ ...first, sizeGb: 60 }, 30, (usedGb) => {
        if (usedGb + 30 > 100) throw new Error(`over: ${usedGb}`)
      }),
    ).rejects.toThrow('over: 90')
    expect((await repo.findById(first.id))!.sizeGb).toBe(30)
  })

  it('lists an account’s volumes oldest first, and no one else’s', async () => {
    const other = await addTestAccount(store)
    const late = volume({ createdAt: '2026-01-03T00:00:00.000Z' })
    const early = volume({ createdAt: '2026-01-01T00:00:00.000Z' })
    const middle = volume({ createdAt: '2026-01-02T00:00:00.000Z' })
    for (const v of [late, early, middle, volume({ accountId: other })]) await repo.insert(v)
    expect(await repo.listByAccount(accountId)).toEqual([early, middle, late])
    expect(await repo.listByAccount('acct_nobody')).toEqual([])
  })

  it('refuses a second volume with the same id', async () => {
    const v = volume()
    await repo.insert(v)
    await expect(repo.insert({ ...v, name: 'again' })).rejects.toThrow()
    expect(await repo.sizeHistory(v.id)).toHaveLength(1)
  })

  it('records a size entry when the size changes, none for a rename', async () => {
    const v = volume({ sizeGb: 20 })
    await repo.insert(v)
    const renamed = { ...v, name: 'renamed', updatedAt: '2026-01-02T00:00:00.000Z' }
    expect(await repo.update(renamed, 20)).toBe(true)
    const grown = { ...renamed, sizeGb: 40, updatedAt: '2026-01-03T00:00:00.000Z' }
    expect(await repo.update(grown, 20)).toBe(true)
    expect(await repo.findById(v.id)).toEqual(grown)
    expect(await repo.sizeHistory(v.id)).toEqual([
      { sizeGb: 20, changedAt: '2026-01-01T00:00:00.000Z' },
      { sizeGb: 40, changedAt: '2026-01-03T00:00:00.000Z' },
    ])
  })

  it('writes nothing when the stored size is not the expected one, or the volume is gone', async () => {
    const v = volume({ sizeGb: 20 })
    await repo.insert(v)
    expect(await repo.update({ ...v, sizeGb: 30, name: 'late' }, 25)).toBe(false)
    expect(await repo.findById(v.id)).toEqual(v)
    expect(await repo.sizeHistory(v.id)).toHaveLength(1)
    expect(await repo.update(volume({ id: 'nosuch0000' }), 50)).toBe(false)
  })

  it('lets only one of two concurrent resizes from the same size win', async () => {
    const v = volume({ sizeGb: 20 })
    await repo.insert(v)
    const results = await Promise.all([
      repo.update({ ...v, sizeGb: 30, updatedAt: '2026-01-02T00:00:00.000Z' }, 20),
      repo.update({ ...v, sizeGb: 40, updatedAt: '2026-01-02T00:00:00.000Z' }, 20),
    ])
    expect(results.filter(Boolean)).toHaveLength(1)
    expect(await repo.sizeHistory(v.id)).toHaveLength(2)
  })

  it('deletes, keeping the size history and ending it at 0 GB', async () => {
    const v = volume({ sizeGb: 20 })
    await repo.insert(v)
    expect(await repo.delete(v.id, '2026-01-05T00:00:00.000Z')).toBe(true)
    expect(await repo.findById(v.id)).toBeUndefined()
    expect(await repo.listByAccount(accountId)).toEqual([])
    expect(await repo.delete(v.id, '2026-01-06T00:00:00.000Z')).toBe(false)
    expect(await repo.sizeHistory(v.id)).toEqual([
      { sizeGb: 20, changedAt: '2026-01-01T00:00:00.000Z' },
      { sizeGb: 0, changedAt: '2026-01-05T00:00:00.000Z' },
    ])
  })

  it('keeps timestamps with milliseconds exactly', async () => {
    const v = volume({
      createdAt: '2026-02-03T04:05:06.789Z',
      updatedAt: '2026-02-03T04:05:06.789Z',
    })
    await repo.insert(v)
    expect((await repo.findById(v.id))!.createdAt).toBe('2026-02-03T04:05:06.789Z')
    expect((await repo.sizeHistory(v.id))[0]!.changedAt).toBe('2026-02-03T04:05:06.789Z')
  })
})
