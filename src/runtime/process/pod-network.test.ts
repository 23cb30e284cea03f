import { describe, expect, it } from 'vitest'
import {
  defaultRouteWithRtoMin,
  hostInterfaceArgs,
  NAMESPACE_RTO_MIN,
  namespaceRouteCommands,
} from './pod-network.js'

describe('defaultRouteWithRtoMin', () => {
  it('keeps the gateway and device of the default route pasta configured', () => {
    expect(defaultRouteWithRtoMin('default via 192.0.2.1 dev eth0 proto static ', 'ipv4')).toBe(
      `route change 0.0.0.0/0 via 192.0.2.1 dev eth0 rto_min ${NAMESPACE_RTO_MIN}`,
    )
    expect(
      defaultRouteWithRtoMin('default via fe80::1 dev eth0 metric 1024 pref medium', 'ipv6'),
    ).toBe(`route change ::/0 via fe80::1 dev eth0 rto_min ${NAMESPACE_RTO_MIN}`)
  })

  it('leaves other lines alone', () => {
    expect(defaultRouteWithRtoMin('', 'ipv4')).toBeNull()
    expect(
      defaultRouteWithRtoMin('192.0.2.0/24 dev eth0 proto kernel scope link', 'ipv4'),
    ).toBeNull()
    expect(defaultRouteWithRtoMin('unreachable 169.254.0.0/16', 'ipv4')).toBeNull()
  })
})

describe('namespaceRouteCommands', () => {
  it('changes each family default route, then makes every denied destination unreachable', () => {
    const defaults = {
      ipv4: 'default via 192.0.2.1 dev eth0 \n',
      ipv6: 'default via fd00::1 dev eth0 metric 1024 pref medium\n',
    }
    expect(namespaceRouteCommands(defaults, ['169.254.0.0/16', 'fd00:ec2::254/128'])).toEqual([
      `route change 0.0.0.0/0 via 192.0.2.1 dev eth0 rto_min ${NAMESPACE_RTO_MIN}`,
      `route change ::/0 via fd00::1 dev eth0 rto_min ${NAMESPACE_RTO_MIN}`,
      'route add unreachable 169.254.0.0/16',
      'route add unreachable fd00:ec2::254/128',
    ])
  })

  it('changes nothing for a family without a default route (pasta found no IPv6 on the host)', () => {
    expect(
      namespaceRouteCommands({ ipv4: 'default via 10.0.0.1 dev ens3 \n', ipv6: '' }, []),
    ).toEqual([`route change 0.0.0.0/0 via 10.0.0.1 dev ens3 rto_min ${NAMESPACE_RTO_MIN}`])
  })
})

describe('hostInterfaceArgs', () => {
  const eth0 = (local: string, prefixlen: number) =>
    JSON.stringify([
      { ifname: 'eth0', addr_info: [{ family: 'inet', local, prefixlen, scope: 'global' }] },
    ])

  it('leaves pasta its own choice where the host has a default route', () => {
    const route = '[{"dst":"default","gateway":"192.0.2.1","dev":"eth0","flags":[]}]\n'
    expect(hostInterfaceArgs(route, eth0('192.0.2.2', 24))).toEqual([])
  })

  it('names the first interface with an IPv4 address, and a gateway in its subnet', () => {
    expect(hostInterfaceArgs('[]\n', eth0('10.250.0.7', 24))).toEqual([
      '-i',
      'eth0',
      '-g',
      '10.250.0.1',
    ])
    // The subnet's first address is the host's own: the next one.
    expect(hostInterfaceArgs('', eth0('172.16.0.1', 12))).toEqual([
      '-i',
      'eth0',
      '-g',
      '172.16.0.2',
    ])
  })

  it('finds none where no interface has an IPv4 address a gateway fits beside', () => {
    expect(hostInterfaceArgs('[]\n', '[]\n')).toBeUndefined()
    expect(hostInterfaceArgs('[]\n', eth0('192.0.2.9', 32))).toBeUndefined()
  })
})
