import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { PodLifecycle } from '../../src/control/pod-lifecycle.js'
import { AccountService } from '../../src/domain/accounts/account-service.js'
import { CatalogService } from '../../src/domain/catalog/catalog-service.js'
import { demoFleet } from '../../src/domain/catalog/demo-fleet.js'
import { PodService } from '../../src/domain/pods/pod-service.js'
import { ProcessDriver } from '../../src/runtime/process/process-driver.js'
import { place } from '../../src/scheduler/core/placement.js'
import { systemClock } from '../../src/shared/clock.js'
import { KyselyAccountRepo } from '../../src/store/account-repo.js'
import { KyselyAllocationRepo } from '../../src/store/allocation-repo.js'
import { KyselyApiKeyRepo } from '../../src/store/api-key-repo.js'
import type { Store } from '../../src/store/open-store.js'
import type { PodStore } from '../../src/domain/pods/ports.js'
import { podStoreOf } from '../../src/store/pod-repo.js'
import { testStores } from '../support/stores.js'

/** Placement under concurrency, on every store: the capacity lock is what is tested here. */
describe.each(testStores())('pod placement on $name', ({ open }) => {
  let store: Store
  let dataDir: string
  let pods: PodService
  let accountId: string
  let lifecycle: PodLifecycle
  let driver: ProcessDriver

  beforeEach(async () => {
    store = await open()
    dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-placement-'))
    const accounts = new AccountService(
      new KyselyAccountRepo(store.db),
      new KyselyApiKeyRepo(store.db),
      systemClock,
    )
    accountId = (await accounts.createAccount({ email: 'a@example.com' })).account.id
    const podStore = podStoreOf(store, demoFleet.hosts)
    // The loop is built but never started: this suite is about the store, not processes.
    lifecycle = new PodLifecycle({
      store: podStore,
      fleet: demoFleet,
      driverFor: () => driver,
      drivers: [],
      dataDir,
      publicIp: '127.0.0.1',
      volumePath: (volumeId) => path.join(dataDir, 'volumes', volumeId),
      // This account has no registries, volumes or templates.
      registryCredentials: async () => undefined,
      publicKeys: async () => null,
      clock: systemClock,
      logger: pino({ level: 'silent' }),
    })
    driver = new ProcessDriver({ stateDir: path.join(dataDir, 'runtime') })
    pods = servicesOn(podStore)
  })

  function servicesOn(podStore: PodStore): PodService {
    return new PodService({
      store: podStore,
      catalog: new CatalogService(demoFleet, new KyselyAllocationRepo(store.db)),
      place,
      runtime: lifecycle,
      references: {
        template: async () => undefined,
        registryExists: async () => false,
        networkVolume: async () => undefined,
      },
      clock: systemClock,
      nudge: () => {},
    })
  }
  afterEach(async () => {
    await store.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('places concurrent creates without over-committing, and frees capacity on terminate', async () => {
    const attempts = await Promise.allSettled(
      Array.from({ length: 16 }, (_, i) =>
        pods.create(accountId, { name: `p${i}`, image: 'x', gpu: { id: 'NVIDIA H200', count: 3 } }),
      ),
    )
    const placed = attempts
      .filter((a) => a.status === 'fulfilled')
      .map((a) => (a as PromiseFulfilledResult<{ id: string; gpuIndices: number[] }>).value)
    const refused = attempts
      .filter((a) => a.status === 'rejected')
      .map((a) => (a as PromiseRejectedResult).reason as { code: string; detail: string })
    // One H200 host with 8 GPUs: two pods of 3 fit, a third does not.
    expect(placed).toHaveLength(2)
    expect(new Set(placed.flatMap((p) => p.gpuIndices)).size).toBe(6)
    expect(refused.every((r) => r.code === 'NO_CAPACITY')).toBe(true)
    expect(refused[0]!.detail).toMatch(/^no host has 3 free NVIDIA H200/)

    await pods.terminate(accountId, placed[0]!.id)
    const again = await pods.create(accountId, {
      name: 'again',
      image: 'x',
      gpu: { id: 'NVIDIA H200', count: 3 },
    })
    expect(again.hostId).toBe('eur-is-1-h200-1')
    expect(again.gpuIndices).toEqual(placed[0]!.gpuIndices)
    await expect(
      pods.create(accountId, {
        name: 'one more',
        image: 'x',
        gpu: { id: 'NVIDIA H200', count: 3 },
      }),
    ).rejects.toMatchObject({ code: 'NO_CAPACITY' })
  })

  it('places right beside another replica and a tool writing the same allocations', async () => {
    // A second replica: its own store view, with its own index of the allocations.
    const replica = servicesOn(podStoreOf(store, demoFleet.hosts))
    const h200 = (name: string, count: number) =>
      ({ name, image: 'x', gpu: { id: 'NVIDIA H200', count } }) as const
    const first = await pods.create(accountId, h200('first', 3))
    const second = await replica.create(accountId, h200('second', 3))
    expect(second.gpuIndices).toEqual([3, 4, 5])
    await expect(pods.create(accountId, h200('third', 3))).rejects.toMatchObject({
      code: 'NO_CAPACITY',
    })
    // A tool takes the last two GPUs of the one H200 host behind both replicas' backs.
    await new KyselyAllocationRepo(store.db).insert({
      id: 'alloc-by-hand',
      hostId: 'eur-is-1-h200-1',
      ownerKind: 'pod',
      ownerId: 'pod-by-hand',
      gpuCount: 2,
      gpuIndices: [6, 7],
      vcpus: 0,
      memoryGb: 0,
      diskGb: 0,
      createdAt: '2026-01-01T00:00:00.000Z',
    })
    await expect(pods.create(accountId, h200('fourth', 1))).rejects.toMatchObject({
      code: 'NO_CAPACITY',
    })
    await replica.terminate(accountId, first.id)
    expect((await pods.create(accountId, h200('fifth', 3))).gpuIndices).toEqual([0, 1, 2])
  })
})
