import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { Cluster } from '../../src/domain/clusters/cluster.js'
import { KyselyClusterRepo } from '../../src/store/cluster-repo.js'
import type { Store } from '../../src/store/open-store.js'
import { addTestAccount, testStores } from '../support/stores.js'

const cluster = (id: string, accountId: string, createdAt: string): Cluster => ({
  id,
  accountId,
  name: `name of ${id}`,
  type: 'TRAINING',
  compute: { gpuTypeId: 'NVIDIA H100 80GB HBM3', gpuCountPerPod: 8, podCount: 2 },
  templateId: null,
  dataCenterId: 'US-KS-2',
  podIds: [`${id}-p0`, `${id}-p1`],
  createdAt,
  deletedAt: null,
})

describe.each(testStores())('KyselyClusterRepo on $name', ({ open }) => {
  let store: Store
  let repo: KyselyClusterRepo

  beforeEach(async () => {
    store = await open()
    repo = new KyselyClusterRepo(store.db)
    await addTestAccount(store, 'acct_a')
    await addTestAccount(store, 'acct_b')
  })
  afterEach(() => store.close())

  it('keeps clusters whole, lists an account’s oldest first, and deleted ones only when asked', async () => {
    const first = cluster('c1', 'acct_a', '2026-03-01T10:00:00.000Z')
    const second = cluster('c2', 'acct_a', '2026-03-02T10:00:00.000Z')
    await repo.insert(second)
    await repo.insert(first)
    await repo.insert(cluster('c3', 'acct_b', '2026-03-01T09:00:00.000Z'))
    expect(await repo.findById('c1')).toEqual(first)
    expect(await repo.findById('nope')).toBeUndefined()
    expect((await repo.listByAccount('acct_a')).map((c) => c.id)).toEqual(['c1', 'c2'])

    const deleted = { ...first, name: 'renamed', deletedAt: '2026-03-03T10:00:00.000Z' }
    await repo.update(deleted)
    expect(await repo.findById('c1')).toEqual(deleted)
    expect((await repo.listByAccount('acct_a')).map((c) => c.id)).toEqual(['c2'])
    expect((await repo.listByAccount('acct_a', { includeDeleted: true })).map((c) => c.id)).toEqual(
      ['c1', 'c2'],
    )
  })
})
