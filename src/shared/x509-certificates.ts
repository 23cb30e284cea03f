import { createHash, createPublicKey, randomBytes, sign, type KeyObject } from 'node:crypto'
import { isIP } from 'node:net'

/**
 * X.509 certificates written with node:crypto alone (Node.js reads certificates but cannot make
 * them): the DER of RFC 5280's structures, signed with ECDSA P-256 and SHA-256. Only what a
 * certificate authority for Docker engines needs: a self-signed CA, and leaf certificates for a
 * server (its names and addresses) or a client.
 */

const der = (tag: number, body: Buffer): Buffer => {
  const length = body.length
  if (length < 0x80) return Buffer.concat([Buffer.from([tag, length]), body])
  const bytes: number[] = []
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256)
  return Buffer.concat([Buffer.from([tag, 0x80 | bytes.length, ...bytes]), body])
}
const sequence = (...items: Buffer[]) => der(0x30, Buffer.concat(items))
const set = (...items: Buffer[]) => der(0x31, Buffer.concat(items))
const octets = (body: Buffer) => der(0x04, body)
const utf8 = (text: string) => der(0x0c, Buffer.from(text, 'utf8'))
const boolean = (value: boolean) => der(0x01, Buffer.from([value ? 0xff : 0]))
const explicit = (n: number, body: Buffer) => der(0xa0 + n, body)

/** A non-negative INTEGER from its big-endian bytes (a leading 0 where the top bit is set). */
function integer(bytes: Buffer): Buffer {
  let start = 0
  while (start < bytes.length - 1 && bytes[start] === 0 && (bytes[start + 1] ?? 0) < 0x80) start++
  const trimmed = bytes.subarray(start)
  return der(0x02, (trimmed[0] ?? 0) >= 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed)
}

function oid(dotted: string): Buffer {
  const [first = 0, second = 0, ...rest] = dotted.split('.').map(Number)
  const bytes = [first * 40 + second]
  for (const arc of rest) {
    const groups = [arc & 0x7f]
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128))
      groups.unshift(0x80 | (v & 0x7f))
    bytes.push(...groups)
  }
  return der(0x06, Buffer.from(bytes))
}

/** A BIT STRING of whole bytes (no unused bits). */
const bits = (body: Buffer) => der(0x03, Buffer.concat([Buffer.from([0]), body]))

/** RFC 5280: UTCTime through 2049, GeneralizedTime from 2050; always to the second, in UTC. */
function time(at: Date): Buffer {
  const iso = at.toISOString() // YYYY-MM-DDTHH:MM:SS.sssZ
  const digits = iso.slice(0, 19).replace(/[-T:]/g, '') + 'Z'
  return at.getUTCFullYear() < 2050
    ? der(0x17, Buffer.from(digits.slice(2), 'ascii'))
    : der(0x18, Buffer.from(digits, 'ascii'))
}

const ECDSA_WITH_SHA256 = sequence(oid('1.2.840.10045.4.3.2'))
const name = (commonName: string) =>
  sequence(
    set(sequence(oid('2.5.4.10'), utf8('podyard'))),
    set(sequence(oid('2.5.4.3'), utf8(commonName))),
  )
const extension = (id: string, critical: boolean, value: Buffer) =>
  sequence(oid(id), ...(critical ? [boolean(true)] : []), octets(value))

/** KeyUsage bits as RFC 5280 numbers them (bit 0 is the first byte's top bit). */
function keyUsage(...usages: number[]): Buffer {
  let byte = 0
  for (const usage of usages) byte |= 0x80 >> usage
  let unused = 0
  while (unused < 7 && (byte & (1 << unused)) === 0) unused++
  return der(0x03, Buffer.from([unused, byte]))
}
const DIGITAL_SIGNATURE = 0
const KEY_CERT_SIGN = 5
const CRL_SIGN = 6

/** RFC 5280's method 1 is SHA-1 of the key's bits; any unique value is allowed: SHA-256 of the SPKI, cut to 20 bytes. */
const keyId = (spki: Buffer) => createHash('sha256').update(spki).digest().subarray(0, 20)

const spkiOf = (key: KeyObject) => key.export({ type: 'spki', format: 'der' })

export class CertificateRequestError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'CertificateRequestError'
  }
}

/** A DNS name or an IP address a server certificate is valid for. */
function subjectAltName(address: string): Buffer {
  const family = isIP(address)
  if (family === 4) return der(0x87, Buffer.from(address.split('.').map(Number)))
  if (family === 6) {
    const [head = '', tail = ''] = address.split('::')
    const groups = (part: string) => (part === '' ? [] : part.split(':'))
    const high = groups(head)
    const low = groups(address.includes('::') ? tail : '')
    const all = [...high, ...Array(8 - high.length - low.length).fill('0'), ...low]
    return der(0x87, Buffer.concat(all.map((g) => Buffer.from(g.padStart(4, '0'), 'hex'))))
  }
  if (
    !/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i.test(
      address,
    )
  )
    throw new CertificateRequestError(`"${address}" is neither an IP address nor a DNS name`)
  return der(0x82, Buffer.from(address.toLowerCase(), 'ascii'))
}

export interface Authority {
  /** The CA's certificate, PEM. */
  certificate: string
  /** The CA's private key (ECDSA P-256). */
  key: KeyObject
}

export interface IssueOptions {
  commonName: string
  publicKey: KeyObject
  notBefore: Date
  notAfter: Date
}

function pem(derBytes: Buffer): string {
  const lines = derBytes.toString('base64').match(/.{1,64}/g) ?? []
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`
}

function signed(
  issuer: { name: Buffer; key: KeyObject },
  subject: IssueOptions,
  extensions: Buffer[],
): string {
  // 16 random bytes with the top bit clear: positive, at most 20 octets, unpredictable.
  const serial = randomBytes(16)
  serial[0] = ((serial[0] ?? 0) & 0x7f) | 0x01
  const tbs = sequence(
    explicit(0, integer(Buffer.from([2]))),
    integer(serial),
    ECDSA_WITH_SHA256,
    issuer.name,
    sequence(time(subject.notBefore), time(subject.notAfter)),
    name(subject.commonName),
    spkiOf(subject.publicKey),
    explicit(3, sequence(...extensions)),
  )
  const signature = sign('sha256', tbs, issuer.key)
  return pem(sequence(tbs, ECDSA_WITH_SHA256, bits(signature)))
}

/** A self-signed CA certificate for the key pair. */
export function selfSignedAuthority(options: IssueOptions & { key: KeyObject }): string {
  const spki = spkiOf(options.publicKey)
  return signed({ name: name(options.commonName), key: options.key }, options, [
    extension('2.5.29.19', true, sequence(boolean(true))),
    extension('2.5.29.15', true, keyUsage(KEY_CERT_SIGN, CRL_SIGN)),
    extension('2.5.29.14', false, octets(keyId(spki))),
  ])
}

/**
 * A leaf certificate signed by the authority: for a server (TLS server authentication only,
 * valid for `addresses`) or a client (TLS client authentication only). The usages keep one
 * from serving as the other: a server's key on a host cannot log in to other hosts' engines.
 */
export function issueLeaf(
  authority: Authority,
  options: IssueOptions & ({ use: 'server'; addresses: string[] } | { use: 'client' }),
): string {
  const issuerSpki = spkiOf(createPublicKey(authority.key))
  const extensions = [
    extension('2.5.29.19', true, sequence()),
    extension('2.5.29.15', true, keyUsage(DIGITAL_SIGNATURE)),
    extension(
      '2.5.29.37',
      false,
      sequence(oid(options.use === 'server' ? '1.3.6.1.5.5.7.3.1' : '1.3.6.1.5.5.7.3.2')),
    ),
    extension('2.5.29.14', false, octets(keyId(spkiOf(options.publicKey)))),
    extension('2.5.29.35', false, sequence(der(0x80, keyId(issuerSpki)))),
  ]
  if (options.use === 'server')
    extensions.push(
      extension('2.5.29.17', false, sequence(...options.addresses.map(subjectAltName))),
    )
  return signed({ name: subjectOf(authority.certificate), key: authority.key }, options, extensions)
}

/** The length-prefixed element at `at`: where its body starts and where it ends. */
function element(bytes: Buffer, at: number): { body: number; end: number } {
  const first = bytes[at + 1] ?? 0
  if (first < 0x80) return { body: at + 2, end: at + 2 + first }
  let length = 0
  for (let i = 0; i < (first & 0x7f); i++) length = length * 256 + (bytes[at + 2 + i] ?? 0)
  const body = at + 2 + (first & 0x7f)
  return { body, end: body + length }
}

/** The certificate's subject as its DER bytes: a leaf's issuer must be these bytes exactly. */
function subjectOf(certificatePem: string): Buffer {
  const bytes = Buffer.from(certificatePem.replace(/-----[^-]+-----|\s/g, ''), 'base64')
  const tbs = element(bytes, element(bytes, 0).body)
  let at = tbs.body
  // version [0], serialNumber, signature, issuer, validity: the subject is the sixth.
  for (let i = 0; i < 5; i++) at = element(bytes, at).end
  return bytes.subarray(at, element(bytes, at).end)
}
