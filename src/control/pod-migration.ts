import type { Pod } from '../domain/pods/pod.js'
import type { PodActOptions } from '../domain/pods/pod-actions.js'
import type { PodActionRequest } from '../domain/pods/pod.js'
import type { PodMoveOutcome } from '../domain/hosts/host-service.js'
import type { PodStore } from '../domain/pods/ports.js'
import type { RuntimeDriver } from '../runtime/driver.js'
import { AppError } from '../shared/app-error.js'
import type { Clock } from '../shared/clock.js'
import { STOP_GRACE_MS } from './pod-reconcile.js'

export interface PodMigrationDeps {
  pods: {
    act(
      accountId: string,
      id: string,
      action: PodActionRequest,
      options?: PodActOptions,
    ): Promise<Pod>
  }
  store: PodStore
  driverFor(hostId: string): RuntimeDriver
  clock: Clock
}

/** The statuses of a pod whose workload runs, or is about to, on its host. */
const RUNS = new Set(['PROVISIONING', 'STARTING', 'RUNNING'])

/**
 * `podyard hosts drain <host> --migrate` (docs/fleet.md, "Drain that moves pods"): each running
 * pod without a host-local volume is stopped on the draining host, its workload removed there,
 * and started again with the same id on another host (the draining one takes no placement):
 * its ports published there, its network volume mounted there. A pod that cannot move is
 * listed with the reason; one that found no room elsewhere is left stopped, saying so.
 */
export class PodMigration {
  constructor(private readonly deps: PodMigrationDeps) {}

  async moveOff(hostId: string, pods: Pod[]): Promise<PodMoveOutcome[]> {
    return Promise.all(pods.map((pod) => this.move(hostId, pod)))
  }

  private async move(hostId: string, pod: Pod): Promise<PodMoveOutcome> {
    const stays = (reason: string): PodMoveOutcome => ({ podId: pod.id, movedTo: null, reason })
    if (pod.mounts.persistent)
      return stays(
        `its ${pod.mounts.persistent.size} GB volume at ${pod.mounts.persistent.path} is on this host: it moves only by stopping and terminating it`,
      )
    if (pod.cluster)
      return stays(
        `it is node ${pod.cluster.rank} of cluster ${pod.cluster.id}, placed with the others`,
      )
    if (!RUNS.has(pod.status))
      return stays(
        `it is ${pod.status}: started again, it is placed on another host while this one drains`,
      )
    const reason = `moving off host ${hostId}, drained with --migrate`
    await this.deps.pods.act(pod.accountId, pod.id, 'stop', {
      stopWhileProvisioning: true,
      stopReason: reason,
    })
    // The pod is EXITED: the lifecycle leaves it alone; its workload goes from this host
    // before it starts elsewhere, so that it never runs in two places.
    const driver = this.deps.driverFor(hostId)
    await driver.stop(pod.id, { graceMs: STOP_GRACE_MS })
    await driver.remove(pod.id)
    const at = () => this.deps.clock.now().toISOString()
    try {
      const started = await this.deps.pods.act(pod.accountId, pod.id, 'start')
      await this.deps.store.events.append(
        pod.id,
        at(),
        `moved from host ${hostId} to host ${started.hostId} (${hostId} drained with --migrate)`,
      )
      return { podId: pod.id, movedTo: started.hostId, reason: null }
    } catch (error) {
      const why = error instanceof AppError ? error.message : String(error)
      await this.deps.store.events.append(
        pod.id,
        at(),
        `stopped and not moved off host ${hostId}: ${why}; start it once a host has room`,
      )
      return stays(`stopped, not started elsewhere: ${why}`)
    }
  }
}
