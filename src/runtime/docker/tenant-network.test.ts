import { describe, expect, it } from 'vitest'
import type { WorkloadSpec } from '../driver.js'
import {
  BRIDGE_PREFIX,
  bridgeName,
  networkConfigOf,
  networkCreateBody,
  networkIsCurrent,
  tenantNetworkOf,
} from './tenant-network.js'

function spec(overrides: Partial<WorkloadSpec> = {}): WorkloadSpec {
  return {
    id: 'pod1',
    image: 'img',
    command: null,
    env: {},
    containerDiskPath: '/d',
    diskGb: 1,
    mounts: [],
    ports: [],
    gpuIndices: [],
    vcpus: 1,
    memoryGb: 1,
    labels: {},
    ...overrides,
  }
}

describe('tenant networks', () => {
  it("puts a tenant's workload on the tenant's bridge, where containers do not reach each other", () => {
    const network = tenantNetworkOf(spec({ tenant: 'account-a' }), 'srv1')!
    expect(network).toEqual({
      docker: 'podyard-srv1-tenant-account-a',
      name: 'tenant-account-a',
      aliases: [],
      interContainer: false,
    })
    const body = networkCreateBody(network, { 'podyard.server': 'srv1' })
    expect(body.Options).toEqual({
      'com.docker.network.bridge.name': bridgeName('podyard-srv1-tenant-account-a'),
      'com.docker.network.bridge.enable_icc': 'false',
    })
    expect(body.Labels).toEqual({ 'podyard.server': 'srv1', 'podyard.network': 'tenant-account-a' })
    expect(networkIsCurrent(network, body.Options)).toBe(true)
    // A network made before: no prefixed bridge.
    expect(networkIsCurrent(network, {})).toBe(false)
  })

  it('keeps the global network (by name, containers reach each other) ahead of the tenant', () => {
    const network = tenantNetworkOf(
      spec({ tenant: 'account-a', network: { name: 'account-a', aliases: ['p.runpod.internal'] } }),
      'srv1',
    )!
    expect(network.interContainer).toBe(true)
    expect(networkConfigOf(spec({ network: { name: 'n', aliases: ['x'] } }), 's')).toEqual({
      NetworkMode: 'podyard-s-n',
      EndpointsConfig: { 'podyard-s-n': { Aliases: ['x'] } },
    })
    expect(networkConfigOf(spec({ hostNetwork: true, tenant: 't' }), 's')).toEqual({
      NetworkMode: 'host',
    })
    expect(networkConfigOf(spec(), 's')).toEqual({})
  })

  it('names bridges with the prefix the host firewall matches, within 15 characters', () => {
    const name = bridgeName(`podyard-${'x'.repeat(80)}`)
    expect(name.startsWith(BRIDGE_PREFIX)).toBe(true)
    expect(name).toHaveLength(15)
    expect(bridgeName('a')).not.toBe(bridgeName('b'))
  })
})
