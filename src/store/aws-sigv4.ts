import { createHash, createHmac } from 'node:crypto'

/**
 * AWS Signature Version 4 (header-based), as S3 and S3-compatible stores check it. Pure: the
 * same request, credentials and instant always give the same headers, which is what lets the
 * tests pin it to AWS's published vectors.
 */

export const SIGV4_ALGORITHM = 'AWS4-HMAC-SHA256'
/** SHA-256 of the empty payload, hex. */
export const EMPTY_PAYLOAD_SHA256 =
  'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'

export interface SigV4Credentials {
  accessKeyId: string
  secretAccessKey: string
}

export interface SigV4Request {
  method: string
  /** The URL exactly as it will be sent: its host, path and query are signed. */
  url: URL
  /** Headers to send and sign besides `host` and `x-amz-date` (which the signer adds). */
  headers: Record<string, string>
  /** Hex SHA-256 of the body (or `UNSIGNED-PAYLOAD`); goes into the canonical request only. */
  payloadSha256: string
}

export interface SigV4Scope {
  region: string
  service: string
}

export interface SignedRequest {
  /** Every header to send: the request's, plus `host`, `x-amz-date` and `authorization`. */
  headers: Record<string, string>
  authorization: string
  signature: string
  canonicalRequest: string
  stringToSign: string
}

export function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex')
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest()
}

/** `20150830T123600Z`: ISO 8601 basic format, UTC, no fraction. */
export function amzDate(now: Date): string {
  return now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '')
}

/**
 * RFC 3986 percent-encoding as SigV4 wants it: every byte but the unreserved characters
 * (`A-Z a-z 0-9 - . _ ~`), upper-case hex. encodeURIComponent alone leaves `!'()*` unencoded,
 * which S3 would then sign differently from us.
 */
export function uriEncode(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  )
}

/** Percent-decoding that leaves a malformed escape as it is instead of throwing. */
function decode(value: string): string {
  try {
    return decodeURIComponent(value)
  } catch {
    return value
  }
}

/**
 * S3's canonical URI: each segment of the path encoded once (S3 does not normalise `.` or
 * `//`, and unlike other services does not double-encode).
 */
export function canonicalUri(pathname: string): string {
  if (pathname === '') return '/'
  return pathname
    .split('/')
    .map((segment) => uriEncode(decode(segment)))
    .join('/')
}

/** Parameters sorted by encoded name then value; a bare name (`?lifecycle`) signs as `name=`. */
export function canonicalQuery(search: string): string {
  const raw = search.startsWith('?') ? search.slice(1) : search
  if (raw === '') return ''
  return raw
    .split('&')
    .filter((part) => part !== '')
    .map((part) => {
      const at = part.indexOf('=')
      const name = at === -1 ? part : part.slice(0, at)
      const value = at === -1 ? '' : part.slice(at + 1)
      return [uriEncode(decode(name)), uriEncode(decode(value))] as const
    })
    .sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join('&')
}

function canonicalHeaderValue(value: string): string {
  return value.trim().replace(/\s+/g, ' ')
}

/** HMAC chain date -> region -> service -> `aws4_request` from `AWS4<secret>`. */
export function signingKey(secretAccessKey: string, date: string, scope: SigV4Scope): Buffer {
  const dateKey = hmac(`AWS4${secretAccessKey}`, date)
  const regionKey = hmac(dateKey, scope.region)
  const serviceKey = hmac(regionKey, scope.service)
  return hmac(serviceKey, 'aws4_request')
}

export function signRequest(
  request: SigV4Request,
  credentials: SigV4Credentials,
  scope: SigV4Scope,
  now: Date,
): SignedRequest {
  const timestamp = amzDate(now)
  const date = timestamp.slice(0, 8)
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(request.headers)) {
    const lower = name.toLowerCase()
    if (lower === 'authorization' || lower === 'host' || lower === 'x-amz-date') continue
    headers[lower] = value
  }
  headers.host = request.url.host
  headers['x-amz-date'] = timestamp

  const names = Object.keys(headers).sort()
  const signedHeaders = names.join(';')
  const canonicalRequest = [
    request.method.toUpperCase(),
    canonicalUri(request.url.pathname),
    canonicalQuery(request.url.search),
    names.map((name) => `${name}:${canonicalHeaderValue(headers[name]!)}\n`).join(''),
    signedHeaders,
    request.payloadSha256,
  ].join('\n')
  const credentialScope = `${date}/${scope.region}/${scope.service}/aws4_request`
  const stringToSign = [
    SIGV4_ALGORITHM,
    timestamp,
    credentialScope,
    sha256Hex(canonicalRequest),
  ].join('\n')
  const signature = createHmac('sha256', signingKey(credentials.secretAccessKey, date, scope))
    .update(stringToSign, 'utf8')
    .digest('hex')
  const authorization =
    `${SIGV4_ALGORITHM} Credential=${credentials.accessKeyId}/${credentialScope}, ` +
    `SignedHeaders=${signedHeaders}, Signature=${signature}`
  return {
    headers: { ...headers, authorization },
    authorization,
    signature,
    canonicalRequest,
    stringToSign,
  }
}
