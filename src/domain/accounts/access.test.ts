import { describe, expect, it } from 'vitest'
import { decideAccess, type Principal } from './access.js'
import type { Permission } from './account.js'

function principal(permission: Permission, endpointIds: string[] = []): Principal {
  return {
    accountId: 'acct_1',
    isAdmin: false,
    key: {
      id: 'key_1',
      accountId: 'acct_1',
      name: 'k',
      prefix: 'pyd_',
      permission,
      endpointIds,
      createdAt: '2026-01-01T00:00:00.000Z',
      expiresAt: null,
      revokedAt: null,
      lastUsedAt: null,
    },
  }
}

describe('decideAccess', () => {
  it('lets a read-write key read and write', () => {
    expect(decideAccess(principal('READ_WRITE'), { write: true })).toEqual({ allowed: true })
  })

  it('lets a read-only key read but not write', () => {
    expect(decideAccess(principal('READ_ONLY'), { write: false }).allowed).toBe(true)
    expect(decideAccess(principal('READ_ONLY'), { write: true })).toEqual({
      allowed: false,
      detail: 'this API key is read-only',
    })
  })

  it('limits a restricted key to the job API of its endpoints', () => {
    const key = principal('RESTRICTED', ['ep1'])
    expect(decideAccess(key, { write: true, endpointId: 'ep1' }).allowed).toBe(true)
    expect(decideAccess(key, { write: true, endpointId: 'ep2' }).allowed).toBe(false)
    expect(decideAccess(key, { write: false }).allowed).toBe(false)
  })
})
