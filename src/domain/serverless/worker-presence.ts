import type { Clock } from '../../shared/clock.js'

/**
 * How long after its last call (take, ping, job-done, ...) a worker still counts in `/health`.
 * runpod-python pings every 10 s by default and re-takes at least every long-poll, so a live
 * worker is seen several times within this.
 */
export const WORKER_PRESENCE_WINDOW_MS = 60_000

/** runpod-python's default ping interval (`RUNPOD_PING_INTERVAL`), and podyard's. */
export const DEFAULT_HEARTBEAT_LAG_MS = 10_000

/** `/health` worker counts (wire-compat §4.1; `unhealthy` is ours). */
export interface WorkerCounts {
  idle: number
  initializing: number
  ready: number
  running: number
  throttled: number
  unhealthy: number
}

export interface WorkerSighting {
  /** The jobs the worker says it runs now (take `job_in_progress=0`), replacing what was known. */
  jobIds?: string[]
  /**
   * The jobs a heartbeat (ping `job_id`) names: they replace what was known, except the jobs
   * handed to the worker within the last ping interval. runpod-python pings from another
   * process, so a ping composed before a take can arrive after it; it could not name the job.
   */
  heartbeatJobIds?: string[]
  /** Jobs it has just taken. */
  taken?: string[]
  /** A job it has just finished. */
  finished?: string
  /** A fitness report (`ping?status=unhealthy&check=..&reason=..`); undefined leaves it as is. */
  unhealthy?: { check: string; reason: string } | null
  /** The worker asked to be recycled after its job (`stopPod`). */
  recycle?: boolean
}

export interface WorkerRecord {
  endpointId: string
  workerId: string
  lastSeenAt: number
  jobIds: Set<string>
  unhealthy?: { check: string; reason: string }
  recycle: boolean
  /** When a take with job_in_progress=1 last renewed the worker's leases (JobService.take). */
  leasesRenewedAt?: number
  /**
   * When each of `jobIds` was last seen held here (handed out, or reported on): local, like
   * leasesRenewedAt.
   */
  takenAt?: Map<string, number>
}

/** What a sync publishes: the records seen here since the last one, and those forgotten. */
export interface PresenceChanges {
  seen: WorkerRecord[]
  forgotten: Array<{ endpointId: string; workerId: string }>
}

const presenceKey = (endpointId: string, workerId: string) => `${endpointId}\u0000${workerId}`

/**
 * The workers that connect to this server by themselves, as seen through the worker protocol.
 * The platform's own workers are stored records (worker.ts); this is what tells their IDLE from
 * RUNNING, and what counts the workers that connect by themselves. In memory, so a worker's call
 * costs no database round trip; with several replicas (docs/production.md) a sync
 * (src/store/shared-worker-presence.ts) publishes this replica's changes about every second
 * (`takeChanges`) and replaces the rest with what all replicas published (`replaceAll`), so
 * every replica sees a worker that talks to any of them, about a second late.
 */
export class WorkerPresence {
  private readonly workers = new Map<string, WorkerRecord>()
  /** Seen here since the last takeChanges (a sync keeps these over what it reads). */
  private readonly changed = new Set<string>()
  private readonly forgotten = new Map<string, { endpointId: string; workerId: string }>()

  /**
   * @param heartbeatLagMs how long after a take a heartbeat that does not name the job is taken
   *   to have been composed before it: the ping interval of the workers (`RUNPOD_PING_INTERVAL`).
   */
  constructor(
    private readonly clock: Clock,
    private readonly windowMs = WORKER_PRESENCE_WINDOW_MS,
    private readonly heartbeatLagMs = DEFAULT_HEARTBEAT_LAG_MS,
  ) {}

  seen(endpointId: string, workerId: string, sighting: WorkerSighting = {}): WorkerRecord {
    const key = presenceKey(endpointId, workerId)
    this.changed.add(key)
    this.forgotten.delete(key)
    let record = this.workers.get(key)
    if (record === undefined) {
      record = { endpointId, workerId, lastSeenAt: 0, jobIds: new Set(), recycle: false }
      this.workers.set(key, record)
    }
    const now = this.clock.now().getTime()
    record.lastSeenAt = now
    if (sighting.jobIds !== undefined) {
      record.jobIds = new Set(sighting.jobIds)
      delete record.takenAt
    }
    if (sighting.heartbeatJobIds !== undefined) {
      const named = new Set(sighting.heartbeatJobIds)
      for (const [id, at] of record.takenAt ?? []) {
        if (now - at < this.heartbeatLagMs && record.jobIds.has(id)) named.add(id)
        else record.takenAt!.delete(id)
      }
      record.jobIds = named
    }
    for (const id of sighting.taken ?? []) {
      record.jobIds.add(id)
      ;(record.takenAt ??= new Map()).set(id, now)
    }
    if (sighting.finished !== undefined) {
      record.jobIds.delete(sighting.finished)
      record.takenAt?.delete(sighting.finished)
    }
    if (sighting.unhealthy === null) delete record.unhealthy
    else if (sighting.unhealthy !== undefined) record.unhealthy = sighting.unhealthy
    if (sighting.recycle) record.recycle = true
    return record
  }

  /** Forgets a worker at once (it was stopped): it no longer counts anywhere. */
  forget(endpointId: string, workerId: string): void {
    const key = presenceKey(endpointId, workerId)
    this.workers.delete(key)
    this.changed.delete(key)
    this.forgotten.set(key, { endpointId, workerId })
  }

  /** The changes since the last call, for a sync to publish. */
  takeChanges(): PresenceChanges {
    const seen: WorkerRecord[] = []
    for (const key of this.changed) {
      const record = this.workers.get(key)
      if (record) seen.push({ ...record, jobIds: new Set(record.jobIds) })
    }
    this.changed.clear()
    const forgotten = [...this.forgotten.values()]
    this.forgotten.clear()
    return { seen, forgotten }
  }

  /** Changes a sync could not publish: the next one publishes them (unless superseded). */
  returnChanges(changes: PresenceChanges): void {
    for (const record of changes.seen) {
      const key = presenceKey(record.endpointId, record.workerId)
      if (this.workers.has(key)) this.changed.add(key)
    }
    for (const gone of changes.forgotten) {
      const key = presenceKey(gone.endpointId, gone.workerId)
      if (!this.workers.has(key)) this.forgotten.set(key, gone)
    }
  }

  /**
   * Replaces what is known with what every replica published (`records`), except the workers
   * seen here since the last takeChanges, which the next sync publishes.
   */
  replaceAll(records: WorkerRecord[]): void {
    const next = new Map<string, WorkerRecord>()
    for (const record of records) {
      const key = presenceKey(record.endpointId, record.workerId)
      if (this.forgotten.has(key)) continue
      // What only this replica knows of the worker stays.
      const local = this.workers.get(key)
      next.set(
        key,
        local?.leasesRenewedAt === undefined && local?.takenAt === undefined
          ? record
          : {
              ...record,
              ...(local.leasesRenewedAt === undefined
                ? {}
                : { leasesRenewedAt: local.leasesRenewedAt }),
              ...(local.takenAt === undefined ? {} : { takenAt: local.takenAt }),
            },
      )
    }
    for (const key of this.changed) {
      const local = this.workers.get(key)
      if (local) next.set(key, local)
    }
    this.workers.clear()
    for (const [key, record] of next) this.workers.set(key, record)
  }

  /** The worker's record when seen within the window. */
  find(endpointId: string, workerId: string): WorkerRecord | undefined {
    const record = this.workers.get(presenceKey(endpointId, workerId))
    return record && record.lastSeenAt >= this.clock.now().getTime() - this.windowMs
      ? record
      : undefined
  }

  /** The endpoint's workers seen within the window; older records are forgotten. */
  active(endpointId: string): WorkerRecord[] {
    const since = this.clock.now().getTime() - this.windowMs
    const out: WorkerRecord[] = []
    for (const [key, record] of this.workers) {
      if (record.lastSeenAt < since) this.workers.delete(key)
      else if (record.endpointId === endpointId) out.push(record)
    }
    return out
  }

  /** Every endpoint's workers seen within the window (the `podyard_workers` gauge). */
  everyActive(): WorkerRecord[] {
    const since = this.clock.now().getTime() - this.windowMs
    return [...this.workers.values()].filter((record) => record.lastSeenAt >= since)
  }

  counts(endpointId: string): WorkerCounts {
    const counts: WorkerCounts = {
      idle: 0,
      initializing: 0,
      ready: 0,
      running: 0,
      throttled: 0,
      unhealthy: 0,
    }
    for (const record of this.active(endpointId)) {
      if (record.unhealthy) counts.unhealthy += 1
      else if (record.jobIds.size > 0) counts.running += 1
      else counts.idle += 1
    }
    return counts
  }
}
