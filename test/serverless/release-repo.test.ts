import { sql } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { KyselyEndpointRepo } from '../../src/store/endpoint-repo.js'
import { migrationList } from '../../src/store/migrations/migration-list.js'
import type { Store } from '../../src/store/open-store.js'
import { KyselyReleaseRepo } from '../../src/store/release-repo.js'
import { endpointRecord } from '../support/endpoint-records.js'
import { addTestAccount, testStores } from '../support/stores.js'

const endpoint = (id: string, version: number, updatedAt: string) =>
  endpointRecord(id, 'acct_r', {
    disk: 50,
    workers: { min: 0, max: 3, idleTimeout: 10 },
    version,
    createdAt: '2026-03-01T10:00:00.000Z',
    updatedAt,
  })

describe.each(testStores())('KyselyReleaseRepo on $name', ({ open }) => {
  let store: Store
  let endpoints: KyselyEndpointRepo
  let releases: KyselyReleaseRepo

  beforeEach(async () => {
    store = await open()
    endpoints = new KyselyEndpointRepo(store.db)
    releases = new KyselyReleaseRepo(store.db)
    await addTestAccount(store, 'acct_r')
  })
  afterEach(() => store.close())

  it('lists an endpoint’s releases newest first, diffs whole, and drops them with it', async () => {
    await endpoints.insert(endpoint('e1', 2, '2026-03-02T10:00:00.000Z'))
    const first = {
      id: 'rel_1',
      endpointId: 'e1',
      version: 1,
      createdAt: '2026-03-01T10:00:00.000Z',
      diff: [{ field: 'image', old: null, new: 'worker:1' }],
    }
    const second = {
      id: 'rel_2',
      endpointId: 'e1',
      version: 2,
      createdAt: '2026-03-02T10:00:00.000Z',
      diff: [{ field: 'env', old: {}, new: { A: 'ü' } }],
    }
    await releases.insert(first)
    await releases.insert(second)
    expect(await releases.listByEndpoint('e1')).toEqual([second, first])
    await expect(releases.insert({ ...second, id: 'rel_dup' })).rejects.toThrow()
    await endpoints.delete('e1')
    expect(await releases.listByEndpoint('e1')).toEqual([])
  })

  it('migration 0018 gives an endpoint made before it one release of its version', async () => {
    await endpoints.insert(endpoint('e2', 3, '2026-03-05T10:00:00.000Z'))
    // What the migration runs on the endpoints it finds (its last statement).
    const migration = migrationList.find((m) => m.name === '0018-endpoint-releases')!
    const backfill = migration[store.dialect].at(-1)!
    await sql.raw(backfill).execute(store.db)
    expect(await releases.listByEndpoint('e2')).toEqual([
      {
        id: 'rel_e2',
        endpointId: 'e2',
        version: 3,
        createdAt: '2026-03-05T10:00:00.000Z',
        diff: [],
      },
    ])
  })
})
