import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { afterFailure } from '../../src/domain/serverless/start-backoff.js'
import { KyselyEndpointRepo } from '../../src/store/endpoint-repo.js'
import type { Store } from '../../src/store/open-store.js'
import { KyselyStartBackoffRepo } from '../../src/store/start-backoff-repo.js'
import { endpointRecord } from '../support/endpoint-records.js'
import { addTestAccount, testStores } from '../support/stores.js'

describe.each(testStores())('KyselyStartBackoffRepo on $name', ({ open }) => {
  let store: Store
  let repo: KyselyStartBackoffRepo

  const addEndpoint = (id: string, accountId: string) =>
    new KyselyEndpointRepo(store.db).insert(
      endpointRecord(id, accountId, { workers: { min: 0, max: 1, idleTimeout: 5 } }),
    )

  beforeEach(async () => {
    store = await open()
    repo = new KyselyStartBackoffRepo(store.db)
    const accountId = await addTestAccount(store)
    await addEndpoint('ep1', accountId)
    await addEndpoint('ep2', accountId)
  })
  afterEach(() => store.close())

  it('keeps one backoff per endpoint, replaced on each failure, until deleted', async () => {
    const now = Date.parse('2026-02-01T10:00:00.000Z')
    const failure = (endpointId: string, workerId: string) => ({
      endpointId,
      workerId,
      reason: 'exited with code 1 before asking for a job',
    })
    const first = afterFailure(undefined, failure('ep1', 'w1'), now)
    await repo.put(first)
    const second = afterFailure(first, failure('ep1', 'w2'), now + 1500)
    await repo.put(second)
    const other = afterFailure(undefined, failure('ep2', 'w3'), now)
    await repo.put(other)
    const byEndpoint = (list: (typeof first)[]) =>
      Object.fromEntries(list.map((b) => [b.endpointId, b]))
    expect(byEndpoint(await repo.list())).toEqual({ ep1: second, ep2: other })
    expect(second).toEqual({
      endpointId: 'ep1',
      failures: 2,
      lastFailure: {
        workerId: 'w2',
        reason: 'exited with code 1 before asking for a job',
        at: '2026-02-01T10:00:01.500Z',
      },
      nextStartAt: '2026-02-01T10:00:03.500Z',
    })
    await repo.delete('ep1')
    expect(await repo.list()).toEqual([other])
    // Deleting the endpoint deletes its backoff.
    await store.db.deleteFrom('endpoints').where('id', '=', 'ep2').execute()
    expect(await repo.list()).toEqual([])
  })
})
