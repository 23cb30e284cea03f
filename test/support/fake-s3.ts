import { createHash, createHmac, timingSafeEqual } from 'node:crypto'
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * A fake S3 for tests: PutObject, GetObject, DeleteObject and ListObjectsV2 on one bucket,
 * path-style or virtual-hosted (by the Host header), keeping objects in memory. It refuses
 * (403 SignatureDoesNotMatch) every request whose Signature Version 4 it cannot recompute from
 * what arrived. The verifier below is written separately from src/store/aws-sigv4.ts on
 * purpose: a mistake shared by signer and checker would otherwise pass unseen.
 */

export interface FakeS3Request {
  method: string
  /** The raw path and query as they arrived. */
  url: string
  host: string
  signedHeaders: string[]
  verified: boolean
  reason?: string
}

export interface FakeS3 {
  endpoint: string
  port: number
  objects: Map<string, { body: Buffer; contentType: string }>
  requests: FakeS3Request[]
  /** While true, every request is answered 503 SlowDown (after its signature is checked). */
  down: boolean
  close(): Promise<void>
}

const MAX_SKEW_MS = 15 * 60 * 1000

function hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex')
}

/** RFC 3986 unreserved characters stay; every other UTF-8 byte becomes %XX. */
function encodeStrict(text: string): string {
  let out = ''
  for (const byte of Buffer.from(text, 'utf8')) {
    const c = String.fromCharCode(byte)
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
  }
  return out
}

function byBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b))
}

function xmlEscape(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
}

interface Verdict {
  ok: boolean
  reason?: string
  signedHeaders: string[]
}

function verify(
  request: IncomingMessage,
  body: Buffer,
  credentials: { accessKeyId: string; secretAccessKey: string },
  region: string,
): Verdict {
  const auth = request.headers.authorization ?? ''
  const match =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/.exec(
      auth,
    )
  if (!match) return { ok: false, reason: 'malformed authorization', signedHeaders: [] }
  const [, accessKey, date, scopeRegion, signedList, signature] = match as unknown as string[]
  const signedHeaders = signedList!.split(';')
  const fail = (reason: string): Verdict => ({ ok: false, reason, signedHeaders })
  if (accessKey !== credentials.accessKeyId) return fail('unknown access key')
  if (scopeRegion !== region) return fail(`wrong region ${scopeRegion}`)
  for (const required of ['host', 'x-amz-date', 'x-amz-content-sha256']) {
    if (!signedHeaders.includes(required)) return fail(`${required} is not signed`)
  }
  const stamp = String(request.headers['x-amz-date'] ?? '')
  const at = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(stamp)
  if (!at || stamp.slice(0, 8) !== date) return fail('bad x-amz-date')
  const when = Date.UTC(+at[1]!, +at[2]! - 1, +at[3]!, +at[4]!, +at[5]!, +at[6]!)
  if (Math.abs(Date.now() - when) > MAX_SKEW_MS) return fail('RequestTimeTooSkewed')
  const contentSha = String(request.headers['x-amz-content-sha256'] ?? '')
  if (contentSha !== hex(body)) return fail('XAmzContentSHA256Mismatch')

  const raw = request.url ?? '/'
  const q = raw.indexOf('?')
  const rawPath = q === -1 ? raw : raw.slice(0, q)
  const rawQuery = q === -1 ? '' : raw.slice(q + 1)
  const path = rawPath
    .split('/')
    .map((s) => encodeStrict(decodeURIComponent(s)))
    .join('/')
  const query = rawQuery
    .split('&')
    .filter(Boolean)
    .map((pair) => {
      const [name = '', value = ''] = pair.split(/=(.*)/s)
      return [encodeStrict(decodeURIComponent(name)), encodeStrict(decodeURIComponent(value))]
    })
    // By name, then by value: sorting the joined `name=value` would misplace `a-b` and `a`.
    .sort(([a = '', av = ''], [b = '', bv = '']) => byBytes(a, b) || byBytes(av, bv))
    .map(([name, value]) => `${name}=${value}`)
    .join('&')
  const canonicalHeaders = [...signedHeaders].sort().map((name) => {
    const value = request.headers[name]
    if (value === undefined) return undefined
    return `${name}:${String(value).trim().replace(/\s+/g, ' ')}\n`
  })
  if (canonicalHeaders.includes(undefined)) return fail('a signed header is missing')
  const canonical = [
    request.method,
    path,
    query,
    canonicalHeaders.join(''),
    signedList,
    contentSha,
  ].join('\n')
  const toSign = `AWS4-HMAC-SHA256\n${stamp}\n${date}/${region}/s3/aws4_request\n${hex(canonical)}`
  let key: Buffer = Buffer.from(`AWS4${credentials.secretAccessKey}`)
  for (const part of [date!, region, 's3', 'aws4_request']) {
    key = createHmac('sha256', key).update(part).digest()
  }
  const expected = createHmac('sha256', key).update(toSign).digest()
  const given = Buffer.from(signature!, 'hex')
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return fail('SignatureDoesNotMatch')
  }
  return { ok: true, signedHeaders }
}

export async function startFakeS3(options: {
  bucket: string
  region: string
  accessKeyId: string
  secretAccessKey: string
}): Promise<FakeS3> {
  const objects = new Map<string, { body: Buffer; contentType: string }>()
  const requests: FakeS3Request[] = []
  const fake: FakeS3 = {
    endpoint: '',
    port: 0,
    objects,
    requests,
    down: false,
    close: async () => {},
  }

  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const body = Buffer.concat(chunks)
      const host = String(request.headers.host ?? '')
      const verdict = verify(request, body, options, options.region)
      requests.push({
        method: request.method ?? '',
        url: request.url ?? '',
        host,
        signedHeaders: verdict.signedHeaders,
        verified: verdict.ok,
        ...(verdict.reason ? { reason: verdict.reason } : {}),
      })
      const error = (status: number, code: string) => {
        response.writeHead(status, { 'content-type': 'application/xml' })
        response.end(`<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code></Error>`)
      }
      if (!verdict.ok) return error(403, 'SignatureDoesNotMatch')
      if (fake.down) return error(503, 'SlowDown')

      const url = new URL(request.url ?? '/', 'http://fake-s3')
      const segments = url.pathname.split('/').slice(1).map(decodeURIComponent)
      // Virtual-hosted when the Host names the bucket; path-style otherwise.
      const virtual = host.startsWith(`${options.bucket}.`)
      const bucket = virtual ? options.bucket : segments.shift()
      if (bucket !== options.bucket) return error(404, 'NoSuchBucket')
      const key = segments.join('/')

      if (key === '' && request.method === 'GET' && url.searchParams.get('list-type') === '2') {
        const prefix = url.searchParams.get('prefix') ?? ''
        const max = Number(url.searchParams.get('max-keys') ?? 1000)
        const after = url.searchParams.get('continuation-token')
        const start = after ? Buffer.from(after, 'base64url').toString() : ''
        const all = [...objects.keys()].filter((k) => k.startsWith(prefix) && k > start).sort()
        const page = all.slice(0, max)
        const truncated = all.length > page.length
        response.writeHead(200, { 'content-type': 'application/xml' })
        response.end(
          `<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` +
            `<Name>${options.bucket}</Name><Prefix>${xmlEscape(prefix)}</Prefix><KeyCount>${page.length}</KeyCount>` +
            `<MaxKeys>${max}</MaxKeys><IsTruncated>${truncated}</IsTruncated>` +
            page
              .map(
                (k) =>
                  `<Contents><Key>${xmlEscape(k)}</Key><Size>${objects.get(k)!.body.length}</Size><StorageClass>STANDARD</StorageClass></Contents>`,
              )
              .join('') +
            (truncated
              ? `<NextContinuationToken>${Buffer.from(page.at(-1)!).toString('base64url')}</NextContinuationToken>`
              : '') +
            `</ListBucketResult>`,
        )
        return
      }
      if (key === '') return error(400, 'InvalidRequest')
      switch (request.method) {
        case 'PUT':
          objects.set(key, {
            body,
            contentType: String(request.headers['content-type'] ?? 'binary/octet-stream'),
          })
          response.writeHead(200, { etag: `"${createHash('md5').update(body).digest('hex')}"` })
          return response.end()
        case 'GET': {
          const found = objects.get(key)
          if (!found) return error(404, 'NoSuchKey')
          response.writeHead(200, {
            'content-type': found.contentType,
            'content-length': found.body.length,
          })
          return response.end(found.body)
        }
        case 'DELETE':
          objects.delete(key)
          response.writeHead(204)
          return response.end()
        default:
          return error(405, 'MethodNotAllowed')
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  Object.assign(fake, {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  })
  return fake
}

/**
 * A fetch that sends every request to 127.0.0.1:`port` whatever its host name, keeping the
 * name in the Host header: virtual-hosted URLs (`<bucket>.s3.test`) reach the fake S3
 * without DNS.
 */
export function loopbackFetch(port: number) {
  return (
    url: string,
    init: { method: string; headers: Record<string, string>; body?: Buffer; signal: AbortSignal },
  ): Promise<Response> =>
    new Promise((resolve, reject) => {
      const target = new URL(url)
      const outgoing = httpRequest(
        {
          host: '127.0.0.1',
          port,
          method: init.method,
          path: `${target.pathname}${target.search}`,
          headers: { ...init.headers, host: target.host },
          signal: init.signal,
        },
        (incoming) => {
          const chunks: Buffer[] = []
          incoming.on('data', (chunk: Buffer) => chunks.push(chunk))
          incoming.on('end', () => {
            const headers = new Headers()
            for (const [name, value] of Object.entries(incoming.headers)) {
              if (typeof value === 'string') headers.set(name, value)
            }
            const status = incoming.statusCode ?? 500
            const noBody = status === 204 || status === 304
            resolve(new Response(noBody ? null : Buffer.concat(chunks), { status, headers }))
          })
        },
      )
      outgoing.on('error', reject)
      outgoing.end(init.body)
    })
}
