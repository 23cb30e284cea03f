import { describe, expect, it } from 'vitest'
import {
  describeRefusal,
  EgressPolicy,
  parseAllowList,
  parseTarget,
  selfReader,
  serverSelf,
  type EgressTarget,
  type ServerSelf,
} from './egress-policy.js'
import { formatIp, parseIp } from './ip-address.js'

const SETTING = 'webhooks.allowInternal'

const target = (raw: string): EgressTarget => {
  const parsed = parseTarget(raw)
  if (!('target' in parsed)) throw new Error(`${raw} was refused: ${parsed.refusal.reason}`)
  return parsed.target
}

const policyWith = (allow: string[] = [], self: ServerSelf = serverSelf([], [])) => {
  const parsed = parseAllowList(allow)
  expect(parsed.problems).toEqual([])
  return new EgressPolicy({ allow: parsed.allow, self: () => self })
}

/** The refusal's rule for a URL with an address host, or undefined when allowed. */
const ruleFor = (policy: EgressPolicy, raw: string) => {
  const t = target(raw)
  return policy.checkAddress(t.ip!, t.port, t.host)?.rule
}

describe('egress policy', () => {
  describe('URLs', () => {
    it('normalises hex, octal, decimal and short IPv4 spellings through the URL parser', () => {
      for (const spelling of [
        'http://127.0.0.1/',
        'http://0x7f.0.0.1/',
        'http://0x7f000001/',
        'http://2130706433/',
        'http://0177.0.0.1/',
        'http://017700000001/',
        'http://127.1/',
        'http://127.0.0.1./',
      ]) {
        const t = target(spelling)
        expect(t.host, spelling).toBe('127.0.0.1')
        expect(formatIp(t.ip!), spelling).toBe('127.0.0.1')
      }
      expect(target('http://0xa9fea9fe/latest/meta-data/').host).toBe('169.254.169.254')
      expect(target('http://0251.0376.0251.0376/').host).toBe('169.254.169.254')
    })

    it('reads IPv6 hosts without brackets, mapped forms included', () => {
      expect(target('http://[::1]:8080/x').host).toBe('::1')
      expect(target('http://[::ffff:127.0.0.1]/').host).toBe('::ffff:7f00:1')
      expect(target('http://[::ffff:127.0.0.1]/').ip).toEqual(parseIp('::ffff:7f00:1'))
    })

    it('keeps names as names, in lower case and without a trailing dot', () => {
      const t = target('https://Hooks.Example.COM./x?y=1')
      expect(t.host).toBe('hooks.example.com')
      expect(t.ip).toBeUndefined()
      expect(t.port).toBe(443)
      expect(target('http://hooks.example.com/').port).toBe(80)
      expect(target('http://hooks.example.com:8443/').port).toBe(8443)
    })

    it('refuses every scheme but http and https', () => {
      for (const raw of [
        'ftp://example.com/',
        'file:///etc/passwd',
        'data:,hello',
        'gopher://x/',
        'ws://example.com/',
        'javascript:alert(1)',
      ]) {
        const parsed = parseTarget(raw)
        expect('refusal' in parsed && parsed.refusal.rule, raw).toBe('scheme')
      }
      const parsed = parseTarget('ftp://example.com/')
      expect('refusal' in parsed && parsed.refusal.reason).toBe(
        'must be an http or https URL (got ftp:)',
      )
    })
  })

  describe('addresses', () => {
    it('refuses internal addresses and lets public ones through', () => {
      const policy = policyWith()
      expect(ruleFor(policy, 'http://10.0.0.1/')).toBe('private')
      expect(ruleFor(policy, 'http://169.254.169.254/')).toBe('link-local')
      expect(ruleFor(policy, 'http://[::ffff:127.0.0.1]/')).toBe('loopback')
      expect(ruleFor(policy, 'http://[fd12::1]/')).toBe('unique-local')
      expect(ruleFor(policy, 'http://93.184.216.34/')).toBeUndefined()
      expect(ruleFor(policy, 'http://[2606:4700:4700::1111]/')).toBeUndefined()
    })

    it('refuses the addresses of this server: its interfaces and public IP', () => {
      const policy = policyWith([], serverSelf(['93.184.216.34', '2a00:1450:4001::1'], []))
      expect(ruleFor(policy, 'http://93.184.216.34/')).toBe('this-server')
      expect(ruleFor(policy, 'http://[::ffff:93.184.216.34]/')).toBe('this-server')
      expect(ruleFor(policy, 'http://[2a00:1450:4001::1]/')).toBe('this-server')
      expect(ruleFor(policy, 'http://93.184.216.35/')).toBeUndefined()
    })

    it("refuses this server's listener always, the allow-list notwithstanding", () => {
      const specific = policyWith(
        ['127.0.0.0/8', '::ffff:0:0/96'],
        serverSelf([], [{ address: '127.0.0.1', port: 8080 }]),
      )
      expect(ruleFor(specific, 'http://127.0.0.1:8080/v2/x/run')).toBe('own-listener')
      expect(ruleFor(specific, 'http://[::ffff:127.0.0.1]:8080/')).toBe('own-listener')
      expect(ruleFor(specific, 'http://127.0.0.1:8081/')).toBeUndefined()
      // A listener on one loopback address is not reached through another.
      expect(ruleFor(specific, 'http://127.0.0.2:8080/')).toBeUndefined()

      const any = policyWith(
        ['0.0.0.0/0', '::/0'],
        serverSelf(['192.168.1.5', '93.184.216.34'], [{ address: '::', port: 8080 }]),
      )
      for (const raw of [
        'http://127.0.0.1:8080/',
        'http://127.9.9.9:8080/',
        'http://[::1]:8080/',
        'http://192.168.1.5:8080/',
        'http://93.184.216.34:8080/',
      ]) {
        expect(ruleFor(any, raw), raw).toBe('own-listener')
      }
      expect(ruleFor(any, 'http://192.168.1.6:8080/')).toBeUndefined()
      expect(ruleFor(any, 'http://93.184.216.34:8443/')).toBeUndefined()
    })

    it('lets the operator allow internal receivers by block, address or name', () => {
      const policy = policyWith([
        '10.1.0.0/16',
        '127.0.0.2',
        'fd00::/8',
        'hooks.internal',
        '*.svc.internal',
      ])
      expect(ruleFor(policy, 'http://10.1.255.255/')).toBeUndefined()
      expect(ruleFor(policy, 'http://10.2.0.0/')).toBe('private')
      expect(ruleFor(policy, 'http://127.0.0.2/')).toBeUndefined()
      expect(ruleFor(policy, 'http://127.0.0.3/')).toBe('loopback')
      // The IPv4 block also covers the IPv6 forms that reach it.
      expect(ruleFor(policy, 'http://[::ffff:10.1.0.9]/')).toBeUndefined()
      expect(ruleFor(policy, 'http://[fd00::9]/')).toBeUndefined()
      expect(ruleFor(policy, 'http://[fc00::9]/')).toBe('unique-local')

      const ip = parseIp('10.9.9.9')!
      expect(policy.checkAddress(ip, 80, 'hooks.internal')).toBeUndefined()
      expect(policy.checkAddress(ip, 80, 'a.svc.internal')).toBeUndefined()
      expect(policy.checkAddress(ip, 80, 'svc.internal')?.rule).toBe('private')
      expect(policy.checkAddress(ip, 80, 'hooks.internal.evil.example')?.rule).toBe('private')
    })
  })

  describe('names', () => {
    it('refuses localhost and names under it without asking a resolver (RFC 6761)', () => {
      const policy = policyWith()
      expect(policy.checkName('localhost')?.rule).toBe('loopback-name')
      expect(policy.checkName('api.localhost')?.rule).toBe('loopback-name')
      expect(policy.checkName(target('http://LOCALHOST./').host)?.rule).toBe('loopback-name')
      expect(policy.checkName('localhost.example.com')).toBeUndefined()
      expect(policyWith(['localhost']).checkName('localhost')).toBeUndefined()
    })
  })

  describe('the allow-list setting', () => {
    it('reads addresses, blocks, names and *.domains', () => {
      const { allow, problems } = parseAllowList([
        '10.0.0.0/8',
        '127.0.0.1',
        'fd00::/8',
        'Hooks.Internal.',
        '*.svc.cluster.local',
        'host_with_underscore.internal',
      ])
      expect(problems).toEqual([])
      expect(allow.blocks).toHaveLength(3)
      expect(allow.names).toEqual(['hooks.internal', 'host_with_underscore.internal'])
      expect(allow.suffixes).toEqual(['.svc.cluster.local'])
    })

    it('refuses what it cannot read without guessing', () => {
      const { problems } = parseAllowList([
        '10.0.0.0/33',
        '010.0.0.1',
        '0x7f.1',
        '10.1',
        'not a host',
        'http://hooks.internal/',
        '*',
        '',
      ])
      expect(problems).toHaveLength(8)
      expect(problems[0]).toBe(
        '"10.0.0.0/33" is not an IP address, a CIDR block (10.0.0.0/8, fd00::/8), a host name or *.domain',
      )
    })
  })

  describe('messages', () => {
    const refusalOf = (raw: string, policy = policyWith()) => {
      const t = target(raw)
      return describeRefusal(t, policy.checkAddress(t.ip!, t.port, t.host)!, SETTING)
    }

    it('names the address, the rule and the setting that could allow it', () => {
      expect(refusalOf('http://10.0.0.1/')).toBe(
        "10.0.0.1 is a private address (RFC 1918); the platform does not send requests to internal addresses on a user's behalf unless the operator allows them (webhooks.allowInternal)",
      )
      expect(refusalOf('http://[::ffff:7f00:1]/')).toMatch(
        /^::ffff:7f00:1 is the IPv4-mapped form \(::ffff:0:0\/96\) of 127\.0\.0\.1, a loopback address/,
      )
    })

    it('never offers the allow-list for the server itself', () => {
      const policy = policyWith(
        ['127.0.0.1'],
        serverSelf([], [{ address: '127.0.0.1', port: 8080 }]),
      )
      expect(refusalOf('http://127.0.0.1:8080/', policy)).toBe(
        "127.0.0.1 is this server's own listener (port 8080); the platform never sends requests to itself",
      )
    })

    it('says only the class of what a name resolved to, not the address', () => {
      const policy = policyWith()
      const refusal = policy.checkAddress(parseIp('::ffff:10.7.7.7')!, 80, 'db.corp.example')!
      const message = describeRefusal({ host: 'db.corp.example' }, refusal, SETTING)
      expect(message).toMatch(/^db\.corp\.example resolves to a private address \(RFC 1918\);/)
      expect(message).not.toMatch(/10\.7\.7\.7|a07/)
    })
  })

  it('reads this server again only when a source changes', () => {
    let interfaces: readonly string[] = ['192.168.1.5']
    let listeners: ReadonlyArray<{ address: string; port: number }> = []
    const read = selfReader({
      interfaces: () => interfaces,
      fixed: ['93.184.216.34'],
      listeners: () => listeners,
    })
    const first = read()
    expect(read()).toBe(first)
    expect(first.addresses.map(formatIp)).toEqual(['192.168.1.5', '93.184.216.34'])
    listeners = [{ address: '0.0.0.0', port: 8080 }]
    expect(read().listeners).toEqual([{ address: 'any', port: 8080 }])
    interfaces = ['192.168.1.6']
    expect(read().addresses.map(formatIp)).toEqual(['192.168.1.6', '93.184.216.34'])
  })
})
