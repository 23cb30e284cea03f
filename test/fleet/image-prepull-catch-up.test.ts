import { pino } from 'pino'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ImagePrepull } from '../../src/control/image-prepull.js'
import type { Host } from '../../src/domain/catalog/fleet.js'
import { place } from '../../src/scheduler/core/placement.js'
import { ManualClock } from '../../src/shared/clock.js'
import { KyselyHostImageRepo } from '../../src/store/host-image-repo.js'
import type { Store } from '../../src/store/open-store.js'
import { endpointRecord } from '../support/endpoint-records.js'
import { testStores } from '../support/stores.js'

/**
 * The leader's catch-up of images pulled ahead of time (docs/fleet.md, "Images ahead of
 * time"), on a real store: an endpoint's image is pulled on an eligible host with no row for it
 * and on one whose pull was left PULLING by a server that stopped; a fresh pull in flight, a
 * PRESENT row and a FAILED one are left as they are.
 */
const host = (id: string): Host => ({
  id,
  dataCenterId: 'EU-RO-1',
  cloud: 'SECURE',
  gpu: null,
  vcpus: 8,
  memoryGb: 32,
  diskGb: 100,
  driver: 'docker',
  cpuFlavors: ['cpu3c'],
  simulated: true,
})

describe.each(testStores())('image pre-pull catch-up on $name', ({ open }) => {
  let store: Store
  beforeEach(async () => {
    store = await open()
  })
  afterEach(async () => {
    await store.close()
  })

  it('pulls where no row is and where a stopped server left PULLING, and nowhere else', async () => {
    const clock = new ManualClock('2026-03-01T12:00:00.000Z')
    const repo = new KyselyHostImageRepo(store.db)
    const image = 'registry.example:5000/team/worker:1'
    const at = (msAgo: number) => new Date(clock.now().getTime() - msAgo).toISOString()
    // A pull cut off two minutes ago, one under way, one done, one failed.
    await repo.claim('stale', image, at(120_000), at(180_000))
    await repo.claim('fresh', image, at(1_000), at(61_000))
    await repo.claim('present', image, at(5_000), at(65_000))
    await repo.finish('present', image, 'PRESENT', null, at(4_000))
    await repo.claim('failed', image, at(5_000), at(65_000))
    await repo.finish('failed', image, 'FAILED', 'manifest unknown', at(4_000))
    const pulled: string[] = []
    const prepull = new ImagePrepull({
      repo,
      hosts: () => ['missing', 'stale', 'fresh', 'present', 'failed'].map(host),
      dataCenters: () => [
        {
          id: 'EU-RO-1',
          name: 'EU Romania 1',
          region: 'EUROPE',
          globalNetwork: false,
          networkVolumeTypes: [],
          compliance: [],
        },
      ],
      driverFor: (hostId) =>
        ({
          prepareImage: async (wanted: string) => {
            pulled.push(`${hostId} ${wanted}`)
          },
        }) as never,
      unavailable: async () => ({}),
      place,
      accountPools: async () => [],
      registryCredentials: async () => undefined,
      clock,
      logger: pino({ level: 'silent' }),
      endpoints: async () => [],
      catchUpIntervalMs: 5_000,
    })
    await prepull.catchUp([endpointRecord('ep', 'acct', { image })])
    await prepull.settled()
    expect(pulled.sort()).toEqual([`missing ${image}`, `stale ${image}`])
    const rows = await repo.list({ image })
    const state = (hostId: string) => rows.find((r) => r.hostId === hostId)?.state
    expect([
      state('missing'),
      state('stale'),
      state('fresh'),
      state('present'),
      state('failed'),
    ]).toEqual(['PRESENT', 'PRESENT', 'PULLING', 'PRESENT', 'FAILED'])
  })
})
