import type { Endpoint } from '../domain/serverless/endpoint.js'
import {
  countWorker,
  emptyWorkerCounts,
  RETIRED_WORKER_PHASES,
  type ManagedWorker,
  type WorkerStatus,
} from '../domain/serverless/worker.js'
import type { WorkerCounts, WorkerPresence } from '../domain/serverless/worker-presence.js'

/** What the loop last saw of a managed worker, for the job service and the workers list. */
export interface SeenWorker {
  endpointId: string
  version: number
  status: WorkerStatus
  takesJobs: boolean
}

export interface WorkerRosterViewDeps {
  presence: WorkerPresence
  /** Whether the operator drains the host: its workers are moved off. */
  hostDraining?: (hostId: string) => boolean
}

/**
 * The autoscaler's read model of the managed workers: what its last pass (or, on a replica
 * that does not lead, the last read of the store) saw of each, the jobs each holds, and which
 * are being stopped or gone for good. The job service asks it which workers take jobs and how
 * many there are (WorkerRoster); the pass and its actions keep it current.
 */
export class WorkerRosterView {
  private seen = new Map<string, SeenWorker>()
  /**
   * The running jobs the store has leased to each worker, as of this tick: a worker holding one
   * is RUNNING whatever its last heartbeat said (a late first ping names no job).
   */
  private held = new Map<string, number>()
  /**
   * Managed workers that are gone for good (UNHEALTHY, STOPPED, lost with their host): they take
   * no job, whatever they still send. A lost host's worker may run on and call, and must not be
   * mistaken for a worker that connects by itself.
   */
  private retired = new Set<string>()
  /** Workers being stopped: they take no job, whatever the last tick saw. */
  private readonly stopping = new Set<string>()
  /** Each endpoint's newest version as its updates said (noteNewestVersion). */
  private readonly newestVersion = new Map<string, number>()
  /** Since when each IDLE worker has been idle (ms since epoch), for the scaler's idle timeout. */
  private readonly idleSince = new Map<string, number>()

  constructor(private readonly deps: WorkerRosterViewDeps) {}

  // ---- what the job service asks (WorkerRoster) ----

  takesJobs(_endpointId: string, workerId: string): boolean {
    if (this.stopping.has(workerId) || this.retired.has(workerId)) return false
    const seen = this.seen.get(workerId)
    if (seen === undefined) return true
    if (seen.version < (this.newestVersion.get(seen.endpointId) ?? 0)) return false
    return seen.takesJobs
  }

  counts(endpointId: string): WorkerCounts {
    const counts = emptyWorkerCounts()
    for (const seen of this.seen.values()) {
      if (seen.endpointId === endpointId) countWorker(counts, seen.status)
    }
    // Workers that connect by themselves (not started here) count as the protocol sees them.
    for (const record of this.deps.presence.active(endpointId)) {
      if (this.seen.has(record.workerId) || this.retired.has(record.workerId)) continue
      countWorker(
        counts,
        record.unhealthy ? 'UNHEALTHY' : record.jobIds.size > 0 ? 'RUNNING' : 'IDLE',
      )
    }
    return counts
  }

  /** The status the workers list shows. */
  statusOf(worker: ManagedWorker): WorkerStatus {
    return this.seen.get(worker.id)?.status ?? this.observedStatus(worker)
  }

  /** Whether one of the endpoint's workers takes jobs or waits for room (THROTTLED). */
  hasTakerOrWaiter(endpointId: string): boolean {
    for (const seen of this.seen.values()) {
      if (seen.endpointId === endpointId && (seen.takesJobs || seen.status === 'THROTTLED')) {
        return true
      }
    }
    return false
  }

  // ---- what a pass reads ----

  holds(worker: ManagedWorker): boolean {
    if ((this.held.get(worker.id) ?? 0) > 0) return true
    const record = this.deps.presence.find(worker.endpointId, worker.id)
    return record !== undefined && record.jobIds.size > 0
  }

  observedStatus(worker: ManagedWorker): WorkerStatus {
    switch (worker.phase) {
      case 'PENDING':
        return 'THROTTLED'
      case 'STARTING':
        return 'INITIALIZING'
      // Never shown for STOPPED: those are left out of the loop and of every list.
      case 'UNHEALTHY':
      case 'STOPPED':
        return 'UNHEALTHY'
      case 'READY':
        return this.holds(worker) ? 'RUNNING' : 'IDLE'
    }
  }

  /** Why the worker is moved off its host (the host drains), or null. */
  leavingReason(worker: ManagedWorker): string | null {
    if (worker.hostId === null || (worker.phase !== 'STARTING' && worker.phase !== 'READY'))
      return null
    return this.deps.hostDraining?.(worker.hostId) ? `its host ${worker.hostId} is draining` : null
  }

  /** Since when the worker, observed as `status`, has been IDLE; null when it is not. */
  idleSinceMs(worker: ManagedWorker, status: WorkerStatus, nowMs: number): number | null {
    if (status !== 'IDLE') {
      this.idleSince.delete(worker.id)
      return null
    }
    if (!this.idleSince.has(worker.id)) this.idleSince.set(worker.id, nowMs)
    return this.idleSince.get(worker.id)!
  }

  /** The ids of the endpoint's workers seen below `version`. */
  olderThan(endpointId: string, version: number): string[] {
    return [...this.seen]
      .filter(([, seen]) => seen.endpointId === endpointId && seen.version < version)
      .map(([workerId]) => workerId)
  }

  // ---- what a pass and its actions write ----

  /** The workers seen by a whole pass: each endpoint's `rosterOf`. */
  replaceSeen(rosters: Iterable<ReadonlyMap<string, SeenWorker>>): void {
    this.seen = new Map([...rosters].flatMap((roster) => [...roster]))
  }

  /** The jobs the store has leased to each worker; `replaceHeld()` forgets every count. */
  replaceHeld(held: ReadonlyMap<string, number> = new Map()): void {
    this.held = new Map(held)
  }

  noteHeld(workerId: string, jobs: number): void {
    this.held.set(workerId, jobs)
  }

  /** The workers stored in a retired phase, read anew each pass. */
  retiredFrom(workers: readonly ManagedWorker[]): void {
    this.retired = new Set(
      workers.filter((w) => RETIRED_WORKER_PHASES.includes(w.phase)).map((w) => w.id),
    )
  }

  retire(workerId: string): void {
    this.retired.add(workerId)
  }

  isStopping(workerId: string): boolean {
    return this.stopping.has(workerId)
  }

  beginStopping(workerId: string): void {
    this.stopping.add(workerId)
  }

  endStopping(workerId: string): void {
    this.stopping.delete(workerId)
  }

  /** The worker no longer runs here: its idle time is forgotten. */
  forgetIdle(workerId: string): void {
    this.idleSince.delete(workerId)
  }

  /**
   * The endpoint's newest version as its update said. Kept apart from what passes saw: a pass
   * that read the endpoint before the update would put the older version back.
   */
  noteNewestVersion(endpoint: Pick<Endpoint, 'id' | 'version'>): void {
    const known = this.newestVersion.get(endpoint.id) ?? 0
    this.newestVersion.set(endpoint.id, Math.max(known, endpoint.version))
  }

  /**
   * What the job service is told of an endpoint's workers. A worker leaving a draining host
   * keeps taking jobs until its replacement is placed (its record then says it is moving off),
   * and none afterwards, so that it becomes free and can go.
   */
  rosterOf(
    endpoint: Pick<Endpoint, 'id' | 'version'>,
    workers: readonly ManagedWorker[],
  ): Map<string, SeenWorker> {
    const out = new Map<string, SeenWorker>()
    for (const worker of workers) {
      const status = this.observedStatus(worker)
      out.set(worker.id, {
        endpointId: endpoint.id,
        version: worker.version,
        status,
        takesJobs:
          worker.version === endpoint.version &&
          !this.deps.presence.find(endpoint.id, worker.id)?.recycle &&
          (status === 'IDLE' || status === 'RUNNING' || status === 'INITIALIZING') &&
          !(isMovingOff(worker) && this.leavingReason(worker) !== null),
      })
    }
    return out
  }
}

/** The worker leaves a draining host and its replacement is placed (markMovingOff). */
export function isMovingOff(worker: ManagedWorker): boolean {
  return worker.phase === 'READY' || worker.phase === 'STARTING'
    ? (worker.reason?.startsWith('moving off host ') ?? false)
    : false
}
