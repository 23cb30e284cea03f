import type { ObjectStore } from '../domain/models/ports.js'
import { sha256Hex, signRequest, uriEncode, type SigV4Credentials } from './aws-sigv4.js'
import { isValidObjectKey } from './local-object-store.js'

/** A fetch-shaped function; tests pass one that reaches a fake S3. */
export type S3Fetch = (
  url: string,
  init: { method: string; headers: Record<string, string>; body?: Buffer; signal: AbortSignal },
) => Promise<Response>

export interface S3ObjectStoreOptions {
  /** `https://s3.eu-west-1.amazonaws.com`, `http://minio:9000`, ...: scheme, host, port. */
  endpoint: string
  region: string
  bucket: string
  credentials: SigV4Credentials
  /** Prepended to every key (`podyard/` keeps podyard's objects apart in a shared bucket). */
  prefix?: string
  /**
   * `<endpoint>/<bucket>/<key>` instead of `<bucket>.<endpoint host>/<key>`: what MinIO,
   * SeaweedFS, Garage and most self-hosted stores need, and bucket names with dots over TLS.
   */
  forcePathStyle?: boolean
  /** How long one request may take before it fails, ms. */
  timeoutMs?: number
  fetch?: S3Fetch
  now?: () => Date
}

const DEFAULT_TIMEOUT_MS = 30_000
/** Bucket names as S3 allows them; anything else would change the URL's meaning. */
const BUCKET_SHAPE = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/

/** An S3 answer the store did not expect; carries the status and S3's error code, no secret. */
export class S3Error extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string | undefined,
  ) {
    super(message)
    this.name = 'S3Error'
  }
}

/** The text of the first `<tag>...</tag>` in `xml`, entities decoded; undefined without one. */
export function xmlText(xml: string, tag: string): string | undefined {
  const match = new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(xml)
  return match ? decodeXmlEntities(match[1]!) : undefined
}

/**
 * Only the five predefined entities and numeric references: S3's answers use nothing else, and
 * never expanding a DTD's entities is what keeps a hostile answer from growing without bound.
 */
export function decodeXmlEntities(text: string): string {
  return text.replace(
    /&(amp|lt|gt|quot|apos|#\d{1,7}|#x[0-9a-fA-F]{1,6});/g,
    (_, entity: string) => {
      switch (entity) {
        case 'amp':
          return '&'
        case 'lt':
          return '<'
        case 'gt':
          return '>'
        case 'quot':
          return '"'
        case 'apos':
          return "'"
      }
      const code = entity.startsWith('#x')
        ? Number.parseInt(entity.slice(2), 16)
        : Number.parseInt(entity.slice(1), 10)
      return code <= 0x10ffff ? String.fromCodePoint(code) : ''
    },
  )
}

/** One page of a ListObjectsV2 answer. */
export function parseListObjectsV2(xml: string): {
  keys: string[]
  nextContinuationToken: string | undefined
} {
  const keys: string[] = []
  for (const match of xml.matchAll(/<Contents>([\s\S]*?)<\/Contents>/g)) {
    const key = xmlText(match[1]!, 'Key')
    if (key !== undefined) keys.push(key)
  }
  const truncated = xmlText(xml, 'IsTruncated') === 'true'
  return {
    keys,
    nextContinuationToken: truncated ? xmlText(xml, 'NextContinuationToken') : undefined,
  }
}

/** `a/b/` from ` /a/b// `; empty for none. */
function normalisePrefix(prefix: string | undefined): string {
  const trimmed = (prefix ?? '').trim().replace(/^\/+|\/+$/g, '')
  return trimmed === '' ? '' : `${trimmed}/`
}

/**
 * The ObjectStore port over any S3-compatible API (AWS S3, MinIO, R2, Garage, ...): PutObject,
 * GetObject, DeleteObject and ListObjectsV2 over fetch, each request signed with Signature
 * Version 4 and its payload hashed. No SDK: four calls do not need one.
 */
export class S3ObjectStore implements ObjectStore {
  private readonly endpoint: URL
  private readonly prefix: string
  private readonly fetch: S3Fetch
  private readonly now: () => Date

  constructor(private readonly options: S3ObjectStoreOptions) {
    let endpoint: URL
    try {
      endpoint = new URL(options.endpoint)
    } catch {
      throw new Error(`S3 endpoint ${JSON.stringify(options.endpoint)} is not a URL`)
    }
    if (endpoint.protocol !== 'http:' && endpoint.protocol !== 'https:') {
      throw new Error(`S3 endpoint ${options.endpoint} must be http:// or https://`)
    }
    if (endpoint.username || endpoint.password || endpoint.search || endpoint.hash) {
      throw new Error('S3 endpoint must be scheme://host[:port][/path], nothing more')
    }
    if (!BUCKET_SHAPE.test(options.bucket) || options.bucket.includes('..')) {
      throw new Error(`S3 bucket ${JSON.stringify(options.bucket)} is not a valid bucket name`)
    }
    if (!options.forcePathStyle && /^(\d+\.\d+\.\d+\.\d+|\[.*\])$/.test(endpoint.hostname)) {
      // `<bucket>.127.0.0.1` names no host: an address can only be used path-style.
      throw new Error(`S3 endpoint ${options.endpoint} is an IP address: set forcePathStyle`)
    }
    this.endpoint = endpoint
    this.prefix = normalisePrefix(options.prefix)
    this.fetch =
      options.fetch ??
      ((url, { body, ...init }) =>
        fetch(url, { ...init, ...(body ? { body: new Uint8Array(body) } : {}) }))
    this.now = options.now ?? (() => new Date())
  }

  /** The URL of a bucket-relative S3 key (already prefixed), with an optional query. */
  url(s3Key: string, query = ''): URL {
    const base = this.endpoint.pathname.replace(/\/+$/, '')
    const keyPath = s3Key === '' ? '' : s3Key.split('/').map(uriEncode).join('/')
    const url = new URL(this.endpoint.origin)
    if (this.options.forcePathStyle) {
      url.pathname = `${base}/${this.options.bucket}${keyPath === '' ? '' : `/${keyPath}`}`
    } else {
      url.hostname = `${this.options.bucket}.${this.endpoint.hostname}`
      url.pathname = `${base}/${keyPath}`
    }
    url.search = query
    return url
  }

  private s3Key(key: string): string {
    if (!isValidObjectKey(key)) throw new Error(`invalid object key ${JSON.stringify(key)}`)
    return `${this.prefix}${key}`
  }

  private async send(
    method: string,
    url: URL,
    body?: Buffer,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    const payloadSha256 = sha256Hex(body ?? '')
    const signed = signRequest(
      {
        method,
        url,
        headers: { ...headers, 'x-amz-content-sha256': payloadSha256 },
        payloadSha256,
      },
      this.options.credentials,
      { region: this.options.region, service: 's3' },
      this.now(),
    )
    // fetch sets Host itself from the URL; sending it too is refused by some fetch versions.
    const { host: _host, ...sent } = signed.headers
    return this.fetch(url.href, {
      method,
      headers: sent,
      ...(body ? { body } : {}),
      signal: AbortSignal.timeout(this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS),
    })
  }

  /** Throws an S3Error naming the operation, status and S3's code (never the request's headers). */
  private async fail(operation: string, key: string, response: Response): Promise<never> {
    const text = await response.text().catch(() => '')
    const code = xmlText(text.slice(0, 4096), 'Code')
    throw new S3Error(
      `S3 ${operation} ${key} in bucket ${this.options.bucket}: HTTP ${response.status}${code ? ` ${code}` : ''}`,
      response.status,
      code,
    )
  }

  async put(key: string, body: Buffer, contentType: string): Promise<void> {
    const response = await this.send('PUT', this.url(this.s3Key(key)), body, {
      'content-type': contentType,
    })
    if (!response.ok) return this.fail('PutObject', key, response)
    await response.arrayBuffer()
  }

  async get(key: string): Promise<{ body: Buffer; contentType: string } | undefined> {
    if (!isValidObjectKey(key)) return undefined
    const response = await this.send('GET', this.url(this.s3Key(key)))
    if (response.status === 404) {
      await response.arrayBuffer()
      return undefined
    }
    if (!response.ok) return this.fail('GetObject', key, response)
    return {
      body: Buffer.from(await response.arrayBuffer()),
      contentType: response.headers.get('content-type') ?? 'application/octet-stream',
    }
  }

  async delete(key: string): Promise<void> {
    const response = await this.send('DELETE', this.url(this.s3Key(key)))
    // Deleting what is not there is success in S3 (204) and in the port; some stores say 404.
    if (!response.ok && response.status !== 404) return this.fail('DeleteObject', key, response)
    await response.arrayBuffer()
  }

  /**
   * The keys under `prefix` (relative to the store's own prefix), page by page with
   * ListObjectsV2. Not part of the port: for operators' tools and orphan sweeps.
   */
  async *list(prefix = '', pageSize = 1000): AsyncGenerator<string> {
    let token: string | undefined
    do {
      const query = new URLSearchParams({ 'list-type': '2', 'max-keys': String(pageSize) })
      query.set('prefix', `${this.prefix}${prefix}`)
      if (token) query.set('continuation-token', token)
      // URLSearchParams writes spaces as `+`; S3 signs and reads `%20`.
      const url = this.url('', query.toString().replace(/\+/g, '%20'))
      const response = await this.send('GET', url)
      if (!response.ok) return this.fail('ListObjectsV2', prefix || '/', response)
      const page = parseListObjectsV2(await response.text())
      for (const key of page.keys) {
        if (key.startsWith(this.prefix)) yield key.slice(this.prefix.length)
      }
      token = page.nextContinuationToken
    } while (token)
  }
}
