import { beforeEach, describe, expect, it } from 'vitest'
import { AppError } from '../../shared/app-error.js'
import { ManualClock } from '../../shared/clock.js'
import { demoFleet } from '../catalog/demo-fleet.js'
import { parseFleet } from '../catalog/fleet-parse.js'
import type { NetworkVolume, VolumeSizeRecord } from './network-volume.js'
import type { NetworkVolumeRepo, VolumeStorage } from './ports.js'
import { VolumeService, type VolumeServiceDeps } from './volume-service.js'

class MemoryVolumeRepo implements NetworkVolumeRepo {
  readonly rows = new Map<string, NetworkVolume>()
  readonly sizes = new Map<string, VolumeSizeRecord[]>()
  /** Runs once before the next update is applied, to simulate a concurrent writer. */
  beforeNextUpdate: (() => void) | undefined

  async insert(volume: NetworkVolume) {
    if (this.rows.has(volume.id)) throw new Error('duplicate id')
    this.rows.set(volume.id, { ...volume })
    this.sizes.set(volume.id, [{ sizeGb: volume.sizeGb, changedAt: volume.createdAt }])
  }
  async findById(id: string) {
    const row = this.rows.get(id)
    return row && { ...row }
  }
  async listByAccount(accountId: string) {
    return [...this.rows.values()].filter((v) => v.accountId === accountId)
  }
  async update(volume: NetworkVolume, expectedSizeGb: number) {
    const hook = this.beforeNextUpdate
    this.beforeNextUpdate = undefined
    hook?.()
    const stored = this.rows.get(volume.id)
    if (!stored || stored.sizeGb !== expectedSizeGb) return false
    if (stored.sizeGb !== volume.sizeGb) {
      this.sizes.get(volume.id)!.push({ sizeGb: volume.sizeGb, changedAt: volume.updatedAt })
    }
    this.rows.set(volume.id, { ...volume })
    return true
  }
  async delete(id: string, deletedAt: string) {
    if (!this.rows.delete(id)) return false
    this.sizes.get(id)!.push({ sizeGb: 0, changedAt: deletedAt })
    return true
  }
  async sizeHistory(id: string) {
    return [...(this.sizes.get(id) ?? [])]
  }
}

class MemoryStorage implements VolumeStorage {
  readonly volumes = new Map<string, number>()
  readonly calls: string[] = []
  async create(id: string, sizeGb: number) {
    if (this.volumes.has(id)) throw new Error('exists')
    this.volumes.set(id, sizeGb)
    this.calls.push(`create ${id} ${sizeGb}`)
  }
  async resize(id: string, sizeGb: number) {
    this.volumes.set(id, sizeGb)
    this.calls.push(`resize ${id} ${sizeGb}`)
  }
  async remove(id: string) {
    this.volumes.delete(id)
    this.calls.push(`remove ${id}`)
  }
  path(id: string) {
    return `/data/volumes/${id}`
  }
  async usedBytes(id: string) {
    return this.volumes.has(id) ? 1234 : 0
  }
}

async function failure(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(AppError)
  return error as AppError
}

describe('VolumeService', () => {
  let repo: MemoryVolumeRepo
  let storage: MemoryStorage
  let clock: ManualClock
  let users: Record<string, string[]>
  let service: VolumeService

  const make = (overrides: Partial<VolumeServiceDeps> = {}) =>
    new VolumeService({
      repo,
      storage,
      clock,
      fleet: demoFleet,
      usersOf: async (_accountId, volumeId) => users[volumeId] ?? [],
      ...overrides,
    })

  beforeEach(() => {
    repo = new MemoryVolumeRepo()
    storage = new MemoryStorage()
    clock = new ManualClock('2026-03-01T00:00:00.000Z')
    users = {}
    service = make()
  })

  describe('create', () => {
    it('stores the volume with its storage and first size entry; STANDARD by default', async () => {
      const volume = await service.create('acct_a', {
        name: 'data',
        size: 50,
        dataCenterId: 'EU-RO-1',
      })
      expect(volume).toEqual({
        id: expect.stringMatching(/^[a-z0-9]{10}$/),
        accountId: 'acct_a',
        name: 'data',
        sizeGb: 50,
        dataCenterId: 'EU-RO-1',
        type: 'STANDARD',
        createdAt: '2026-03-01T00:00:00.000Z',
        updatedAt: '2026-03-01T00:00:00.000Z',
      })
      expect(storage.volumes.get(volume.id)).toBe(50)
      expect(await repo.sizeHistory(volume.id)).toEqual([
        { sizeGb: 50, changedAt: '2026-03-01T00:00:00.000Z' },
      ])
    })

    it('takes a type the data center offers', async () => {
      const volume = await service.create('acct_a', {
        name: 'fast',
        size: 10,
        dataCenterId: 'US-KS-2',
        type: 'HIGH_PERFORMANCE',
      })
      expect(volume.type).toBe('HIGH_PERFORMANCE')
    })

    it('accepts sizes 10 and 4096 and refuses 9 and 4097 (422)', async () => {
      for (const size of [10, 4096]) {
        await expect(
          service.create('acct_a', { name: 'v', size, dataCenterId: 'EU-RO-1' }),
        ).resolves.toMatchObject({ sizeGb: size })
      }
      for (const size of [9, 4097]) {
        const error = await failure(
          service.create('acct_a', { name: 'v', size, dataCenterId: 'EU-RO-1' }),
        )
        expect(error.code).toBe('VALIDATION_FAILED')
        expect(error.errors).toEqual([`size: must be between 10 and 4096 GB, got ${size}`])
      }
      expect(storage.volumes.size).toBe(2)
    })

    it('refuses an unknown data center (400 pointing at the catalog)', async () => {
      const error = await failure(
        service.create('acct_a', { name: 'v', size: 10, dataCenterId: 'MARS-1' }),
      )
      expect(error.code).toBe('RULE_CONFLICT')
      expect(error.detail).toBe('unknown data center "MARS-1": see GET /v2/catalog/datacenters')
    })

    it('refuses a type the data center does not offer, naming what it offers', async () => {
      const error = await failure(
        service.create('acct_a', {
          name: 'v',
          size: 10,
          dataCenterId: 'EU-RO-1',
          type: 'HIGH_PERFORMANCE',
        }),
      )
      expect(error.code).toBe('RULE_CONFLICT')
      expect(error.detail).toBe(
        'data center EU-RO-1 does not offer HIGH_PERFORMANCE network volumes; it offers STANDARD',
      )
    })

    it('refuses a data center that offers no volumes at all', async () => {
      const fleet = parseFleet(
        { dataCenters: [{ id: 'DC-1', name: 'DC 1', region: 'EUROPE', networkVolumeTypes: [] }] },
        'test',
      )
      const error = await failure(
        make({ fleet }).create('acct_a', { name: 'v', size: 10, dataCenterId: 'DC-1' }),
      )
      expect(error.detail).toBe('data center DC-1 offers no network volumes')
      expect(storage.volumes.size).toBe(0)
    })

    it('removes the storage again when the record cannot be stored', async () => {
      repo.insert = async () => {
        throw new Error('store down')
      }
      await expect(
        service.create('acct_a', { name: 'v', size: 10, dataCenterId: 'EU-RO-1' }),
      ).rejects.toThrow('store down')
      expect(storage.volumes.size).toBe(0)
      expect(storage.calls).toEqual([
        expect.stringMatching(/^create /),
        expect.stringMatching(/^remove /),
      ])
    })
  })

  describe('reads', () => {
    it('lists and gets only the account’s own volumes; another account’s is 404', async () => {
      const mine = await service.create('acct_a', { name: 'a', size: 10, dataCenterId: 'EU-RO-1' })
      await service.create('acct_b', { name: 'b', size: 10, dataCenterId: 'EU-RO-1' })
      expect(await service.list('acct_a')).toEqual([mine])
      expect(await service.get('acct_a', mine.id)).toEqual(mine)
      expect(await service.find('acct_b', mine.id)).toBeUndefined()
      const error = await failure(service.get('acct_b', mine.id))
      expect(error.code).toBe('NOT_FOUND')
      expect(error.detail).toBe(`network volume ${mine.id} not found`)
    })

    it('gives the host path and usage from the storage', async () => {
      const volume = await service.create('acct_a', {
        name: 'a',
        size: 10,
        dataCenterId: 'EU-RO-1',
      })
      expect(service.hostPathOf(volume)).toBe(`/data/volumes/${volume.id}`)
      expect(await service.usage(volume)).toEqual({ usedBytes: 1234 })
    })
  })

  describe('update', () => {
    let volume: NetworkVolume
    beforeEach(async () => {
      volume = await service.create('acct_a', { name: 'a', size: 20, dataCenterId: 'EU-RO-1' })
      clock.advance(60_000)
    })

    it('grows the storage and records the new size', async () => {
      const grown = await service.update('acct_a', volume.id, { size: 30 })
      expect(grown).toMatchObject({ sizeGb: 30, updatedAt: '2026-03-01T00:01:00.000Z' })
      expect(storage.volumes.get(volume.id)).toBe(30)
      expect(await repo.sizeHistory(volume.id)).toEqual([
        { sizeGb: 20, changedAt: '2026-03-01T00:00:00.000Z' },
        { sizeGb: 30, changedAt: '2026-03-01T00:01:00.000Z' },
      ])
    })

    it('renames without a size entry or a resize', async () => {
      const renamed = await service.update('acct_a', volume.id, { name: 'b', size: 20 })
      expect(renamed).toMatchObject({ name: 'b', sizeGb: 20 })
      expect(storage.calls.filter((c) => c.startsWith('resize'))).toEqual([])
      expect(await repo.sizeHistory(volume.id)).toHaveLength(1)
    })

    it('changes nothing for an empty patch', async () => {
      expect(await service.update('acct_a', volume.id, {})).toEqual(volume)
    })

    it('refuses a shrink (400) and keeps the size', async () => {
      const error = await failure(service.update('acct_a', volume.id, { size: 19 }))
      expect(error.code).toBe('RULE_CONFLICT')
      expect(error.detail).toBe('size cannot shrink from 20 to 19 GB')
      expect((await service.get('acct_a', volume.id)).sizeGb).toBe(20)
    })

    it('refuses a size past the bound (422)', async () => {
      const error = await failure(service.update('acct_a', volume.id, { size: 4097 }))
      expect(error.code).toBe('VALIDATION_FAILED')
    })

    it('is 404 for another account', async () => {
      const error = await failure(service.update('acct_b', volume.id, { size: 30 }))
      expect(error.code).toBe('NOT_FOUND')
    })

    it('re-checks against a concurrent resize instead of undoing it', async () => {
      // Another request grows the volume to 40 between this one's read and its write.
      repo.beforeNextUpdate = () => {
        repo.rows.get(volume.id)!.sizeGb = 40
      }
      const error = await failure(service.update('acct_a', volume.id, { size: 30 }))
      expect(error.detail).toBe('size cannot shrink from 40 to 30 GB')

      repo.beforeNextUpdate = () => {
        repo.rows.get(volume.id)!.sizeGb = 45
      }
      expect(await service.update('acct_a', volume.id, { size: 50 })).toMatchObject({
        sizeGb: 50,
      })
    })
  })

  describe('delete', () => {
    let volume: NetworkVolume
    beforeEach(async () => {
      volume = await service.create('acct_a', { name: 'a', size: 20, dataCenterId: 'EU-RO-1' })
    })

    it('removes the record and the storage, ending the size history at 0 GB', async () => {
      clock.advance(3_600_000)
      await service.delete('acct_a', volume.id)
      expect(await service.find('acct_a', volume.id)).toBeUndefined()
      expect(storage.volumes.has(volume.id)).toBe(false)
      expect(await repo.sizeHistory(volume.id)).toEqual([
        { sizeGb: 20, changedAt: '2026-03-01T00:00:00.000Z' },
        { sizeGb: 0, changedAt: '2026-03-01T01:00:00.000Z' },
      ])
    })

    it('refuses while in use (400 naming every user) and keeps everything', async () => {
      const asked: Array<[string, string]> = []
      const service = make({
        usersOf: async (accountId, volumeId) => {
          asked.push([accountId, volumeId])
          return ['pod abc123 (trainer)', 'pod def456 (notebook)']
        },
      })
      const error = await failure(service.delete('acct_a', volume.id))
      expect(error.code).toBe('RULE_CONFLICT')
      expect(error.detail).toBe(
        `network volume ${volume.id} is in use by pod abc123 (trainer), pod def456 (notebook); detach it from them first`,
      )
      expect(asked).toEqual([['acct_a', volume.id]])
      expect(await service.find('acct_a', volume.id)).toEqual(volume)
      expect(storage.volumes.has(volume.id)).toBe(true)
    })

    it('is 404 for another account, without asking who uses it', async () => {
      users[volume.id] = ['pod x (y)']
      const error = await failure(service.delete('acct_b', volume.id))
      expect(error.code).toBe('NOT_FOUND')
      expect(storage.volumes.has(volume.id)).toBe(true)
    })
  })
})
