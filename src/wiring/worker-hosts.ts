import type { WorkerAutoscalerDeps } from '../control/worker-autoscaler.js'
import {
  hostIsolationReason,
  isolationRefusal,
  NO_VOLUME,
  type VolumeUse,
} from '../control/workload-isolation.js'
import { hasSharedVolumeStorage } from '../domain/catalog/fleet.js'
import type { Endpoint } from '../domain/serverless/endpoint.js'
import { unreachableFromOtherHosts } from '../domain/serverless/job-api-address.js'
import type { RuntimeDriver } from '../runtime/driver.js'
import type { PlatformContext } from './platform-context.js'

type WorkerHostRules = Pick<
  WorkerAutoscalerDeps,
  | 'unavailableHosts'
  | 'withdrawnGpus'
  | 'sharesHostNetwork'
  | 'isolationRefusal'
  | 'hostDown'
  | 'hostDraining'
  | 'driverDown'
>

/**
 * Where an endpoint's workers may run (docs/serverless-workers.md, "Where workers run"). Every
 * host runs them with its own driver: as processes of this machine under the process driver,
 * as the endpoint's image on a Docker host. Besides the host board (DOWN, cordoned, draining):
 * - the platform's model workers run podyard's own build through the process driver's image
 *   commands, so only on process-driver hosts;
 * - a remote host cannot reach a loopback job API address (`workers.jobApiUrl`, else the listen
 *   URL): it takes no worker, with that reason in the worker list, rather than start one that
 *   can never ask for a job; a container on this machine's engine joins the host's network
 *   instead;
 * - an account whose workloads may not run unsandboxed, or unlimited, is kept off hosts without
 *   a sandbox (process-driver hosts) or that do not enforce a limit the operator did not accept
 *   (docs/security.md, "Containment"), and refused outright (THROTTLED) only when every host
 *   is a process-driver host.
 */
export function workerHostRules(
  context: PlatformContext,
  jobApiBaseUrl: () => string,
): WorkerHostRules {
  const { parts } = context
  const { fleet, board, processDriver, driverFor, runtimeOf, isolationPolicy } = parts.fleet
  const onProcessDriver = (hostId: string) => driverFor(hostId) === processDriver
  // A worker in a data center mounts the endpoint's volume there, if it has volumes at all.
  const volumeUseIn = (endpoint: Endpoint, dataCenterId: string): VolumeUse => ({
    mountsVolume: endpoint.networkVolumes.length > 0,
    ...(endpoint.networkVolumes.length > 0 && hasSharedVolumeStorage(fleet, dataCenterId)
      ? { sharedStorageOf: dataCenterId }
      : {}),
  })
  const everyHostOnProcessDriver = () => fleet.hosts.every((h) => onProcessDriver(h.id))
  return {
    unavailableHosts: async (endpoint: Endpoint) => {
      // A copy: the board keeps its answer until a host changes state.
      const out: Record<string, string> = { ...board.unplaceable() }
      const url = jobApiBaseUrl()
      const unreachable = unreachableFromOtherHosts(url)
      const models = endpoint.accountId === parts.accounts.modelsAccount.id
      // One answer per driver and data center: the hosts of one engine share it, and a data
      // center's shared storage leaves the endpoint's volumes unbounded on each of its hosts.
      // The answers are awaited after the pass over the hosts (10 000 of them on a large fleet,
      // every second), not once per host.
      const isolationReasons = new Map<RuntimeDriver, Map<string, Promise<string | null>>>()
      const isolationReason = (driver: RuntimeDriver, dataCenterId: string) => {
        const ofDriver = isolationReasons.get(driver) ?? new Map()
        isolationReasons.set(driver, ofDriver)
        let reason = ofDriver.get(dataCenterId)
        if (!reason) {
          const volumes = volumeUseIn(endpoint, dataCenterId)
          reason = hostIsolationReason(driver, endpoint.accountId, isolationPolicy, volumes)
          ofDriver.set(dataCenterId, reason)
        }
        return reason
      }
      const isolationOf = new Map<Promise<string | null>, string[]>()
      for (const host of fleet.hosts) {
        if (out[host.id] !== undefined) continue
        if (models && !onProcessDriver(host.id)) {
          out[host.id] =
            "runs no model workers (the platform's models run under the process driver)"
        } else if (unreachable && runtimeOf(host.id).remote) {
          out[host.id] =
            `cannot reach the job API at ${url} (${unreachable}; set workers.jobApiUrl to an ` +
            'address the host reaches)'
        } else {
          const reason = isolationReason(driverFor(host.id), host.dataCenterId)
          const hosts = isolationOf.get(reason) ?? []
          if (hosts.push(host.id) === 1) isolationOf.set(reason, hosts)
        }
      }
      for (const [reason, hostIds] of isolationOf) {
        const unisolated = await reason
        if (unisolated) for (const hostId of hostIds) out[hostId] = unisolated
      }
      return out
    },
    withdrawnGpus: () => parts.fleet.catalog.withdrawnGpus(),
    sharesHostNetwork: (hostId, baseUrl) =>
      !runtimeOf(hostId).remote &&
      !onProcessDriver(hostId) &&
      unreachableFromOtherHosts(baseUrl) !== null,
    // With only process-driver hosts the refusal is the whole story: say it as pods do.
    // Its volumes' sizes count only where all of them are on shared storage: elsewhere a
    // worker can still be placed beside one this machine bounds.
    isolationRefusal: async (endpoint, volumeDataCenters) => {
      if (!everyHostOnProcessDriver()) return null
      const uses = volumeDataCenters.map((id) => volumeUseIn(endpoint, id))
      const volumes = uses.find((use) => !use.sharedStorageOf) ?? uses[0] ?? NO_VOLUME
      return isolationRefusal(processDriver, endpoint.accountId, isolationPolicy, volumes)
    },
    hostDown: (hostId) => board.down(hostId),
    hostDraining: (hostId) => board.state(hostId)?.schedule === 'DRAINING',
    // Asked of every driver on every pass: it stops at the first of its hosts that is not DOWN
    // (the first host, as a rule) instead of collecting all of them.
    driverDown: (driver: RuntimeDriver) => {
      let serves = false
      for (const host of fleet.hosts) {
        if (driverFor(host.id) !== driver) continue
        if (board.down(host.id) === undefined) return false
        serves = true
      }
      return serves
    },
  }
}
