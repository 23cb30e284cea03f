import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  SecretBox,
  generateEncryptionKey,
  parseEncryptionKey,
} from '../../src/domain/registries/secret-box.js'
import { MissingSecretError, SecretService } from '../../src/domain/secrets/secret-service.js'
import { ManualClock } from '../../src/shared/clock.js'
import type { Store } from '../../src/store/open-store.js'
import { KyselySecretRepo } from '../../src/store/secret-repo.js'
import { addTestAccount, testStores } from '../support/stores.js'

describe.each(testStores())('account secrets on $name', ({ open }) => {
  let store: Store
  let secrets: SecretService

  beforeEach(async () => {
    store = await open()
    await addTestAccount(store, 'acct_a')
    await addTestAccount(store, 'acct_b')
    secrets = new SecretService({
      repo: new KyselySecretRepo(store.db),
      box: new SecretBox(parseEncryptionKey(generateEncryptionKey())),
      clock: new ManualClock(new Date('2026-03-01T10:00:00.000Z')),
    })
  })
  afterEach(() => store.close())

  it('stores the value sealed and resolves references per account', async () => {
    await secrets.create('acct_a', { name: 'TOKEN', value: 'alpha-value' })
    await secrets.create('acct_b', { name: 'TOKEN', value: 'beta-value' })
    const rows = await store.db.selectFrom('account_secrets').selectAll().execute()
    expect(rows).toHaveLength(2)
    for (const row of rows) expect(row.value_sealed).not.toMatch(/alpha|beta/)

    const env = { A: 'x {{RUNPOD_SECRET_TOKEN}} y', B: 'plain {{ other }}' }
    expect(await secrets.resolveEnv('acct_a', env)).toEqual({
      A: 'x alpha-value y',
      B: 'plain {{ other }}',
    })
    expect(await secrets.resolveEnv('acct_b', env)).toEqual({ ...env, A: 'x beta-value y' })
  })

  it('refuses a duplicate name in the account with 409 (the unique constraint)', async () => {
    await secrets.create('acct_a', { name: 'TOKEN', value: 'one' })
    await expect(secrets.create('acct_a', { name: 'TOKEN', value: 'two' })).rejects.toMatchObject({
      code: 'INVALID_STATE',
      message: 'a secret named "TOKEN" already exists',
    })
    expect(await secrets.list('acct_a')).toHaveLength(1)
  })

  it('names a missing secret, never a value', async () => {
    await secrets.create('acct_b', { name: 'ONLY_B', value: 'b-value' })
    const failure = await secrets
      .resolveEnv('acct_a', { X: '{{ RUNPOD_SECRET_ONLY_B }}' })
      .catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(MissingSecretError)
    expect((failure as Error).message).toBe(
      'its env refers to the secret "ONLY_B", which the account does not have',
    )
  })

  it('deletes only the account’s own secret: another account’s reads as not found', async () => {
    const secret = await secrets.create('acct_a', { name: 'TOKEN', value: 'one' })
    await expect(secrets.delete('acct_b', secret.id)).rejects.toMatchObject({ code: 'NOT_FOUND' })
    await secrets.delete('acct_a', secret.id)
    expect(await secrets.list('acct_a')).toEqual([])
  })
})
