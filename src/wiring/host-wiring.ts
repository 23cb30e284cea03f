import { HostMonitor } from '../control/host-monitor.js'
import { HostService, type DrainHook } from '../domain/hosts/host-service.js'
import type { HostParts, PlatformContext } from './platform-context.js'

/**
 * The hosts as the operator manages them (docs/fleet.md, "Host state"): the leader's probe of
 * every host, which tells the pod lifecycle at once when one is lost or back, and the admin
 * service (list, cordon, uncordon, drain). Drain hooks are where serverless workers are moved
 * off a draining host.
 */
export function wireHosts(context: PlatformContext): HostParts {
  const { config, clock, logger, parts } = context
  const { fleet, board, runtimeOf } = parts.fleet
  const drainHooks: DrainHook[] = []
  const monitor = new HostMonitor({
    hosts: fleet.hosts,
    runtimeOf,
    board,
    clock,
    logger,
    intervalMs: config.hosts.probeIntervalMs,
    timeoutMs: config.hosts.probeTimeoutMs,
    failuresBeforeDown: config.hosts.failuresBeforeDown,
    onChange: () => parts.pods.lifecycle.nudge(),
  })
  const service = new HostService({
    board,
    localPublicIp: config.publicIp,
    runtimeOf: (hostId) => runtimeOf(hostId).where,
    pods: () => parts.pods.podStore.pods.list({}),
    drainHooks,
    acceptUnenforced: config.containment.acceptUnenforced,
    driverUnenforced: (hostId) =>
      runtimeOf(hostId).driver.name === 'process' ? parts.fleet.isolation.unenforced : undefined,
  })
  return { service, monitor, drainHooks }
}
