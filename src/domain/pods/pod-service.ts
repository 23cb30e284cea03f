import type { TraceOrigin } from '../../shared/tracing.js'
import type { Host } from '../catalog/fleet.js'
import { followEvents } from './event-follow.js'
import type { Pod, PodActionRequest, PodRuntime, PodStatus } from './pod.js'
import { PodActions, podOfAccount, type PodActOptions } from './pod-actions.js'
import { PodCapacity, quotaUseOf } from './pod-capacity.js'
import { PodDrafts } from './pod-draft.js'
import type { CreatePodInput, PodServiceDeps, UpdatePodInput } from './pod-service-contract.js'
import { tracePodCreated } from './pod-tracing.js'
import type { LogSource, PodLogLine, PodLogQuery } from './ports.js'

export type {
  CreatePodInput,
  GpuRequest,
  PodReferences,
  PodServiceDeps,
  UpdatePodInput,
} from './pod-service-contract.js'
export { JUPYTER_PASSWORD_LENGTH } from './pod-draft.js'

/** How long a TERMINATED pod stays readable by id (docs/pods.md). */
export const TERMINATED_RETENTION_MS = 24 * 3600 * 1000

/**
 * Pods: creation with placement, reads, updates and actions. The lifecycle loop runs them.
 * Drafting a create is pod-draft.ts's, quotas and placement pod-capacity.ts's, the actions and
 * updates pod-actions.ts's.
 */
export class PodService {
  private readonly drafts: PodDrafts
  private readonly capacity: PodCapacity
  private readonly actions: PodActions

  constructor(private readonly deps: PodServiceDeps) {
    this.drafts = new PodDrafts(deps)
    this.capacity = new PodCapacity(deps)
    this.actions = new PodActions(deps, this.capacity, this.drafts)
  }

  /** `options.trace`: the request that creates it, kept with the pod for its spans. */
  async create(
    accountId: string,
    input: CreatePodInput,
    options: { trace?: TraceOrigin } = {},
  ): Promise<Pod> {
    const began = this.deps.clock.now().getTime()
    const draft = await this.draft(accountId, input)
    if (options.trace) draft.trace = options.trace
    await this.deps.spendGuard?.assertWithinSpendLimit(
      accountId,
      draft.hourlyPrice,
      `create pod "${draft.name}"`,
    )
    const limits = await this.capacity.quotasOf(accountId)
    const preempted: Pod[] = []
    const pod = await this.deps.store.exclusive(async (unit) => {
      preempted.length = 0
      await this.capacity.checkQuota(
        unit,
        accountId,
        limits,
        quotaUseOf(draft, { asNewPod: true }),
        `create pod "${draft.name}"`,
      )
      const placed = await this.capacity.reserve(
        unit,
        draft,
        this.capacity.placementRequest(draft),
        {
          suggestOtherCloud: true,
          preempted,
        },
      )
      if (draft.globalNetworking) {
        placed.globalIp = await this.capacity.nextGlobalIp(unit, accountId, draft.id)
      }
      await unit.pods.insert(placed)
      return placed
    })
    await this.deps.store.events.append(
      pod.id,
      pod.createdAt,
      `created; placed on host ${pod.hostId} in ${pod.dataCenterId}`,
    )
    await this.capacity.announcePreempted(preempted, pod.id)
    if (this.deps.tracing) tracePodCreated(this.deps.tracing, pod, began)
    this.deps.nudge(pod.id)
    return pod
  }

  /**
   * The pod a create would make, checked and with its template applied, neither placed nor
   * stored.
   */
  draft(accountId: string, input: CreatePodInput): Promise<Pod> {
    return this.drafts.draft(accountId, input)
  }

  /**
   * Creates the pods together in one data center, or none of them (an instant cluster): each
   * data center the first draft allows (any, in the fleet's order, when it names none) is tried
   * with every pod placed against what the earlier ones took; the first that holds them all
   * wins. `complete` finishes each pod once placed (its address known), before it is stored.
   * 409 naming each data center's shortfall when none can hold them all.
   */
  async createTogether(
    accountId: string,
    drafts: Pod[],
    complete: (pod: Pod, index: number, earlier: Pod[]) => Pod,
  ): Promise<Pod[]> {
    const began = this.deps.clock.now().getTime()
    const first = drafts[0]
    if (!first) return []
    await this.deps.spendGuard?.assertWithinSpendLimit(
      accountId,
      drafts.reduce((sum, pod) => sum + pod.hourlyPrice, 0),
      `create ${drafts.length} pods together`,
    )
    const fleet = this.deps.catalog.fleet
    const candidates =
      first.dataCenterIds.length > 0 ? first.dataCenterIds : fleet.dataCenters.map((dc) => dc.id)
    const limits = await this.capacity.quotasOf(accountId)
    const pods = await this.deps.store.exclusive(async (unit) => {
      await this.capacity.checkQuota(
        unit,
        accountId,
        limits,
        drafts
          .map((draft) => quotaUseOf(draft, { asNewPod: true }))
          .reduce((sum, one) => ({
            pods: (sum.pods ?? 0) + (one.pods ?? 0),
            gpus: (sum.gpus ?? 0) + (one.gpus ?? 0),
          })),
        `create ${drafts.length} pods together`,
      )
      return this.capacity.placeTogether(unit, accountId, drafts, candidates, complete)
    })
    for (const pod of pods) {
      await this.deps.store.events.append(
        pod.id,
        pod.createdAt,
        `created; placed on host ${pod.hostId} in ${pod.dataCenterId}`,
      )
      if (this.deps.tracing) tracePodCreated(this.deps.tracing, pod, began)
      this.deps.nudge(pod.id)
    }
    return pods
  }

  /** A pod of the account; another account's pod, or a purged one, is 404. */
  get(accountId: string, id: string): Promise<Pod> {
    return podOfAccount(this.deps.store, accountId, id)
  }

  /**
   * Lists the account's pods; TERMINATED ones only when the status filter asks for them, the
   * nodes of instant clusters only when `includeClusterPods` does (RunPod's v2 default).
   */
  async list(
    accountId: string,
    filter: { statuses?: PodStatus[]; name?: string; includeClusterPods?: boolean } = {},
  ): Promise<Pod[]> {
    const statuses =
      filter.statuses && filter.statuses.length > 0
        ? filter.statuses
        : (['PROVISIONING', 'STARTING', 'RUNNING', 'EXITED', 'ERROR'] as PodStatus[])
    const pods = await this.deps.store.pods.list({
      accountId,
      statuses,
      ...(filter.name ? { name: filter.name } : {}),
    })
    return filter.includeClusterPods ? pods : pods.filter((pod) => !pod.cluster)
  }

  /**
   * The CUDA version of the host a GPU pod is placed on (kept while it is stopped, as it resumes
   * there); null for CPU pods, pods not placed and hosts without one (AMD).
   */
  hostCudaVersionOf(pod: Pod): string | null {
    if (pod.compute.kind !== 'gpu' || pod.hostId === null) return null
    return this.hostById(pod.hostId)?.gpu?.cudaVersion ?? null
  }

  // Every GPU pod's answer names its host's CUDA version: a scan of 10 000 hosts per read cost
  // more than the read. Rebuilt when the fleet's host list is replaced (a fleet reload).
  private hostsIndexed: readonly Host[] | undefined
  private hostIndex = new Map<string, Host>()
  private hostById(id: string): Host | undefined {
    const hosts = this.deps.catalog.fleet.hosts
    if (this.hostsIndexed !== hosts) {
      this.hostIndex = new Map(hosts.map((h) => [h.id, h]))
      this.hostsIndexed = hosts
    }
    return this.hostIndex.get(id)
  }

  runtimeOf(pod: Pod): Promise<PodRuntime | null> {
    return pod.status === 'RUNNING' ? this.deps.runtime.runtimeOf(pod) : Promise.resolve(null)
  }

  /** An action on a pod of the account; PodActOptions says what the options do. */
  act(
    accountId: string,
    id: string,
    action: PodActionRequest,
    options: PodActOptions = {},
  ): Promise<Pod> {
    return this.actions.act(accountId, id, action, options)
  }

  /**
   * Stops every pod of the account that holds resources, `locked` or not (a lock guards against
   * people, not against an account out of credits); volumes and disks stay. Returns their ids.
   */
  stopAll(accountId: string, reason: string): Promise<string[]> {
    return this.actions.stopAll(accountId, reason)
  }

  /** `asClusterNode`: the pod's cluster is being deleted, which takes its pods with it. */
  terminate(
    accountId: string,
    id: string,
    options: { asClusterNode?: boolean } = {},
  ): Promise<void> {
    return this.actions.terminate(accountId, id, options)
  }

  update(accountId: string, id: string, patch: UpdatePodInput): Promise<Pod> {
    return this.actions.update(accountId, id, patch)
  }

  async readLogs(pod: Pod, source: LogSource, query: PodLogQuery): Promise<PodLogLine[]> {
    return source === 'system'
      ? this.deps.store.events.list(pod.id, query)
      : this.deps.runtime.readContainerLogs(pod, query)
  }

  async *followLogs(
    pod: Pod,
    source: LogSource,
    afterSeq: number,
    signal: AbortSignal,
  ): AsyncIterable<PodLogLine> {
    if (source === 'container') {
      yield* this.deps.runtime.followContainerLogs(pod, afterSeq, signal)
      return
    }
    yield* followEvents(this.deps.store.events, pod.id, afterSeq, signal)
  }
}
