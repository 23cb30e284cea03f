/**
 * IP addresses and CIDR blocks as numbers, for the egress rules (docs/security.md "Egress
 * policy"). Only canonical spellings are read here: addresses from URLs have already been
 * normalised by the WHATWG URL parser (hex, octal and decimal IPv4 spellings become dotted
 * decimal), resolvers answer in canonical form, and the operator's allow-list is refused at start
 * when an entry is ambiguous (a leading zero could mean octal).
 */

export interface IpAddress {
  family: 4 | 6
  /** The address as an unsigned integer of 32 (IPv4) or 128 (IPv6) bits. */
  value: bigint
}

export interface CidrBlock {
  family: 4 | 6
  /** The first address of the block. */
  base: bigint
  prefix: number
}

export const bitsOf = (family: 4 | 6): number => (family === 4 ? 32 : 128)

function parseIpv4(text: string): bigint | undefined {
  const parts = text.split('.')
  if (parts.length !== 4) return undefined
  let value = 0n
  for (const part of parts) {
    // Decimal only, no leading zero: "010" is octal to some parsers and decimal to others.
    if (!/^(0|[1-9]\d{0,2})$/.test(part)) return undefined
    const octet = Number(part)
    if (octet > 255) return undefined
    value = (value << 8n) | BigInt(octet)
  }
  return value
}

function parseIpv6(text: string): bigint | undefined {
  let groups: string[]
  const halves = text.split('::')
  if (halves.length > 2) return undefined
  const split = (half: string) => (half === '' ? [] : half.split(':'))
  const head = split(halves[0]!)
  const tail = halves.length === 2 ? split(halves[1]!) : []
  // A trailing dotted IPv4 (::ffff:10.0.0.1) stands for the last two groups.
  const last = (halves.length === 2 ? tail : head).at(-1)
  const embedded = last?.includes('.') ? parseIpv4(last) : undefined
  if (last?.includes('.')) {
    if (embedded === undefined) return undefined
    const list = halves.length === 2 ? tail : head
    list.splice(-1, 1, (embedded >> 16n).toString(16), (embedded & 0xffffn).toString(16))
  }
  if (halves.length === 2) {
    const missing = 8 - head.length - tail.length
    if (missing < 1) return undefined
    groups = [...head, ...Array<string>(missing).fill('0'), ...tail]
  } else {
    groups = head
  }
  if (groups.length !== 8) return undefined
  let value = 0n
  for (const group of groups) {
    if (!/^[0-9a-f]{1,4}$/i.test(group)) return undefined
    value = (value << 16n) | BigInt(parseInt(group, 16))
  }
  return value
}

/**
 * An IPv4 address in dotted decimal, or an IPv6 address (brackets and a zone id such as
 * `%eth0` allowed: the zone does not change which range the address is in). Undefined for
 * anything else, including host names.
 */
export function parseIp(text: string): IpAddress | undefined {
  const unbracketed = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text
  if (unbracketed.includes(':')) {
    const value = parseIpv6(unbracketed.replace(/%.*$/, ''))
    return value === undefined ? undefined : { family: 6, value }
  }
  const value = parseIpv4(unbracketed)
  return value === undefined ? undefined : { family: 4, value }
}

/** Dotted decimal, or the RFC 5952 form of an IPv6 address (lower case, longest zero run as ::). */
export function formatIp(ip: IpAddress): string {
  if (ip.family === 4) {
    return [24n, 16n, 8n, 0n].map((shift) => String((ip.value >> shift) & 0xffn)).join('.')
  }
  const groups = Array.from({ length: 8 }, (_, i) =>
    Number((ip.value >> BigInt(112 - 16 * i)) & 0xffffn),
  )
  let bestStart = -1
  let bestLength = 1
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++
      continue
    }
    let j = i
    while (j < 8 && groups[j] === 0) j++
    if (j - i > bestLength) {
      bestStart = i
      bestLength = j - i
    }
    i = j
  }
  const hex = groups.map((g) => g.toString(16))
  if (bestStart < 0) return hex.join(':')
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`
}

/** `10.0.0.0/8`, `fc00::/7`, or one address (a block of one). Undefined when malformed. */
export function parseCidr(text: string): CidrBlock | undefined {
  const slash = text.indexOf('/')
  const ip = parseIp(slash < 0 ? text : text.slice(0, slash))
  if (ip === undefined) return undefined
  const width = bitsOf(ip.family)
  let prefix = width
  if (slash >= 0) {
    const raw = text.slice(slash + 1)
    if (!/^(0|[1-9]\d{0,2})$/.test(raw)) return undefined
    prefix = Number(raw)
    if (prefix > width) return undefined
  }
  const host = BigInt(width - prefix)
  return { family: ip.family, base: (ip.value >> host) << host, prefix }
}

export function cidr(text: string): CidrBlock {
  const block = parseCidr(text)
  if (block === undefined) throw new Error(`not a CIDR block: ${text}`)
  return block
}

export function inBlock(ip: IpAddress, block: CidrBlock): boolean {
  if (ip.family !== block.family) return false
  const host = BigInt(bitsOf(block.family) - block.prefix)
  return ip.value >> host === block.base >> host
}

export const sameAddress = (a: IpAddress, b: IpAddress): boolean =>
  a.family === b.family && a.value === b.value

export function formatCidr(block: CidrBlock): string {
  return `${formatIp({ family: block.family, value: block.base })}/${block.prefix}`
}
