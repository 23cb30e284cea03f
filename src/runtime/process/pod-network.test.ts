import { describe, expect, it } from 'vitest'
import { defaultRouteWithRtoMin, NAMESPACE_RTO_MIN } from './pod-network.js'

describe('defaultRouteWithRtoMin', () => {
  it('keeps the gateway and device of the default route pasta configured', () => {
    expect(defaultRouteWithRtoMin('default via 192.0.2.1 dev eth0 proto static ')).toEqual([
      'route',
      'change',
      'default',
      'via',
      '192.0.2.1',
      'dev',
      'eth0',
      'rto_min',
      NAMESPACE_RTO_MIN,
    ])
    expect(defaultRouteWithRtoMin('default via fe80::1 dev eth0 metric 1024 pref medium')).toEqual([
      'route',
      'change',
      'default',
      'via',
      'fe80::1',
      'dev',
      'eth0',
      'rto_min',
      NAMESPACE_RTO_MIN,
    ])
  })

  it('leaves other lines alone', () => {
    expect(defaultRouteWithRtoMin('')).toBeNull()
    expect(defaultRouteWithRtoMin('192.0.2.0/24 dev eth0 proto kernel scope link')).toBeNull()
    expect(defaultRouteWithRtoMin('unreachable 169.254.0.0/16')).toBeNull()
  })
})
