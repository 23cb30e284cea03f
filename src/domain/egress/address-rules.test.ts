import { describe, expect, it } from 'vitest'
import { deniedAddress, type AddressRule } from './address-rules.js'
import { parseIp } from './ip-address.js'

const ruleOf = (text: string): AddressRule | undefined => {
  const ip = parseIp(text)
  if (ip === undefined) throw new Error(`test address ${text} does not parse`)
  return deniedAddress(ip)?.rule
}

/** Each denied range: its rule, its first and last address, and the addresses just outside. */
const IPV4_RANGES: Array<[string, AddressRule, string, string, string | null, string | null]> = [
  ['0.0.0.0/8', 'this-network', '0.0.0.1', '0.255.255.255', null, '1.0.0.0'],
  ['10.0.0.0/8', 'private', '10.0.0.0', '10.255.255.255', '9.255.255.255', '11.0.0.0'],
  [
    '100.64.0.0/10',
    'carrier-grade-nat',
    '100.64.0.0',
    '100.127.255.255',
    '100.63.255.255',
    '100.128.0.0',
  ],
  ['127.0.0.0/8', 'loopback', '127.0.0.0', '127.255.255.255', '126.255.255.255', '128.0.0.0'],
  [
    '169.254.0.0/16',
    'link-local',
    '169.254.0.0',
    '169.254.255.255',
    '169.253.255.255',
    '169.255.0.0',
  ],
  ['172.16.0.0/12', 'private', '172.16.0.0', '172.31.255.255', '172.15.255.255', '172.32.0.0'],
  [
    '192.0.0.0/24',
    'ietf-protocol-assignments',
    '192.0.0.0',
    '192.0.0.255',
    '191.255.255.255',
    '192.0.1.0',
  ],
  ['192.0.2.0/24', 'documentation', '192.0.2.0', '192.0.2.255', '192.0.1.255', '192.0.3.0'],
  [
    '192.88.99.0/24',
    'deprecated-relay',
    '192.88.99.0',
    '192.88.99.255',
    '192.88.98.255',
    '192.88.100.0',
  ],
  ['192.168.0.0/16', 'private', '192.168.0.0', '192.168.255.255', '192.167.255.255', '192.169.0.0'],
  ['198.18.0.0/15', 'benchmarking', '198.18.0.0', '198.19.255.255', '198.17.255.255', '198.20.0.0'],
  [
    '198.51.100.0/24',
    'documentation',
    '198.51.100.0',
    '198.51.100.255',
    '198.51.99.255',
    '198.51.101.0',
  ],
  [
    '203.0.113.0/24',
    'documentation',
    '203.0.113.0',
    '203.0.113.255',
    '203.0.112.255',
    '203.0.114.0',
  ],
  ['224.0.0.0/4', 'multicast', '224.0.0.0', '239.255.255.255', '223.255.255.255', null],
  ['240.0.0.0/4', 'reserved', '240.0.0.0', '255.255.255.254', null, null],
]

const IPV6_RANGES: Array<[string, AddressRule, string, string, string | null, string | null]> = [
  ['fc00::/7', 'unique-local', 'fc00::', 'fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', null, null],
  ['fe80::/10', 'link-local', 'fe80::', 'febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff', null, null],
  ['fec0::/10', 'site-local', 'fec0::', 'feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', null, null],
  ['ff00::/8', 'multicast', 'ff00::', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', null, null],
  [
    '2001::/32',
    'teredo',
    '2001::',
    '2001:0:ffff:ffff:ffff:ffff:ffff:ffff',
    '2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
    '2001:1::',
  ],
  [
    '2001:2::/48',
    'benchmarking',
    '2001:2::',
    '2001:2:0:ffff:ffff:ffff:ffff:ffff',
    '2001:1:ffff:ffff:ffff:ffff:ffff:ffff',
    '2001:2:1::',
  ],
  [
    '2001:db8::/32',
    'documentation',
    '2001:db8::',
    '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff',
    '2001:db7:ffff:ffff:ffff:ffff:ffff:ffff',
    '2001:db9::',
  ],
  [
    '3fff::/20',
    'documentation',
    '3fff::',
    '3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff',
    '3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
    '3fff:1000::',
  ],
  [
    '64:ff9b:1::/48',
    'nat64-local-use',
    '64:ff9b:1::',
    '64:ff9b:1:ffff:ffff:ffff:ffff:ffff',
    null,
    null,
  ],
]

describe('address rules', () => {
  it.each(IPV4_RANGES)(
    'IPv4 %s is %s, from its first to its last address',
    (_, rule, first, last, below, above) => {
      expect(ruleOf(first)).toBe(rule)
      expect(ruleOf(last)).toBe(rule)
      if (below !== null) expect(ruleOf(below)).not.toBe(rule)
      if (above !== null) expect(ruleOf(above)).not.toBe(rule)
    },
  )

  it.each(IPV6_RANGES)(
    'IPv6 %s is %s, from its first to its last address',
    (_, rule, first, last, below, above) => {
      expect(ruleOf(first)).toBe(rule)
      expect(ruleOf(last)).toBe(rule)
      if (below !== null) expect(ruleOf(below)).not.toBe(rule)
      if (above !== null) expect(ruleOf(above)).not.toBe(rule)
    },
  )

  it('names the unspecified and broadcast addresses on their own', () => {
    expect(ruleOf('0.0.0.0')).toBe('unspecified')
    expect(ruleOf('255.255.255.255')).toBe('broadcast')
    expect(ruleOf('::')).toBe('unspecified')
    expect(ruleOf('::1')).toBe('loopback')
  })

  it('says where the cloud metadata service answers', () => {
    expect(deniedAddress(parseIp('169.254.169.254')!)).toEqual({
      rule: 'link-local',
      reason: 'a link-local address (169.254.0.0/16, where cloud metadata services answer)',
    })
    expect(deniedAddress(parseIp('10.0.0.1')!)!.reason).toBe('a private address (RFC 1918)')
  })

  it('lets public unicast addresses through, at the edges of the denied ranges too', () => {
    for (const publicAddress of [
      '1.0.0.0',
      '1.1.1.1',
      '8.8.8.8',
      '9.255.255.255',
      '11.0.0.0',
      '93.184.216.34',
      '100.63.255.255',
      '100.128.0.0',
      '126.255.255.255',
      '128.0.0.0',
      '172.15.255.255',
      '172.32.0.0',
      '192.0.1.0',
      '192.0.3.0',
      '192.167.255.255',
      '192.169.0.0',
      '223.255.255.255',
      '2000::',
      '2001:1::',
      '2001:db9::',
      '2606:4700:4700::1111',
      '2a00:1450:4001::1',
      '3fff:1000::',
      '3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
    ]) {
      expect(deniedAddress(parseIp(publicAddress)!), publicAddress).toBeUndefined()
    }
  })

  it('refuses every IPv6 address outside global unicast (2000::/3)', () => {
    for (const outside of [
      '100::1',
      '1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
      '4000::',
      'e000::1',
      '5f00::1',
    ]) {
      expect(ruleOf(outside), outside).toBe('not-global-unicast')
    }
    // 100::/64 is the discard-only block (RFC 6666).
    expect(ruleOf('100::')).toBe('not-global-unicast')
  })

  describe('IPv6 forms of IPv4 addresses are judged by the IPv4 address', () => {
    it('IPv4-mapped (::ffff:0:0/96)', () => {
      expect(ruleOf('::ffff:127.0.0.1')).toBe('loopback')
      expect(ruleOf('::ffff:7f00:1')).toBe('loopback')
      expect(ruleOf('::ffff:10.0.0.1')).toBe('private')
      expect(ruleOf('::ffff:0.0.0.0')).toBe('unspecified')
      expect(ruleOf('::ffff:255.255.255.255')).toBe('broadcast')
      expect(deniedAddress(parseIp('::ffff:a9fe:a9fe')!)).toEqual({
        rule: 'link-local',
        reason:
          'the IPv4-mapped form (::ffff:0:0/96) of 169.254.169.254, a link-local address (169.254.0.0/16, where cloud metadata services answer)',
      })
      expect(ruleOf('::ffff:8.8.8.8')).toBeUndefined()
    })

    it('IPv4-translated (::ffff:0:0:0/96)', () => {
      expect(ruleOf('::ffff:0:127.0.0.1')).toBe('loopback')
      expect(ruleOf('::ffff:0:8.8.8.8')).toBeUndefined()
    })

    it('NAT64 (64:ff9b::/96)', () => {
      expect(ruleOf('64:ff9b::10.0.0.1')).toBe('private')
      expect(ruleOf('64:ff9b::a9fe:a9fe')).toBe('link-local')
      expect(ruleOf('64:ff9b::7f00:1')).toBe('loopback')
      expect(ruleOf('64:ff9b::8.8.8.8')).toBeUndefined()
      // Just past the /96: not NAT64 of anything, and outside 2000::/3.
      expect(ruleOf('64:ff9b:0:0:0:1::')).toBe('not-global-unicast')
    })

    it('6to4 (2002::/16)', () => {
      expect(ruleOf('2002:a00:1::1')).toBe('private')
      expect(ruleOf('2002:7f00:1::')).toBe('loopback')
      expect(ruleOf('2002:808:808::1')).toBeUndefined()
    })

    it('IPv4-compatible (::/96, deprecated): refused even for a public IPv4 address', () => {
      expect(ruleOf('::127.0.0.1')).toBe('loopback')
      expect(ruleOf('::10.0.0.1')).toBe('private')
      expect(ruleOf('::8.8.8.8')).toBe('not-global-unicast')
      expect(ruleOf('::2')).toBe('this-network')
    })
  })
})
