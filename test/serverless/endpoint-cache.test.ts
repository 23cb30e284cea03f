import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { CatalogService } from '../../src/domain/catalog/catalog-service.js'
import { demoFleet } from '../../src/domain/catalog/demo-fleet.js'
import {
  ENDPOINT_CACHE_TTL_MS,
  EndpointService,
} from '../../src/domain/serverless/endpoint-service.js'
import { ManualClock } from '../../src/shared/clock.js'
import { KyselyAllocationRepo } from '../../src/store/allocation-repo.js'
import { KyselyEndpointRepo } from '../../src/store/endpoint-repo.js'
import type { Store } from '../../src/store/open-store.js'
import { endpointRecord } from '../support/endpoint-records.js'
import { addTestAccount, testStores } from '../support/stores.js'

/**
 * The short-lived cache of endpoints that EndpointService.get keeps for the job API and the
 * workers: a change another replica stores is seen once the cache time has passed on the
 * service's clock, never later.
 */
describe.each(testStores())('endpoint cache on $name', ({ open }) => {
  let store: Store
  let clock: ManualClock
  let repo: KyselyEndpointRepo

  /** One replica's service: its own cache over the shared store. */
  const replica = () =>
    new EndpointService({
      repo,
      catalog: new CatalogService(demoFleet, new KyselyAllocationRepo(store.db)),
      references: {
        template: async () => undefined,
        registryExists: async () => false,
        networkVolume: async () => undefined,
      },
      clock,
      jobApiBaseUrl: () => 'http://127.0.0.1:1',
      deleteJobsOf: async () => 0,
    })

  const stored = (accountId: string, image: string) =>
    endpointRecord('ep_cached', accountId, { image })

  beforeEach(async () => {
    store = await open()
    clock = new ManualClock('2026-03-01T12:00:00.000Z')
    repo = new KyselyEndpointRepo(store.db)
  })
  afterEach(() => store.close())

  it("sees another replica's change once the cache time has passed on its clock", async () => {
    const accountId = await addTestAccount(store)
    await repo.insert(stored(accountId, 'worker:1'))
    const replicaA = replica()
    expect((await replicaA.get(accountId, 'ep_cached')).image).toBe('worker:1')

    // Replica B stores a new image: A answers from its cache until the time is up.
    await repo.update({ ...stored(accountId, 'worker:2'), version: 2 })
    clock.advance(ENDPOINT_CACHE_TTL_MS - 1)
    expect((await replicaA.get(accountId, 'ep_cached')).image).toBe('worker:1')
    clock.advance(1)
    expect((await replicaA.get(accountId, 'ep_cached')).image).toBe('worker:2')
    // A fresh replica reads the store at once.
    expect((await replica().get(accountId, 'ep_cached')).image).toBe('worker:2')
  })

  it("keeps another account's endpoint a 404, cached or not", async () => {
    const owner = await addTestAccount(store)
    const other = await addTestAccount(store)
    await repo.insert(stored(owner, 'worker:1'))
    const service = replica()
    await service.get(owner, 'ep_cached')
    await expect(service.get(other, 'ep_cached')).rejects.toMatchObject({ code: 'NOT_FOUND' })
  })
})
