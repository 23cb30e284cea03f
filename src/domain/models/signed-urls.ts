import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto'

/**
 * Signed URLs of stored results (docs/public-endpoints.md, "Image URLs"): the path names the
 * object and carries `expires` (Unix seconds) and `signature` = base64url(HMAC-SHA256(secret,
 * key + "\n" + expires)). The secret is derived from the platform's encryption key with HKDF
 * under its own label, as worker keys are (worker-keys.ts): every replica signs and checks the
 * same URLs, and nothing about them is stored.
 */
const SECRET_INFO = 'podyard object urls v1'
const SECRET_BYTES = 32

export function deriveObjectUrlSecret(encryptionKey: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', encryptionKey, Buffer.alloc(0), SECRET_INFO, SECRET_BYTES))
}

export type SignatureCheck = { ok: true } | { ok: false; reason: 'bad-signature' | 'expired' }

export class ObjectUrlSigner {
  constructor(private readonly secret: Buffer) {
    if (secret.length < SECRET_BYTES) {
      throw new Error(`the object URL secret must be at least ${SECRET_BYTES} bytes`)
    }
  }

  signature(key: string, expiresSeconds: number): string {
    return createHmac('sha256', this.secret).update(`${key}\n${expiresSeconds}`).digest('base64url')
  }

  /** `<baseUrl>/v2/objects/<key>?expires=..&signature=..`. */
  url(baseUrl: string, key: string, expiresAt: Date): string {
    const expires = Math.floor(expiresAt.getTime() / 1000)
    const path = key.split('/').map(encodeURIComponent).join('/')
    return `${baseUrl.replace(/\/+$/, '')}/v2/objects/${path}?expires=${expires}&signature=${this.signature(key, expires)}`
  }

  /** A bad or missing signature is refused before the expiry is looked at. */
  check(key: string, expires: string | undefined, signature: string | undefined, now: Date) {
    if (expires === undefined || !/^\d{1,12}$/.test(expires) || signature === undefined) {
      return { ok: false, reason: 'bad-signature' } satisfies SignatureCheck
    }
    const expected = Buffer.from(this.signature(key, Number(expires)))
    const given = Buffer.from(signature)
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
      return { ok: false, reason: 'bad-signature' } satisfies SignatureCheck
    }
    if (now.getTime() >= Number(expires) * 1000) {
      return { ok: false, reason: 'expired' } satisfies SignatureCheck
    }
    return { ok: true } satisfies SignatureCheck
  }
}
