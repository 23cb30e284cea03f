import { AppError } from '../../shared/app-error.js'
import { newId } from '../../shared/ids.js'
import type { Allocation } from '../catalog/capacity.js'
import type { Placement, PlacementRequest, PlacementSnapshot } from '../catalog/placement.js'
import { labelConstraintsOf } from '../catalog/placement-constraints.js'
import { hasQuota, type AccountQuotas, type QuotaUse } from '../quotas/quota.js'
import type { Pod, PodStatus } from './pod.js'
import { holdsResources } from './pod-rules.js'
import type { PodServiceDeps } from './pod-service-contract.js'
import { placeByPreempting, PREEMPTED_REASON } from './spot.js'
import type { CapacityUnit } from './ports.js'

export const ALLOCATION_KIND = 'pod'

/** What a pod counts for in its account's quotas while it holds its GPUs. */
export function quotaUseOf(pod: Pod, { asNewPod }: { asNewPod: boolean }): Partial<QuotaUse> {
  return {
    pods: asNewPod ? 1 : 0,
    gpus: pod.compute.kind === 'gpu' ? pod.compute.gpuCount : 0,
  }
}

/** The pod in a new status, changed at `at`. */
export function podWithStatus(pod: Pod, status: PodStatus, reason: string | null, at: string): Pod {
  return { ...pod, status, statusReason: reason, lastStatusChange: at }
}

/**
 * What a pod takes of the fleet, inside the store's exclusive unit: the account's quotas, its
 * placement and allocation (taking spot pods' GPUs for an on-demand pod), its private address.
 */
export class PodCapacity {
  constructor(private readonly deps: PodServiceDeps) {}

  /**
   * The account's quotas, read before a capacity unit (which must not wait for other reads);
   * null when it has none.
   */
  async quotasOf(accountId: string): Promise<AccountQuotas | null> {
    const limits = await this.deps.quotas?.limits(accountId)
    return limits && hasQuota(limits) ? limits : null
  }

  /** Inside the capacity unit, so that concurrent creates cannot both take the last slot. */
  async checkQuota(
    unit: CapacityUnit,
    accountId: string,
    limits: AccountQuotas | null,
    adding: Partial<QuotaUse>,
    what: string,
  ): Promise<void> {
    if (!limits || !this.deps.quotas) return
    this.deps.quotas.assertWithin(limits, await unit.quotaUse(accountId), adding, what)
  }

  private get now(): string {
    return this.deps.clock.now().toISOString()
  }

  placementRequest(
    pod: Pod,
    hosts: { pinned?: string; preferred?: string } = {},
  ): PlacementRequest {
    return {
      compute:
        pod.compute.kind === 'gpu'
          ? {
              kind: 'gpu',
              gpuTypeId: pod.compute.gpuTypeId,
              gpuCount: pod.compute.gpuCount,
              // The creator's CUDA versions win over the template's.
              ...(pod.requirements?.cudaVersions?.length
                ? { cudaVersions: pod.requirements.cudaVersions }
                : pod.compute.allowedCudaVersions
                  ? { cudaVersions: pod.compute.allowedCudaVersions }
                  : {}),
              ...(pod.requirements?.minCudaVersion
                ? { minCudaVersion: pod.requirements.minCudaVersion }
                : {}),
            }
          : { kind: 'cpu', flavorId: pod.compute.flavorId, vcpuCount: pod.compute.vcpuCount },
      cloud: pod.cloud,
      dataCenterIds: pod.dataCenterIds,
      globalNetworking: pod.globalNetworking,
      diskGb: pod.disk + (pod.mounts.persistent?.size ?? 0),
      ...(pod.requirements?.minVcpus ? { minVcpus: pod.requirements.minVcpus } : {}),
      ...(pod.requirements?.minMemoryGb ? { minMemoryGb: pod.requirements.minMemoryGb } : {}),
      ...(pod.requirements?.compliance?.length ? { compliance: pod.requirements.compliance } : {}),
      ...(hosts.pinned ? { pinnedHostId: hosts.pinned } : {}),
      ...(hosts.preferred ? { preferredHostId: hosts.preferred } : {}),
      ...(pod.requirements?.hostLabels?.length
        ? { labels: labelConstraintsOf(pod.requirements.hostLabels) }
        : {}),
    }
  }

  allocationOf(pod: Pod, placement: Placement): Allocation {
    return {
      id: newId.allocation(),
      hostId: placement.hostId,
      ownerKind: ALLOCATION_KIND,
      ownerId: pod.id,
      gpuCount: placement.gpuIndices.length,
      gpuIndices: placement.gpuIndices,
      vcpus: placement.vcpus,
      memoryGb: placement.memoryGb,
      diskGb: placement.diskGb,
      createdAt: this.now,
    }
  }

  /**
   * Places the pod and records its allocation, inside the exclusive unit. With
   * `suggestOtherCloud` (a create), a SECURE request that finds no room says so when the
   * COMMUNITY cloud has it: the caller chose the cloud and may choose again.
   */
  async reserve(
    unit: CapacityUnit,
    pod: Pod,
    request: PlacementRequest,
    { suggestOtherCloud = false, preempted = [] as Pod[] } = {},
  ): Promise<Pod> {
    const fleet = this.deps.catalog.fleet
    const snapshot = {
      hosts: this.deps.catalog.hosts(),
      dataCenters: fleet.dataCenters,
      allocations: await unit.holdings(),
      unavailable: this.deps.catalog.unavailable(),
      withdrawnGpus: this.deps.catalog.withdrawnGpus(),
    }
    // The account's pools, read in the unit: a binding changed meanwhile is seen at once.
    request = { ...request, accountPools: await unit.accountPools(pod.accountId) }
    const result = this.deps.place(snapshot, request)
    let placement: Placement
    if (result.ok) {
      placement = result.placement
    } else {
      // Free GPUs first; only then does an on-demand pod take the GPUs of spot pods.
      const freed = pod.spot ? undefined : await this.preempting(unit, snapshot, request, pod)
      if (!freed) {
        const community =
          suggestOtherCloud &&
          request.cloud === 'SECURE' &&
          this.deps.place(snapshot, { ...request, cloud: 'COMMUNITY' }).ok
        throw new AppError(
          'NO_CAPACITY',
          community ? `${result.detail}; the COMMUNITY cloud has room for it` : result.detail,
        )
      }
      for (const spot of freed.preempted) preempted.push(await this.preempt(unit, spot))
      placement = freed.placement
    }
    const allocation = this.allocationOf(pod, placement)
    await unit.allocations.remove(ALLOCATION_KIND, pod.id)
    await unit.allocations.insert(allocation)
    return {
      ...pod,
      hostId: placement.hostId,
      dataCenterId: placement.dataCenterId,
      gpuIndices: placement.gpuIndices,
    }
  }

  /** A placement once spot pods give up their GPUs (spot.ts chooses which), or undefined. */
  private async preempting(
    unit: CapacityUnit,
    snapshot: Omit<PlacementSnapshot, 'allocations'>,
    request: PlacementRequest,
    pod: Pod,
  ) {
    if (request.compute.kind !== 'gpu') return undefined
    const holding = await unit.pods.list({ statuses: ['PROVISIONING', 'STARTING', 'RUNNING'] })
    const spots = holding.filter((p) => p.spot && p.id !== pod.id)
    if (spots.length === 0) return undefined
    const allocations = await unit.allocations.list()
    return placeByPreempting(this.deps.place, snapshot, allocations, request, spots)
  }

  /**
   * Stops a spot pod for an on-demand pod: it keeps its volumes, as any stopped pod does. The
   * lifecycle loop writes pods outside the capacity lock, so a write it made meanwhile is read
   * again rather than failing the on-demand pod's request.
   */
  private async preempt(unit: CapacityUnit, pod: Pod): Promise<Pod> {
    await unit.allocations.remove(ALLOCATION_KIND, pod.id)
    let current: Pod | undefined = pod
    for (let attempt = 0; attempt < 5 && current; attempt++) {
      // It stopped by itself meanwhile (its process exited): nothing is left to take.
      if (!holdsResources(current.status)) return current
      const stopped: Pod = {
        ...podWithStatus(current, 'EXITED', PREEMPTED_REASON, this.now),
        gpuIndices: [],
        version: current.version + 1,
      }
      if (await unit.pods.update(stopped)) return stopped
      current = await unit.pods.findById(pod.id)
    }
    throw new AppError(
      'INVALID_STATE',
      `spot pod ${pod.id} changed while it was preempted; try again`,
    )
  }

  /** After the unit that preempted them: their events, and the lifecycle stops their workloads. */
  async announcePreempted(preempted: Pod[], forPodId: string): Promise<void> {
    for (const pod of preempted) {
      if (pod.statusReason !== PREEMPTED_REASON) continue
      await this.deps.store.events.append(
        pod.id,
        this.now,
        `stopped: preempted (on-demand pod ${forPodId} needed its GPUs)`,
      )
      this.deps.nudge(pod.id)
    }
  }

  async nextGlobalIp(unit: CapacityUnit, accountId: string, excludePodId: string): Promise<string> {
    const used = new Set(
      (await unit.pods.list({ accountId }))
        .filter((p) => p.id !== excludePodId && p.status !== 'TERMINATED' && p.globalIp)
        .map((p) => p.globalIp),
    )
    // Each account has its own private network (GLOBAL_NETWORK_CIDR), so ranges may repeat
    // across accounts.
    for (let n = 2; n < 1 << 24; n++) {
      const ip = `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`
      if (!used.has(ip)) return ip
    }
    throw new AppError('NO_CAPACITY', 'the account has used every address of its private network')
  }

  /**
   * Places the pods together in the first of `candidates` (data center ids) that holds them
   * all, each against what the earlier ones took, and stores them with their allocations;
   * `complete` finishes each once placed. 409 naming each data center's shortfall otherwise.
   */
  async placeTogether(
    unit: CapacityUnit,
    accountId: string,
    drafts: Pod[],
    candidates: string[],
    complete: (pod: Pod, index: number, earlier: Pod[]) => Pod,
  ): Promise<Pod[]> {
    const fleet = this.deps.catalog.fleet
    const taken = await unit.allocations.list()
    const accountPools = await unit.accountPools(accountId)
    const shortfalls: string[] = []
    for (const dataCenterId of candidates) {
      const tentative: Allocation[] = []
      let shortfall: string | undefined
      for (const draft of drafts) {
        const result = this.deps.place(
          {
            hosts: this.deps.catalog.hosts(),
            dataCenters: fleet.dataCenters,
            allocations: [...taken, ...tentative],
            unavailable: this.deps.catalog.unavailable(),
            // As for one pod: a GPU withdrawn for its health takes no cluster pod either.
            withdrawnGpus: this.deps.catalog.withdrawnGpus(),
          },
          { ...this.placementRequest(draft), dataCenterIds: [dataCenterId], accountPools },
        )
        if (!result.ok) {
          shortfall = result.detail
          break
        }
        tentative.push(this.allocationOf(draft, result.placement))
      }
      if (shortfall !== undefined) {
        shortfalls.push(`${dataCenterId}: ${shortfall}`)
        continue
      }
      const stored: Pod[] = []
      for (const [index, draft] of drafts.entries()) {
        const allocation = tentative[index]!
        await unit.allocations.insert(allocation)
        let pod: Pod = {
          ...draft,
          hostId: allocation.hostId,
          dataCenterId,
          gpuIndices: allocation.gpuIndices,
        }
        if (pod.globalNetworking) pod.globalIp = await this.nextGlobalIp(unit, accountId, pod.id)
        pod = complete(pod, index, stored)
        await unit.pods.insert(pod)
        stored.push(pod)
      }
      return stored
    }
    throw new AppError(
      'NO_CAPACITY',
      `no data center can hold all ${drafts.length} pods together: ${shortfalls.join('; ')}`,
    )
  }
}
