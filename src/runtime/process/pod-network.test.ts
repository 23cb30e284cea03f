import { describe, expect, it } from 'vitest'
import { defaultRouteWithRtoMin, NAMESPACE_RTO_MIN, namespaceRouteCommands } from './pod-network.js'

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
