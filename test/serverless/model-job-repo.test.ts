import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { ModelJobRecord } from '../../src/domain/models/ports.js'
import { KyselyModelJobRepo } from '../../src/store/model-job-repo.js'
import type { Store } from '../../src/store/open-store.js'
import { addTestAccount, testStores } from '../support/stores.js'

describe.each(testStores())('KyselyModelJobRepo on $name', ({ open }) => {
  let store: Store
  let repo: KyselyModelJobRepo
  let accountId: string

  const record = (jobId: string): ModelJobRecord => ({
    jobId,
    modelId: 'podyard-reference-image',
    endpointId: 'ep1',
    accountId,
    maxPriceNano: 629_146,
    costNano: null,
    objectKey: null,
    createdAt: '2026-01-01T00:00:00.000Z',
    settledAt: null,
    objectExpiresAt: null,
  })

  beforeEach(async () => {
    store = await open()
    repo = new KyselyModelJobRepo(store.db)
    accountId = await addTestAccount(store)
  })

  afterEach(async () => {
    await store.close()
  })

  it('lets exactly one settler claim a job, and keeps what it settled', async () => {
    await repo.insert(record('sync-1'))
    expect(await repo.find('sync-1')).toEqual(record('sync-1'))
    const settlement = {
      costNano: 629_146,
      objectKey: 'images/sync-1.png',
      objectExpiresAt: '2026-01-08T00:00:00.000Z',
      settledAt: '2026-01-01T00:00:01.000Z',
    }
    const claims = await Promise.all(
      [1, 2, 3].map(() => repo.claimSettlement('sync-1', settlement)),
    )
    expect(claims.filter(Boolean)).toHaveLength(1)
    expect(await repo.find('sync-1')).toEqual({ ...record('sync-1'), ...settlement })
    expect(await repo.find('unknown')).toBeUndefined()
  })

  it('lists settled objects whose URLs expired, and forgets them', async () => {
    await repo.insert(record('a'))
    await repo.insert(record('b'))
    await repo.claimSettlement('a', {
      costNano: 1,
      objectKey: 'images/a.png',
      objectExpiresAt: '2026-01-08T00:00:00.000Z',
      settledAt: '2026-01-01T00:00:00.000Z',
    })
    expect(await repo.listExpiredObjects('2026-01-08T00:00:00.000Z', 10)).toEqual([])
    const expired = await repo.listExpiredObjects('2026-01-08T00:00:00.001Z', 10)
    expect(expired.map((r) => r.jobId)).toEqual(['a'])
    await repo.clearObject('a')
    expect(await repo.listExpiredObjects('2026-02-01T00:00:00.000Z', 10)).toEqual([])
  })
})
