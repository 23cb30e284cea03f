import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { AppError } from '../../shared/app-error.js'
import {
  deriveWorkerKeySecret,
  isWorkerKey,
  WORKER_KEY_CACHE_TTL_MS,
  WORKER_KEY_PREFIX,
  WorkerKeyService,
  type WorkerKeyGenerations,
} from './worker-keys.js'

function service(secret = deriveWorkerKeySecret(randomBytes(32)), now = Date.now) {
  const generations = new Map([
    ['aaaaaaaaaaaaaa', 1],
    ['bbbbbbbbbbbbbb', 1],
  ])
  const repo: WorkerKeyGenerations = {
    workerKeyGeneration: async (id) => generations.get(id),
    bumpWorkerKeyGeneration: async (id) => {
      const next = generations.get(id)
      if (next === undefined) return undefined
      generations.set(id, next + 1)
      return next + 1
    },
  }
  const keys = new WorkerKeyService({
    generations: repo,
    ownEndpoint: async (accountId, id) => {
      if (accountId !== 'acct_owner' || !generations.has(id)) {
        throw new AppError('NOT_FOUND', `endpoint ${id} not found`)
      }
      return { id }
    },
    secret,
    now,
  })
  return { keys, generations }
}

describe('worker keys', () => {
  it('are derived: the same secret and generation give the same key, which names its endpoint', async () => {
    const secret = deriveWorkerKeySecret(randomBytes(32))
    const a = await service(secret).keys.workerKeyFor('aaaaaaaaaaaaaa')
    expect(a).toMatch(/^pydw_aaaaaaaaaaaaaa_[A-Za-z0-9_-]{43}$/)
    expect(isWorkerKey(a)).toBe(true)
    expect(await service(secret).keys.workerKeyFor('aaaaaaaaaaaaaa')).toBe(a)
    expect(await service().keys.workerKeyFor('aaaaaaaaaaaaaa')).not.toBe(a)
    expect(await service(secret).keys.workerKeyFor('bbbbbbbbbbbbbb')).not.toBe(a)
    await expect(service(secret).keys.workerKeyFor('cccccccccccccc')).rejects.toThrow(/not found/)
  })

  it('derive their secret from the encryption key with HKDF, never the key itself', () => {
    const encryptionKey = randomBytes(32)
    const secret = deriveWorkerKeySecret(encryptionKey)
    expect(secret).toHaveLength(32)
    expect(secret.equals(encryptionKey)).toBe(false)
    expect(deriveWorkerKeySecret(encryptionKey).equals(secret)).toBe(true)
  })

  it('check: ok for the endpoint; other endpoint, rotated, unknown, altered and malformed keys fail', async () => {
    const { keys, generations } = service()
    const key = await keys.workerKeyFor('aaaaaaaaaaaaaa')
    expect(await keys.check(key, 'aaaaaaaaaaaaaa')).toEqual({
      ok: true,
      endpointId: 'aaaaaaaaaaaaaa',
    })
    expect(await keys.check(key, 'bbbbbbbbbbbbbb')).toMatchObject({
      ok: false,
      reason: 'other-endpoint',
      detail:
        'this worker key belongs to endpoint aaaaaaaaaaaaaa: it cannot be used for endpoint bbbbbbbbbbbbbb',
    })
    const last = key.at(-1) === 'A' ? 'B' : 'A'
    expect(await keys.check(`${key.slice(0, -1)}${last}`, 'aaaaaaaaaaaaaa')).toMatchObject({
      ok: false,
      reason: 'invalid',
    })
    // Another endpoint's id with this MAC does not verify either.
    const forged = key.replace('aaaaaaaaaaaaaa', 'bbbbbbbbbbbbbb')
    expect(await keys.check(forged, 'bbbbbbbbbbbbbb')).toMatchObject({ reason: 'invalid' })
    for (const bad of [WORKER_KEY_PREFIX, `${WORKER_KEY_PREFIX}x`, `${key}x`, key.slice(0, -1)]) {
      expect(await keys.check(bad, 'aaaaaaaaaaaaaa')).toMatchObject({ reason: 'malformed' })
    }
    generations.delete('aaaaaaaaaaaaaa')
    // A verified key is trusted for WORKER_KEY_CACHE_TTL_MS; deleting the endpoint forgets it.
    expect(await keys.check(key, 'aaaaaaaaaaaaaa')).toMatchObject({ ok: true })
    keys.forget()
    expect(await keys.check(key, 'aaaaaaaaaaaaaa')).toMatchObject({ reason: 'invalid' })
  })

  it('rotation gives a new key and the old one stops verifying; only the owner reads or rotates', async () => {
    const { keys } = service()
    const first = await keys.read('acct_owner', 'aaaaaaaaaaaaaa')
    expect(first).toMatchObject({ endpointId: 'aaaaaaaaaaaaaa', generation: 1 })
    const second = await keys.rotate('acct_owner', 'aaaaaaaaaaaaaa')
    expect(second.generation).toBe(2)
    expect(second.workerKey).not.toBe(first.workerKey)
    expect(await keys.check(first.workerKey, 'aaaaaaaaaaaaaa')).toMatchObject({ reason: 'invalid' })
    expect(await keys.check(second.workerKey, 'aaaaaaaaaaaaaa')).toMatchObject({ ok: true })
    expect(await keys.workerKeyFor('aaaaaaaaaaaaaa')).toBe(second.workerKey)
    await expect(keys.read('acct_other', 'aaaaaaaaaaaaaa')).rejects.toThrow(/not found/)
    await expect(keys.rotate('acct_other', 'aaaaaaaaaaaaaa')).rejects.toThrow(/not found/)
  })

  it('trusts a verified key for WORKER_KEY_CACHE_TTL_MS, then reads its generation again', async () => {
    let now = 1_000_000
    const { keys, generations } = service(undefined, () => now)
    const key = await keys.workerKeyFor('aaaaaaaaaaaaaa')
    expect(await keys.check(key, 'aaaaaaaaaaaaaa')).toMatchObject({ ok: true })
    // A rotation elsewhere (another replica) is not seen until the cache time has passed...
    generations.set('aaaaaaaaaaaaaa', 7)
    now += WORKER_KEY_CACHE_TTL_MS - 1
    expect(await keys.check(key, 'aaaaaaaaaaaaaa')).toMatchObject({ ok: true })
    // ...and the cached verification still scopes the key to its own endpoint.
    expect(await keys.check(key, 'bbbbbbbbbbbbbb')).toMatchObject({ reason: 'other-endpoint' })
    now += 1
    expect(await keys.check(key, 'aaaaaaaaaaaaaa')).toMatchObject({ reason: 'invalid' })
  })
})
