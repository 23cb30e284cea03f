import { AppError } from '../../shared/app-error.js'
import type { Fleet } from '../catalog/fleet.js'
import { checkMountPaths } from './mount-paths.js'
import type { Pod, PodActionRequest, PodStatus } from './pod.js'
import { ALLOCATION_KIND, podWithStatus, quotaUseOf, type PodCapacity } from './pod-capacity.js'
import type { PodDrafts } from './pod-draft.js'
import { checkAction, holdsResources, patchMounts, RESTARTING_FIELDS } from './pod-rules.js'
import type { PodServiceDeps, UpdatePodInput } from './pod-service-contract.js'
import { tracePodStatus } from './pod-tracing.js'
import { spotHourlyPrice } from './spot.js'
import type { CapacityUnit, PodStore } from './ports.js'

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b)
}

/** The pod with its CUDA requirement replaced, when versions are given (GPU pods only). */
function withCudaVersions(pod: Pod, cudaVersions: string[] | undefined): Pod {
  if (!cudaVersions?.length || pod.compute.kind !== 'gpu') return pod
  const { minCudaVersion: _replaced, ...requirements } = pod.requirements ?? {}
  return { ...pod, requirements: { ...requirements, cudaVersions } }
}

/** A spot pod with a new bid (GraphQL podBidResume); an on-demand pod cannot take one. */
function withBid(fleet: Fleet, pod: Pod, bidPerGpu: number | undefined): Pod {
  if (bidPerGpu === undefined) return pod
  if (!pod.spot || pod.compute.kind !== 'gpu') {
    throw new AppError(
      'RULE_CONFLICT',
      `pod ${pod.id} is an on-demand pod: start it without a bid (podResume)`,
    )
  }
  const { gpuTypeId, gpuCount } = pod.compute
  const hourlyPrice = spotHourlyPrice(fleet, gpuTypeId, gpuCount, bidPerGpu)
  return { ...pod, spot: { bidPerGpu }, hourlyPrice }
}

/** A pod of the account; another account's pod, or a purged one, is 404. */
export async function podOfAccount(store: PodStore, accountId: string, id: string): Promise<Pod> {
  const pod = await store.pods.findById(id)
  if (!pod || pod.accountId !== accountId) throw new AppError('NOT_FOUND', `pod ${id} not found`)
  return pod
}

/**
 * `cudaVersions` (GraphQL podResume's allowedCudaVersions) replaces the pod's CUDA
 * requirement when a stopped pod is placed again; the pod keeps it for later starts.
 * `stopWhileProvisioning` (GraphQL podStop, which sets a desired state) lets `stop` reach a
 * pod that is still PROVISIONING: it goes to EXITED and its workload is never started or is
 * stopped; REST keeps the specification's actions, where PROVISIONING has no `stop`.
 * `bidPerGpu`: a spot pod resumed at a new bid (GraphQL podBidResume). `stopReason`: why a
 * stop that is not the user's own happens (a drain that moves the pod), as its status says.
 */
export interface PodActOptions {
  cudaVersions?: string[]
  stopWhileProvisioning?: boolean
  bidPerGpu?: number
  stopReason?: string
}

/**
 * What changes a pod after its create: the actions (start, stop, restart, reset, terminate),
 * stopping an account's pods, and updates; each a write that retries when the lifecycle loop
 * wrote the pod meanwhile.
 */
export class PodActions {
  constructor(
    private readonly deps: PodServiceDeps,
    private readonly capacity: PodCapacity,
    private readonly drafts: PodDrafts,
  ) {}

  private get now(): string {
    return this.deps.clock.now().toISOString()
  }

  /** Writes a changed pod; a concurrent write by the lifecycle loop makes us re-read and retry. */
  private async mutate(
    accountId: string,
    id: string,
    change: (pod: Pod, unit: CapacityUnit) => Promise<Pod | undefined>,
  ): Promise<Pod> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const result = await this.deps.store.exclusive(async (unit) => {
        const current = await unit.pods.findById(id)
        if (!current || current.accountId !== accountId)
          throw new AppError('NOT_FOUND', `pod ${id} not found`)
        const next = await change(current, unit)
        if (!next) return { pod: current, before: current, written: true }
        const stored: Pod = { ...next, version: current.version + 1 }
        return { pod: stored, before: current, written: await unit.pods.update(stored) }
      })
      if (result.written) {
        if (this.deps.tracing) {
          tracePodStatus(
            this.deps.tracing,
            result.before,
            result.pod,
            this.deps.clock.now().getTime(),
          )
        }
        this.deps.nudge(id)
        return result.pod
      }
    }
    throw new AppError('INVALID_STATE', `pod ${id} is changing too often to update; try again`)
  }

  private withStatus(pod: Pod, status: PodStatus, reason: string | null): Pod {
    return podWithStatus(pod, status, reason, this.now)
  }

  /** A cluster's pods go only with their cluster (RunPod's v2 contract: 409 otherwise). */
  private checkNotClusterNode(pod: Pod): void {
    if (!pod.cluster) return
    throw new AppError(
      'INVALID_STATE',
      `pod ${pod.id} is node ${pod.cluster.rank} of cluster ${pod.cluster.id}: delete the cluster (DELETE /v2/clusters/${pod.cluster.id}) to terminate its pods`,
    )
  }

  async act(
    accountId: string,
    id: string,
    action: PodActionRequest,
    options: PodActOptions = {},
  ): Promise<Pod> {
    if ((action === 'start' || action === 'reset') && this.deps.spendGuard) {
      const current = await podOfAccount(this.deps.store, accountId, id)
      if (!holdsResources(current.status)) {
        // A spot pod resumed at a new bid costs that bid from now on, not the one it stopped at.
        const resumed = withBid(this.deps.catalog.fleet, current, options.bidPerGpu)
        await this.deps.spendGuard.assertWithinSpendLimit(
          accountId,
          resumed.hourlyPrice,
          `start pod ${id}`,
        )
      }
    }
    const limits =
      action === 'start' || action === 'reset' ? await this.capacity.quotasOf(accountId) : null
    const preempted: Pod[] = []
    const pod = await this.mutate(accountId, id, async (current, unit) => {
      preempted.length = 0
      const desiredStop =
        action === 'stop' && options.stopWhileProvisioning && current.status === 'PROVISIONING'
      checkAction(desiredStop ? { ...current, status: 'STARTING' } : current, action)
      switch (action) {
        case 'start':
        case 'reset':
          if (current.status === 'PROVISIONING') return undefined
          if (current.status === 'RUNNING') return this.restart(current)
          // A stopped pod still counts as a pod; starting it takes its GPUs again.
          await this.capacity.checkQuota(
            unit,
            accountId,
            limits,
            quotaUseOf(current, { asNewPod: false }),
            `start pod ${id}`,
          )
          return this.restartFromStopped(
            withBid(
              this.deps.catalog.fleet,
              withCudaVersions(current, options.cudaVersions),
              options.bidPerGpu,
            ),
            unit,
            preempted,
          )
        case 'restart':
          return this.restart(current)
        case 'stop':
          await unit.allocations.remove(ALLOCATION_KIND, current.id)
          return {
            ...this.withStatus(current, 'EXITED', options.stopReason ?? 'stopped by request'),
            gpuIndices: [],
          }
        case 'terminate':
          this.checkNotClusterNode(current)
          return this.terminated(current, unit)
      }
    })
    await this.deps.store.events.append(pod.id, this.now, `${action} requested; now ${pod.status}`)
    await this.capacity.announcePreempted(preempted, pod.id)
    return pod
  }

  /** Every pod of the account that holds resources, `locked` or not (PodService.stopAll). */
  async stopAll(accountId: string, reason: string): Promise<string[]> {
    const stopped: string[] = []
    const holding = await this.deps.store.pods.list({
      accountId,
      statuses: ['PROVISIONING', 'STARTING', 'RUNNING'],
    })
    for (const { id } of holding) {
      let changed = false
      const pod = await this.mutate(accountId, id, async (current, unit) => {
        changed = holdsResources(current.status)
        if (!changed) return undefined
        await unit.allocations.remove(ALLOCATION_KIND, current.id)
        return { ...this.withStatus(current, 'EXITED', reason), gpuIndices: [] }
      })
      if (!changed) continue
      await this.deps.store.events.append(pod.id, this.now, `stopped: ${reason}`)
      stopped.push(pod.id)
    }
    return stopped
  }

  /** `asClusterNode`: the pod's cluster is being deleted, which takes its pods with it. */
  async terminate(
    accountId: string,
    id: string,
    options: { asClusterNode?: boolean } = {},
  ): Promise<void> {
    const pod = await this.mutate(accountId, id, async (current, unit) => {
      if (current.status === 'TERMINATED') return undefined
      if (!options.asClusterNode) this.checkNotClusterNode(current)
      return this.terminated(current, unit)
    })
    await this.deps.store.events.append(pod.id, this.now, 'terminated')
  }

  private async terminated(pod: Pod, unit: CapacityUnit): Promise<Pod> {
    await unit.allocations.remove(ALLOCATION_KIND, pod.id)
    return {
      ...this.withStatus(pod, 'TERMINATED', 'terminated by request'),
      gpuIndices: [],
      terminatedAt: this.now,
    }
  }

  private restart(pod: Pod): Pod {
    return {
      ...this.withStatus(pod, 'PROVISIONING', null),
      generation: pod.generation + 1,
      crashRestarts: 0,
    }
  }

  /** EXITED or ERROR -> PROVISIONING: on the same host when it has room (a persistent mount pins it). */
  private async restartFromStopped(pod: Pod, unit: CapacityUnit, preempted: Pod[]): Promise<Pod> {
    const hosts =
      pod.mounts.persistent && pod.hostId
        ? { pinned: pod.hostId }
        : { preferred: pod.hostId ?? undefined }
    const placed = await this.capacity.reserve(
      unit,
      pod,
      this.capacity.placementRequest(pod, hosts),
      { preempted },
    )
    return this.restart(placed)
  }

  async update(accountId: string, id: string, patch: UpdatePodInput): Promise<Pod> {
    // Outside `mutate`: its exclusive unit holds SQLite's one connection, and a read of the
    // registries through the store (not the unit) waited for it forever: one PATCH naming a
    // registry froze every request that reads the store (found by the fuzz suite).
    await podOfAccount(this.deps.store, accountId, id)
    await this.drafts.checkRegistry(accountId, patch.registry)
    const preempted: Pod[] = []
    const updated = await this.mutate(accountId, id, async (current, unit) => {
      preempted.length = 0
      if (current.status === 'TERMINATED') {
        throw new AppError('INVALID_STATE', `pod ${id} is TERMINATED and cannot change`)
      }
      const mounts = patchMounts(current.mounts, patch.mounts)
      checkMountPaths(mounts, 'mounts')
      const globalNetworking = patch.globalNetworking ?? current.globalNetworking
      if (globalNetworking && !current.globalNetworking) {
        this.drafts.checkDataCenters([], true, current.compute)
        const dc = this.deps.catalog.fleet.dataCenters.find((d) => d.id === current.dataCenterId)
        if (!dc?.globalNetwork) {
          throw new AppError(
            'RULE_CONFLICT',
            `globalNetworking needs a data center with global networking; ${current.dataCenterId} has none`,
          )
        }
      }
      let next: Pod = {
        ...current,
        name: patch.name ?? current.name,
        locked: patch.locked ?? current.locked,
        image: patch.image ?? current.image,
        args: patch.args ?? current.args,
        disk: patch.disk ?? current.disk,
        env: patch.env ?? current.env,
        ports: patch.ports ?? current.ports,
        registry: patch.registry === undefined ? current.registry : patch.registry,
        mounts,
        globalNetworking,
        globalIp: globalNetworking
          ? (current.globalIp ?? (await this.capacity.nextGlobalIp(unit, accountId, id)))
          : null,
      }
      const diskChanged =
        next.disk !== current.disk ||
        next.mounts.persistent?.size !== current.mounts.persistent?.size
      if (diskChanged && holdsResources(current.status) && current.hostId) {
        next = await this.capacity.reserve(
          unit,
          next,
          this.capacity.placementRequest(next, { pinned: current.hostId }),
          { preempted },
        )
      }
      const restarts = RESTARTING_FIELDS.some((field) => !sameJson(next[field], current[field]))
      if (
        restarts &&
        (current.status === 'RUNNING' ||
          current.status === 'STARTING' ||
          current.status === 'PROVISIONING')
      ) {
        next = this.restart(next)
      }
      return next
    })
    await this.capacity.announcePreempted(preempted, id)
    return updated
  }
}
