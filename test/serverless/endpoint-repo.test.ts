import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { Endpoint } from '../../src/domain/serverless/endpoint.js'
import { KyselyEndpointRepo } from '../../src/store/endpoint-repo.js'
import type { Store } from '../../src/store/open-store.js'
import { addTestAccount, testStores } from '../support/stores.js'

const endpoint = (
  id: string,
  accountId: string,
  createdAt: string,
  templateId: string | null = null,
): Endpoint => ({
  id,
  accountId,
  name: `name of ${id}`,
  type: 'QUEUE',
  templateId,
  image: 'worker:1',
  args: '',
  disk: 50,
  env: { A: 'ü' },
  ports: ['8000/http'],
  registry: null,
  gpu: {
    pools: ['ADA_24'],
    excludedTypes: [],
    count: 1,
    allowedCudaVersions: [],
    minCudaVersion: null,
  },
  cpu: null,
  workers: { min: 0, max: 3, idleTimeout: 5 },
  scaling: { type: 'QUEUE_DELAY', queueDelay: 0.5 },
  dataCenterIds: [],
  networkVolumes: ['vol1'],
  timeout: 300000,
  flashboot: 'OFF',
  version: 1,
  createdAt,
  updatedAt: createdAt,
})

describe.each(testStores())('KyselyEndpointRepo on $name', ({ open }) => {
  let store: Store
  let repo: KyselyEndpointRepo

  beforeEach(async () => {
    store = await open()
    repo = new KyselyEndpointRepo(store.db)
    await addTestAccount(store, 'acct_a')
    await addTestAccount(store, 'acct_b')
  })
  afterEach(() => store.close())

  it('inserts and finds an endpoint whole', async () => {
    const e = endpoint('e1', 'acct_a', '2026-02-01T10:00:00.000Z')
    await repo.insert(e)
    expect(await repo.findById('e1')).toEqual(e)
    expect(await repo.findById('nope')).toBeUndefined()
  })

  it('lists by account oldest first, and by template across accounts', async () => {
    await repo.insert(endpoint('late', 'acct_a', '2026-02-02T00:00:00.000Z', 'tpl'))
    await repo.insert(endpoint('early', 'acct_a', '2026-02-01T00:00:00.000Z'))
    await repo.insert(endpoint('other', 'acct_b', '2026-02-01T12:00:00.000Z', 'tpl'))
    expect((await repo.listByAccount('acct_a')).map((e) => e.id)).toEqual(['early', 'late'])
    expect((await repo.listByAccount('acct_c')).map((e) => e.id)).toEqual([])
    expect((await repo.listByTemplate('tpl')).map((e) => e.id)).toEqual(['other', 'late'])
    expect(await repo.listByTemplate('none')).toEqual([])
  })

  it('updates the document and the indexed columns, and deletes', async () => {
    const e = endpoint('e1', 'acct_a', '2026-02-01T10:00:00.000Z', 'tpl')
    await repo.insert(e)
    const changed: Endpoint = { ...e, name: 'renamed', templateId: null, version: 2 }
    await repo.update(changed)
    expect(await repo.findById('e1')).toEqual(changed)
    expect(await repo.listByTemplate('tpl')).toEqual([])
    await repo.delete('e1')
    expect(await repo.findById('e1')).toBeUndefined()
  })

  it('keeps the worker-key generation apart from the document: 1, bumped atomically, untouched by updates', async () => {
    const e = endpoint('e1', 'acct_a', '2026-02-01T10:00:00.000Z')
    await repo.insert(e)
    expect(await repo.workerKeyGeneration('e1')).toBe(1)
    expect(
      await Promise.all([repo.bumpWorkerKeyGeneration('e1'), repo.bumpWorkerKeyGeneration('e1')]),
    ).toEqual(expect.arrayContaining([2, 3]))
    await repo.update({ ...e, name: 'renamed', version: 2 })
    expect(await repo.workerKeyGeneration('e1')).toBe(3)
    expect(await repo.workerKeyGeneration('nope')).toBeUndefined()
    expect(await repo.bumpWorkerKeyGeneration('nope')).toBeUndefined()
  })

  it('goes with its account', async () => {
    await repo.insert(endpoint('e1', 'acct_b', '2026-02-01T10:00:00.000Z'))
    await store.db.deleteFrom('accounts').where('id', '=', 'acct_b').execute()
    expect(await repo.findById('e1')).toBeUndefined()
  })
})
