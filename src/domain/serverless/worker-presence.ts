import type { Clock } from '../../shared/clock.js'

/**
 * How long after its last call (take, ping, job-done, ...) a worker still counts in `/health`.
 * runpod-python pings every 10 s by default and re-takes at least every long-poll, so a live
 * worker is seen several times within this.
 */
export const WORKER_PRESENCE_WINDOW_MS = 60_000

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
  /** The jobs the worker says it runs now (ping `job_id`), replacing what was known. */
  jobIds?: string[]
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
}

/**
 * The workers that connect to this server by themselves, as seen through the worker protocol.
 * In memory and per replica: a worker counts on the replica it talks to. The platform's own
 * workers are stored records (worker.ts); this is what tells their IDLE from RUNNING, and what
 * counts the workers that connect by themselves.
 */
export class WorkerPresence {
  private readonly workers = new Map<string, WorkerRecord>()

  constructor(
    private readonly clock: Clock,
    private readonly windowMs = WORKER_PRESENCE_WINDOW_MS,
  ) {}

  seen(endpointId: string, workerId: string, sighting: WorkerSighting = {}): WorkerRecord {
    const key = `${endpointId}\u0000${workerId}`
    let record = this.workers.get(key)
    if (record === undefined) {
      record = { endpointId, workerId, lastSeenAt: 0, jobIds: new Set(), recycle: false }
      this.workers.set(key, record)
    }
    record.lastSeenAt = this.clock.now().getTime()
    if (sighting.jobIds !== undefined) record.jobIds = new Set(sighting.jobIds)
    for (const id of sighting.taken ?? []) record.jobIds.add(id)
    if (sighting.finished !== undefined) record.jobIds.delete(sighting.finished)
    if (sighting.unhealthy === null) delete record.unhealthy
    else if (sighting.unhealthy !== undefined) record.unhealthy = sighting.unhealthy
    if (sighting.recycle) record.recycle = true
    return record
  }

  /** Forgets a worker at once (it was stopped): it no longer counts anywhere. */
  forget(endpointId: string, workerId: string): void {
    this.workers.delete(`${endpointId}\u0000${workerId}`)
  }

  /** The worker's record when seen within the window. */
  find(endpointId: string, workerId: string): WorkerRecord | undefined {
    const record = this.workers.get(`${endpointId}\u0000${workerId}`)
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
