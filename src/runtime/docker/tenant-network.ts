import { createHash } from 'node:crypto'
import type { WorkloadSpec } from '../driver.js'

/**
 * Which Docker network a workload joins, and how that network is made (docs/security.md,
 * "Network isolation on the docker driver"). Every workload of a tenant is on a bridge of that
 * tenant's own: a pod with global networking on the account's network (its pods reach each other
 * by name), any other on the tenant's private bridge, where containers cannot reach each other
 * at all (inter-container communication off). Workloads of two tenants never share a bridge, so
 * no container reaches another tenant's undeclared ports; the host firewall (host-firewall.ts)
 * keeps all of them from the host's own services and the metadata range.
 */

/** On a network: the WorkloadSpec's network name. */
export const NETWORK_LABEL = 'podyard.network'

/**
 * The Linux bridge of every network podyard creates is named with this prefix, so that one
 * wildcard rule of the host firewall (`-i pydk+`) covers all of them, and nothing else.
 */
export const BRIDGE_PREFIX = 'pydk'

/** A network a workload joins, as the driver creates it. */
export interface TenantNetwork {
  /** Docker's name of it: per server, so that servers never share one. */
  docker: string
  /** The WorkloadSpec's name for it, kept in NETWORK_LABEL. */
  name: string
  /** Names that resolve to the workload inside the network. */
  aliases: string[]
  /** Whether its containers reach each other (only the account's global network). */
  interContainer: boolean
}

/** Docker's name of a WorkloadSpec network: per server, so that servers never share one. */
export function networkName(serverId: string, name: string): string {
  return `podyard-${serverId}-${name}`.replace(/[^a-zA-Z0-9_.-]/g, '_')
}

/** The Linux bridge of a network: the prefix and a hash of its name (15 characters at most). */
export function bridgeName(dockerNetwork: string): string {
  return BRIDGE_PREFIX + createHash('sha256').update(dockerNetwork).digest('hex').slice(0, 11)
}

/**
 * The network of a workload: its WorkloadSpec network (global networking), else its tenant's
 * private bridge; undefined for one in the host's network or without a tenant (Docker's
 * default bridge: only the driver's own tests start such workloads).
 */
export function tenantNetworkOf(spec: WorkloadSpec, serverId: string): TenantNetwork | undefined {
  if (spec.hostNetwork) return undefined
  if (spec.network) {
    return {
      docker: networkName(serverId, spec.network.name),
      name: spec.network.name,
      aliases: [...spec.network.aliases],
      interContainer: true,
    }
  }
  if (spec.tenant === undefined) return undefined
  const name = `tenant-${spec.tenant}`
  return { docker: networkName(serverId, name), name, aliases: [], interContainer: false }
}

/** The options of POST /networks/create for a network. */
export function networkCreateBody(
  network: TenantNetwork,
  labels: Record<string, string>,
): {
  Name: string
  Driver: 'bridge'
  CheckDuplicate: true
  Options: Record<string, string>
  Labels: Record<string, string>
} {
  return {
    Name: network.docker,
    Driver: 'bridge',
    CheckDuplicate: true,
    Options: {
      'com.docker.network.bridge.name': bridgeName(network.docker),
      'com.docker.network.bridge.enable_icc': String(network.interContainer),
    },
    Labels: { ...labels, [NETWORK_LABEL]: network.name },
  }
}

/**
 * Whether an existing network was made as networkCreateBody makes it now: one made before (a
 * bridge without the prefix, or with containers reaching each other) is made again once unused.
 */
export function networkIsCurrent(
  network: TenantNetwork,
  options: Record<string, string> | null | undefined,
): boolean {
  return (
    options?.['com.docker.network.bridge.name'] === bridgeName(network.docker) &&
    (options['com.docker.network.bridge.enable_icc'] ?? 'true') === String(network.interContainer)
  )
}

/** Sets a create body's network from tenantNetworkOf (host network ahead of it). */
export function networkConfigOf(
  spec: WorkloadSpec,
  serverId: string,
): {
  NetworkMode?: string
  EndpointsConfig?: Record<string, { Aliases: string[] }>
} {
  if (spec.hostNetwork) return { NetworkMode: 'host' }
  const network = tenantNetworkOf(spec, serverId)
  if (!network) return {}
  return {
    NetworkMode: network.docker,
    EndpointsConfig: { [network.docker]: { Aliases: network.aliases } },
  }
}
