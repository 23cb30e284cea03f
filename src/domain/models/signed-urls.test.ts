import { describe, expect, it } from 'vitest'
import { deriveObjectUrlSecret, ObjectUrlSigner } from './signed-urls.js'

describe('signed result URLs', () => {
  const signer = new ObjectUrlSigner(deriveObjectUrlSecret(Buffer.alloc(32, 7)))
  const expiresAt = new Date('2026-01-08T00:00:00.000Z')
  const url = new URL(signer.url('http://h:1/', 'images/sync-1.png', expiresAt))
  const expires = url.searchParams.get('expires') ?? undefined
  const signature = url.searchParams.get('signature') ?? undefined

  it('names the object and its expiry', () => {
    expect(url.pathname).toBe('/v2/objects/images/sync-1.png')
    expect(expires).toBe(String(expiresAt.getTime() / 1000))
  })

  it('is good until the expiry, then expired; a changed key, expiry or signature is refused', () => {
    const before = new Date(expiresAt.getTime() - 1)
    expect(signer.check('images/sync-1.png', expires, signature, before)).toEqual({ ok: true })
    expect(signer.check('images/sync-1.png', expires, signature, expiresAt)).toEqual({
      ok: false,
      reason: 'expired',
    })
    const bad = { ok: false, reason: 'bad-signature' }
    expect(signer.check('images/sync-2.png', expires, signature, before)).toEqual(bad)
    expect(signer.check('images/sync-1.png', `${Number(expires) + 1}`, signature, before)).toEqual(
      bad,
    )
    expect(signer.check('images/sync-1.png', expires, undefined, before)).toEqual(bad)
    expect(signer.check('images/sync-1.png', 'soon', signature, before)).toEqual(bad)
  })

  it('differs with another platform key', () => {
    const other = new ObjectUrlSigner(deriveObjectUrlSecret(Buffer.alloc(32, 8)))
    expect(other.check('images/sync-1.png', expires, signature, new Date(0))).toEqual({
      ok: false,
      reason: 'bad-signature',
    })
  })
})
