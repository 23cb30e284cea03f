import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { AccountPoolService } from '../../src/domain/accounts/account-pools.js'
import { KyselyAccountPoolRepo } from '../../src/store/account-pool-repo.js'
import type { Store } from '../../src/store/open-store.js'
import { podStoreOf } from '../../src/store/pod-repo.js'
import { addTestAccount, testStores } from '../support/stores.js'

/**
 * The admin's bindings of accounts to pools (migration 0028) on each store: replaced as a
 * whole, sorted, per account, and read inside a capacity unit (where placement reads them)
 * as written by the service outside it.
 */
describe.each(testStores())('account pools on $name', ({ open }) => {
  let store: Store
  beforeEach(async () => {
    store = await open()
  })
  afterEach(() => store.close())

  it('binds, replaces and unbinds, one account not touching another', async () => {
    const pools = new AccountPoolService(
      new KyselyAccountPoolRepo(store.db),
      () => '2026-11-28T00:00:00.000Z',
    )
    const a = await addTestAccount(store)
    const b = await addTestAccount(store)
    expect(await pools.poolsOf(a)).toEqual([])
    expect(await pools.set(a, ['team-b', 'team-a', 'team-b'])).toEqual(['team-a', 'team-b'])
    await pools.set(b, ['team-c'])
    expect(await pools.poolsOf(a)).toEqual(['team-a', 'team-b'])
    expect(await pools.set(a, ['team-d'])).toEqual(['team-d'])
    expect(await pools.poolsOf(b)).toEqual(['team-c'])

    const inUnit = await podStoreOf(store).exclusive((unit) => unit.accountPools(a))
    expect(inUnit).toEqual(['team-d'])

    await pools.set(a, [])
    expect(await pools.poolsOf(a)).toEqual([])
    await expect(pools.set(a, ['not a pool'])).rejects.toThrow(/not a pool name: "not a pool"/)
  })
})
