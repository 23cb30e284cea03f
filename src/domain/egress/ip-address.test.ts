import { describe, expect, it } from 'vitest'
import { formatCidr, formatIp, inBlock, parseCidr, parseIp } from './ip-address.js'

const v4 = (text: string) => parseIp(text)!
const roundTrip = (text: string) => formatIp(parseIp(text)!)

describe('IP addresses', () => {
  it('reads dotted-decimal IPv4', () => {
    expect(parseIp('0.0.0.0')).toEqual({ family: 4, value: 0n })
    expect(parseIp('255.255.255.255')).toEqual({ family: 4, value: 0xffffffffn })
    expect(parseIp('10.1.2.3')).toEqual({ family: 4, value: 0x0a010203n })
  })

  it('refuses IPv4 spellings that are not canonical dotted decimal', () => {
    // Octal ("010"), hex, short forms and decimal integers are the URL parser's business.
    for (const bad of [
      '010.0.0.1',
      '0x7f.0.0.1',
      '127.1',
      '2130706433',
      '256.0.0.1',
      '1.2.3.4.5',
      '1.2.3.',
      '',
      ' 1.2.3.4',
    ]) {
      expect(parseIp(bad), bad).toBeUndefined()
    }
  })

  it('reads IPv6, with ::, an embedded IPv4 tail, brackets and a zone id', () => {
    expect(parseIp('::')).toEqual({ family: 6, value: 0n })
    expect(parseIp('::1')).toEqual({ family: 6, value: 1n })
    expect(parseIp('[::1]')).toEqual({ family: 6, value: 1n })
    expect(parseIp('fe80::1%eth0')).toEqual(parseIp('fe80::1'))
    expect(parseIp('::ffff:127.0.0.1')).toEqual(parseIp('::ffff:7f00:1'))
    expect(parseIp('1:2:3:4:5:6:7:8')!.value).toBe(0x00010002000300040005000600070008n)
    expect(parseIp('1::8')).toEqual(parseIp('1:0:0:0:0:0:0:8'))
    expect(parseIp('FFFF::')).toEqual(parseIp('ffff:0:0:0:0:0:0:0'))
  })

  it('refuses malformed IPv6', () => {
    for (const bad of [
      '1:2:3:4:5:6:7:8:9',
      '1::2::3',
      '1:2:3:4:5:6:7',
      ':::',
      '12345::',
      'g::1',
      '::ffff:1.2.3',
      '1.2.3.4::',
      '1:2:3:4:5:6:7::8:9',
    ]) {
      expect(parseIp(bad), bad).toBeUndefined()
    }
  })

  it('writes addresses in their canonical form (RFC 5952 for IPv6)', () => {
    expect(roundTrip('10.0.0.1')).toBe('10.0.0.1')
    expect(roundTrip('0:0:0:0:0:0:0:1')).toBe('::1')
    expect(roundTrip('0:0:0:0:0:0:0:0')).toBe('::')
    expect(roundTrip('2001:DB8:0:0:1:0:0:1')).toBe('2001:db8::1:0:0:1')
    expect(roundTrip('2001:db8:0:1:1:1:1:1')).toBe('2001:db8:0:1:1:1:1:1')
    expect(roundTrip('::ffff:10.0.0.1')).toBe('::ffff:a00:1')
    expect(roundTrip('fe80:0:0:0:0:0:0:0')).toBe('fe80::')
  })

  it('reads CIDR blocks and single addresses, and tests membership at both edges', () => {
    const block = parseCidr('172.16.0.0/12')!
    expect(formatCidr(block)).toBe('172.16.0.0/12')
    expect(inBlock(v4('172.16.0.0'), block)).toBe(true)
    expect(inBlock(v4('172.31.255.255'), block)).toBe(true)
    expect(inBlock(v4('172.15.255.255'), block)).toBe(false)
    expect(inBlock(v4('172.32.0.0'), block)).toBe(false)
    // Host bits are dropped: 10.1.2.3/8 is 10.0.0.0/8.
    expect(formatCidr(parseCidr('10.1.2.3/8')!)).toBe('10.0.0.0/8')
    expect(formatCidr(parseCidr('127.0.0.2')!)).toBe('127.0.0.2/32')
    expect(formatCidr(parseCidr('fd00::/8')!)).toBe('fd00::/8')
    expect(inBlock(parseIp('fdff::1')!, parseCidr('fd00::/8')!)).toBe(true)
    expect(inBlock(parseIp('fc00::1')!, parseCidr('fd00::/8')!)).toBe(false)
    expect(inBlock(v4('1.2.3.4'), parseCidr('0.0.0.0/0')!)).toBe(true)
    // Families never match each other.
    expect(inBlock(parseIp('::ffff:10.0.0.1')!, parseCidr('10.0.0.0/8')!)).toBe(false)
  })

  it('refuses malformed CIDR blocks', () => {
    for (const bad of [
      '10.0.0.0/33',
      '::/129',
      '10.0.0.0/',
      '10.0.0.0/08',
      '10.0.0.0/-1',
      'host/8',
      '10.0.0.0/8/8',
    ]) {
      expect(parseCidr(bad), bad).toBeUndefined()
    }
  })
})
