/**
 * Which IP addresses the platform never connects to on a user's behalf (docs/security.md
 * "Egress policy"): everything that is not a public unicast address. A request from the
 * platform comes from inside the operator's network, so it can reach what the user cannot:
 * cloud metadata (169.254.169.254), databases and admin ports on private networks, the host's
 * own loopback services. Sources: the IANA IPv4 and IPv6 Special-Purpose Address Registries.
 */
import { cidr, formatIp, inBlock, type CidrBlock, type IpAddress } from './ip-address.js'

/** The name of a rule, as refusals and logs show it. */
export type AddressRule =
  | 'this-network'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'carrier-grade-nat'
  | 'link-local'
  | 'ietf-protocol-assignments'
  | 'documentation'
  | 'benchmarking'
  | 'deprecated-relay'
  | 'multicast'
  | 'broadcast'
  | 'reserved'
  | 'unique-local'
  | 'site-local'
  | 'teredo'
  | 'nat64-local-use'
  | 'not-global-unicast'

export interface AddressRefusal {
  rule: AddressRule
  /** What the address is, to follow "<address> is ": "a private address (RFC 1918)". */
  reason: string
}

interface DeniedRange {
  block: CidrBlock
  rule: AddressRule
  reason: string
}

const range = (text: string, rule: AddressRule, reason: string): DeniedRange => ({
  block: cidr(text),
  rule,
  reason,
})

/** IPv4: the first matching range decides, so the narrow ranges come before the wide ones. */
const IPV4_DENIED: readonly DeniedRange[] = [
  range('0.0.0.0/32', 'unspecified', 'the unspecified address (0.0.0.0)'),
  range('0.0.0.0/8', 'this-network', 'a "this network" address (0.0.0.0/8, RFC 1122)'),
  range('10.0.0.0/8', 'private', 'a private address (RFC 1918)'),
  range(
    '100.64.0.0/10',
    'carrier-grade-nat',
    'a carrier-grade NAT address (100.64.0.0/10, RFC 6598)',
  ),
  range('127.0.0.0/8', 'loopback', 'a loopback address (127.0.0.0/8)'),
  range(
    '169.254.0.0/16',
    'link-local',
    'a link-local address (169.254.0.0/16, where cloud metadata services answer)',
  ),
  range('172.16.0.0/12', 'private', 'a private address (RFC 1918)'),
  range(
    '192.0.0.0/24',
    'ietf-protocol-assignments',
    'an IETF protocol assignment (192.0.0.0/24, RFC 6890)',
  ),
  range('192.0.2.0/24', 'documentation', 'a documentation address (192.0.2.0/24, RFC 5737)'),
  range(
    '192.88.99.0/24',
    'deprecated-relay',
    'a deprecated 6to4 relay anycast address (192.88.99.0/24, RFC 7526)',
  ),
  range('192.168.0.0/16', 'private', 'a private address (RFC 1918)'),
  range('198.18.0.0/15', 'benchmarking', 'a benchmarking address (198.18.0.0/15, RFC 2544)'),
  range('198.51.100.0/24', 'documentation', 'a documentation address (198.51.100.0/24, RFC 5737)'),
  range('203.0.113.0/24', 'documentation', 'a documentation address (203.0.113.0/24, RFC 5737)'),
  range('224.0.0.0/4', 'multicast', 'a multicast address (224.0.0.0/4)'),
  range('255.255.255.255/32', 'broadcast', 'the limited broadcast address (255.255.255.255)'),
  range('240.0.0.0/4', 'reserved', 'a reserved address (240.0.0.0/4)'),
]

/** IPv6 forms that carry an IPv4 address: they are judged by the IPv4 address they reach. */
const IPV6_EMBEDDING: ReadonlyArray<{
  block: CidrBlock
  form: string
  /** Where the 32 bits of IPv4 sit, counted from the low end. */
  shift: bigint
  /** Whether the form is in use, so that it reaches a public IPv4 address that may be allowed. */
  inUse: boolean
}> = [
  {
    block: cidr('::ffff:0:0/96'),
    form: 'the IPv4-mapped form (::ffff:0:0/96)',
    shift: 0n,
    inUse: true,
  },
  {
    block: cidr('::ffff:0:0:0/96'),
    form: 'the IPv4-translated form (::ffff:0:0:0/96, RFC 2765)',
    shift: 0n,
    inUse: true,
  },
  {
    block: cidr('64:ff9b::/96'),
    form: 'the NAT64 form (64:ff9b::/96, RFC 6052)',
    shift: 0n,
    inUse: true,
  },
  {
    block: cidr('2002::/16'),
    form: 'a 6to4 address (2002::/16, RFC 3056)',
    shift: 80n,
    inUse: true,
  },
  // Deprecated (RFC 4291) and refused whatever it holds; named by its IPv4 address when that
  // is internal, since a dual-stack stack may still carry it there.
  {
    block: cidr('::/96'),
    form: 'the IPv4-compatible form (::/96, deprecated)',
    shift: 0n,
    inUse: false,
  },
]

const IPV6_DENIED: readonly DeniedRange[] = [
  range('::/128', 'unspecified', 'the unspecified address (::)'),
  range('::1/128', 'loopback', 'the loopback address (::1)'),
  range(
    '64:ff9b:1::/48',
    'nat64-local-use',
    'a local-use NAT64 address (64:ff9b:1::/48, RFC 8215)',
  ),
  range('2001::/32', 'teredo', 'a Teredo tunnel address (2001::/32, RFC 4380)'),
  range('2001:2::/48', 'benchmarking', 'a benchmarking address (2001:2::/48, RFC 5180)'),
  range('2001:db8::/32', 'documentation', 'a documentation address (2001:db8::/32, RFC 3849)'),
  range('3fff::/20', 'documentation', 'a documentation address (3fff::/20, RFC 9637)'),
  range('fc00::/7', 'unique-local', 'a unique-local address (fc00::/7, RFC 4193)'),
  range('fe80::/10', 'link-local', 'a link-local address (fe80::/10)'),
  range('fec0::/10', 'site-local', 'a deprecated site-local address (fec0::/10)'),
  range('ff00::/8', 'multicast', 'a multicast address (ff00::/8)'),
  // Everything else outside 2000::/3 is unassigned or special (100::/64 discard, ...).
]
const GLOBAL_UNICAST = cidr('2000::/3')

/** The IPv4 address an IPv6 address stands for (mapped, NAT64, 6to4, ...), with the form's name. */
export function embeddedIpv4(
  ip: IpAddress,
): { ipv4: IpAddress; form: string; inUse: boolean } | undefined {
  if (ip.family !== 6) return undefined
  // :: and ::1 are in ::/96 but are IPv6 addresses of their own.
  if (ip.value <= 1n) return undefined
  for (const embedding of IPV6_EMBEDDING) {
    if (inBlock(ip, embedding.block)) {
      return {
        ipv4: { family: 4, value: (ip.value >> embedding.shift) & 0xffffffffn },
        form: embedding.form,
        inUse: embedding.inUse,
      }
    }
  }
  return undefined
}

/** Why the platform must not connect to `ip`, or undefined for a public unicast address. */
export function deniedAddress(ip: IpAddress): AddressRefusal | undefined {
  if (ip.family === 4) {
    const hit = IPV4_DENIED.find((denied) => inBlock(ip, denied.block))
    return hit && { rule: hit.rule, reason: hit.reason }
  }
  const hit = IPV6_DENIED.find((denied) => inBlock(ip, denied.block))
  if (hit) return { rule: hit.rule, reason: hit.reason }
  const embedded = embeddedIpv4(ip)
  if (embedded) {
    const inner = deniedAddress(embedded.ipv4)
    if (inner) {
      return {
        rule: inner.rule,
        reason: `${embedded.form} of ${formatIp(embedded.ipv4)}, ${inner.reason}`,
      }
    }
    // A public IPv4 in a form that is still in use reaches that public address.
    if (embedded.inUse) return undefined
  }
  if (!inBlock(ip, GLOBAL_UNICAST)) {
    return {
      rule: 'not-global-unicast',
      reason: 'not a global unicast address (outside 2000::/3)',
    }
  }
  return undefined
}
