import type { PlacementSnapshot } from '../catalog/placement.js'
import type { AllocationRepo } from '../catalog/ports.js'
import type { QuotaUse } from '../quotas/quota.js'
import type { Pod, PodRuntime, PodStatus } from './pod.js'

export interface PodFilter {
  accountId?: string
  statuses?: PodStatus[]
  name?: string
}

export interface PodRepo {
  insert(pod: Pod): Promise<void>
  findById(id: string): Promise<Pod | undefined>
  list(filter: PodFilter): Promise<Pod[]>
  /** Writes `pod` (whose version is already incremented) only if the stored version is `pod.version - 1`. */
  update(pod: Pod): Promise<boolean>
  /** Forgets TERMINATED pods terminated before `before`; returns their ids. */
  purgeTerminated(before: string): Promise<string[]>
}

/** Lifecycle events of a pod, for people (the `system` log source). */
export interface PodEventRepo {
  append(podId: string, ts: string, line: string): Promise<void>
  list(
    podId: string,
    query: { afterSeq?: number; tail?: number; since?: string },
  ): Promise<PodLogLine[]>
}

export interface PodLogLine {
  seq: number
  ts: string
  line: string
}

export interface CapacityUnit {
  pods: PodRepo
  allocations: AllocationRepo
  /**
   * What placement reads of the allocations in this unit: an index of them kept by the store
   * (placement then looks only at hosts with room), or all of them.
   */
  holdings(): Promise<PlacementSnapshot['allocations']>
  /** What the account holds, as counted inside this unit (quotas are checked against it). */
  quotaUse(accountId: string): Promise<QuotaUse>
  /** The pools the account is bound to, as read inside this unit. */
  accountPools(accountId: string): Promise<string[]>
}

/** The store as pods need it: plain repos, and an exclusive unit for anything that takes capacity. */
export interface PodStore extends CapacityUnit {
  events: PodEventRepo
  /**
   * Runs `work` in a transaction that no other capacity-taking transaction overlaps (on any
   * replica), so a placement decided inside it cannot over-commit a host.
   */
  exclusive<T>(work: (unit: CapacityUnit) => Promise<T>): Promise<T>
}

export type LogSource = 'container' | 'system'

export interface PodLogQuery {
  afterSeq?: number
  tail?: number
  since?: string
}

/** What the runtime knows of a pod's workload: live metrics and its output. */
export interface PodRuntimeReader {
  runtimeOf(pod: Pod): Promise<PodRuntime | null>
  readContainerLogs(pod: Pod, query: PodLogQuery): Promise<PodLogLine[]>
  followContainerLogs(pod: Pod, afterSeq: number, signal: AbortSignal): AsyncIterable<PodLogLine>
}
