import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { AccountService, AUTH_CACHE_TTL_MS } from '../../src/domain/accounts/account-service.js'
import { ManualClock } from '../../src/shared/clock.js'
import { KyselyAccountRepo } from '../../src/store/account-repo.js'
import { KyselyApiKeyRepo } from '../../src/store/api-key-repo.js'
import type { Store } from '../../src/store/open-store.js'
import { testStores } from '../support/stores.js'

/** The short-lived cache of keys that authenticated (AccountService.authenticate). */
describe.each(testStores())('authentication cache on $name', ({ open }) => {
  let store: Store
  let clock: ManualClock
  const service = () =>
    new AccountService(new KyselyAccountRepo(store.db), new KyselyApiKeyRepo(store.db), clock)

  beforeEach(async () => {
    store = await open()
    clock = new ManualClock('2026-03-01T12:00:00.000Z')
  })
  afterEach(async () => {
    await store.close()
  })

  it('forgets a key revoked through the same service at once', async () => {
    const accounts = service()
    const { account } = await accounts.createAccount({ email: 'a@example.com' })
    const { key, secret } = await accounts.createApiKey({
      accountId: account.id,
      name: 'k',
      permission: 'READ_WRITE',
    })
    expect((await accounts.authenticate(secret)).ok).toBe(true)
    await accounts.revokeApiKey(key.id)
    expect(await accounts.authenticate(secret)).toEqual({ ok: false, reason: 'revoked' })
  })

  it('honours a revocation made elsewhere (another replica) within the cache time', async () => {
    const replicaA = service()
    const replicaB = service()
    const { account } = await replicaA.createAccount({ email: 'b@example.com' })
    const { key, secret } = await replicaA.createApiKey({
      accountId: account.id,
      name: 'k',
      permission: 'READ_WRITE',
    })
    expect((await replicaA.authenticate(secret)).ok).toBe(true)
    await replicaB.revokeApiKey(key.id)
    // Trusted a little longer by replica A, never past the cache time (on the service's clock).
    expect((await replicaA.authenticate(secret)).ok).toBe(true)
    clock.advance(AUTH_CACHE_TTL_MS - 1)
    expect((await replicaA.authenticate(secret)).ok).toBe(true)
    clock.advance(1)
    expect(await replicaA.authenticate(secret)).toEqual({ ok: false, reason: 'revoked' })
  })

  it('checks expiry on every request, cached or not', async () => {
    const accounts = service()
    const { account } = await accounts.createAccount({ email: 'c@example.com' })
    const { secret } = await accounts.createApiKey({
      accountId: account.id,
      name: 'k',
      permission: 'READ_WRITE',
      expiresAt: '2026-03-01T12:00:05.000Z',
    })
    expect((await accounts.authenticate(secret)).ok).toBe(true)
    clock.advance(5_000)
    expect(await accounts.authenticate(secret)).toEqual({ ok: false, reason: 'expired' })
  })
})
