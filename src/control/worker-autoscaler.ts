import type { Logger } from 'pino'
import type { AllocationRepo } from '../domain/catalog/ports.js'
import type { Fleet } from '../domain/catalog/fleet.js'
import type { PlacementPolicy } from '../domain/catalog/placement.js'
import { decideScaling, type ScalingWorker } from '../domain/serverless/autoscaler.js'
import type { Endpoint } from '../domain/serverless/endpoint.js'
import type { JobQueue } from '../domain/serverless/ports.js'
import {
  countWorker,
  emptyWorkerCounts,
  STOPPED_WORKER_RETENTION_MS,
  type ManagedWorker,
  type WorkerRepo,
  type WorkerRoster,
  type WorkerStatus,
} from '../domain/serverless/worker.js'
import { workerCandidates, type WorkerCandidate } from '../domain/serverless/worker-placement.js'
import type { WorkerObserver } from '../domain/serverless/worker-service.js'
import type { WorkerCounts, WorkerPresence } from '../domain/serverless/worker-presence.js'
import type {
  LogLine,
  LogQuery,
  RuntimeDriver,
  WorkloadMount,
  WorkloadState,
} from '../runtime/driver.js'
import type { Clock } from '../shared/clock.js'
import { newId } from '../shared/ids.js'
import { POD_LABEL_KIND } from './pod-workload.js'
import { workerDiskPath, workerWorkloadOf } from './worker-workload.js'

export interface WorkerAutoscalerSettings {
  /** How often the loop reconciles. */
  intervalMs: number
  /** `RUNPOD_PING_INTERVAL` given to workers. */
  pingIntervalMs: number
  /** A ready worker not heard from for this long is UNHEALTHY. */
  heartbeatTimeoutMs: number
  /** A started worker that has not asked for a job within this is UNHEALTHY. */
  startTimeoutMs: number
  /** SIGTERM to SIGKILL when a worker is stopped. */
  stopGraceMs: number
  /** How long an UNHEALTHY worker stays in the workers list after its workload is removed. */
  unhealthyRetentionMs: number
}

export const DEFAULT_AUTOSCALER_SETTINGS: WorkerAutoscalerSettings = {
  intervalMs: 1000,
  pingIntervalMs: 10_000,
  heartbeatTimeoutMs: 30_000,
  startTimeoutMs: 120_000,
  stopGraceMs: 10_000,
  unhealthyRetentionMs: 60_000,
}

export interface WorkerAutoscalerDeps {
  endpoints: { listAll(): Promise<Endpoint[]> }
  workers: WorkerRepo
  /** Runs `work` with the allocations in a transaction no other capacity taker overlaps. */
  exclusiveCapacity<T>(work: (allocations: AllocationRepo) => Promise<T>): Promise<T>
  allocations: AllocationRepo
  fleet: Fleet
  place: PlacementPolicy
  driverFor: (hostId: string) => RuntimeDriver
  drivers: RuntimeDriver[]
  queue: Pick<JobQueue, 'releaseWorker' | 'scalingStats'>
  presence: WorkerPresence
  /** The endpoint's current worker key and its generation. */
  workerKeyFor: (endpointId: string) => Promise<{ workerKey: string; generation: number }>
  /** The job API's base URL as workers reach it. */
  jobApiBaseUrl: () => string
  /** A network volume of the account: its data center and host directory. */
  networkVolume: (
    accountId: string,
    volumeId: string,
  ) => Promise<{ dataCenterId: string; path: string } | undefined>
  registryCredentials: (
    accountId: string,
    registryId: string,
  ) => Promise<{ username: string; password: string } | undefined>
  dataDir: string
  clock: Clock
  logger: Logger
  settings?: Partial<WorkerAutoscalerSettings>
  /**
   * The billing policy (docs/billing.md, "Enforcement"): whether the account is out of credits
   * (its workers are stopped once free, none is started), and why a worker of this hourly price
   * may not start now (over the spend limit), or null.
   */
  billing?: {
    outOfCredits(accountId: string): Promise<boolean>
    refusal(accountId: string, addedUsdPerHour: number): Promise<string | null>
  }
  /** The hourly price of a worker on a candidate's compute, for the spend limit. */
  hourlyPrice?: (candidate: WorkerCandidate, endpoint: Endpoint) => number
  /** Ends the worker's long polls (take, job-stop) at once, as it is being stopped. */
  endPolls?: (endpointId: string, workerId: string) => void
  /** Read-only mounts the platform adds to an endpoint's workers (public models: its code). */
  platformMounts?: (endpoint: Endpoint) => WorkloadMount[]
  /** What happened to a worker, for people: its `system` log (docs/serverless-workers.md). */
  events?: { append(workerId: string, ts: string, line: string): Promise<void> }
}

/** Why a worker must be replaced once free, or null when it is current. */
function staleReason(worker: ManagedWorker, endpoint: Endpoint, keyGeneration: number) {
  if (worker.version !== endpoint.version) {
    return `stale: version ${worker.version}, endpoint is at ${endpoint.version}`
  }
  // A PENDING worker has no key yet: it gets the current one when it starts.
  if (worker.phase !== 'PENDING' && worker.keyGeneration !== keyGeneration) {
    return 'stale: its worker key was rotated'
  }
  return null
}

/** What the loop last saw of a managed worker, for the job service and the workers list. */
interface Seen {
  endpointId: string
  status: WorkerStatus
  takesJobs: boolean
}

/**
 * The worker autoscaler (docs/serverless-workers.md): one reconcile loop that runs every
 * endpoint's workers. Each tick it observes the workers (started, asking for jobs, crashed,
 * silent), asks the pure `decideScaling` what to change, places and launches new workers like
 * pods are placed, and stops the ones to go. It also answers the job service's questions about
 * workers (WorkerRoster).
 */
export class WorkerAutoscaler implements WorkerRoster, WorkerObserver {
  private readonly settings: WorkerAutoscalerSettings
  private timer: NodeJS.Timeout | undefined
  private running: Promise<void> | undefined
  private stopped = false
  /**
   * When this loop started. Presence lives in memory, so a restarted server has heard nothing
   * from the workers it adopts: their silence is counted from here, not from before the restart.
   */
  private startedAtMs = 0
  private readonly idleSince = new Map<string, number>()
  /** Workers being stopped: they take no job, whatever the last tick saw. */
  private readonly stopping = new Set<string>()
  private seen = new Map<string, Seen>()
  /** The reasons last logged per endpoint, so a steady state is not logged every tick. */
  private readonly lastLogged = new Map<string, string>()
  private following = false
  private followTimer: NodeJS.Timeout | undefined
  private followPass: Promise<void> | undefined

  constructor(private readonly deps: WorkerAutoscalerDeps) {
    this.settings = { ...DEFAULT_AUTOSCALER_SETTINGS, ...deps.settings }
  }

  start(): void {
    this.stopped = false
    this.startedAtMs = this.deps.clock.now().getTime()
    const tick = () => {
      this.running = this.reconcile()
        .catch((error: unknown) => this.deps.logger.error({ err: error }, 'autoscaler failed'))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, this.settings.intervalMs)
        })
    }
    tick()
  }

  /** Stops the loop; workers keep running (a restarted server adopts them). */
  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    await this.running
  }

  /**
   * On a replica that does not lead (docs/production.md, "Several replicas"): keeps what the
   * job service asks (takesJobs, counts, statusOf) current from the stored workers every
   * interval, starting and stopping nothing.
   */
  follow(): void {
    if (this.following) return
    this.following = true
    const pass = () => {
      this.followPass = this.refreshRoster()
        .catch((error: unknown) =>
          this.deps.logger.error({ err: error }, 'reading the workers of the leader failed'),
        )
        .finally(() => {
          this.followPass = undefined
          if (this.following) this.followTimer = setTimeout(pass, this.settings.intervalMs)
        })
    }
    pass()
  }

  async unfollow(): Promise<void> {
    this.following = false
    clearTimeout(this.followTimer)
    await this.followPass
  }

  /** The roster from the stored workers and the shared presence, without acting. */
  async refreshRoster(): Promise<void> {
    const endpoints = new Map((await this.deps.endpoints.listAll()).map((e) => [e.id, e]))
    const next = new Map<string, Seen>()
    for (const worker of await this.deps.workers.listAll()) {
      const endpoint = endpoints.get(worker.endpointId)
      if (endpoint && worker.phase !== 'STOPPED') next.set(worker.id, this.seenOf(worker, endpoint))
    }
    this.seen = next
  }

  private seenOf(worker: ManagedWorker, endpoint: Endpoint): Seen {
    const status = this.observedStatus(worker)
    return {
      endpointId: endpoint.id,
      status,
      takesJobs:
        worker.version === endpoint.version &&
        !this.deps.presence.find(endpoint.id, worker.id)?.recycle &&
        (status === 'IDLE' || status === 'RUNNING' || status === 'INITIALIZING'),
    }
  }

  // ---- WorkerRoster ----

  takesJobs(_endpointId: string, workerId: string): boolean {
    if (this.stopping.has(workerId)) return false
    return this.seen.get(workerId)?.takesJobs ?? true
  }

  counts(endpointId: string): WorkerCounts {
    const counts = emptyWorkerCounts()
    for (const seen of this.seen.values()) {
      if (seen.endpointId === endpointId) countWorker(counts, seen.status)
    }
    // Workers that connect by themselves (not started here) count as the protocol sees them.
    for (const record of this.deps.presence.active(endpointId)) {
      if (this.seen.has(record.workerId)) continue
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

  readLogs(worker: ManagedWorker, query: LogQuery): Promise<LogLine[]> {
    if (worker.hostId === null) return Promise.resolve([])
    return this.deps.driverFor(worker.hostId).readLogs(worker.id, query)
  }

  followLogs(worker: ManagedWorker, afterSeq: number, signal: AbortSignal): AsyncIterable<LogLine> {
    if (worker.hostId === null) return (async function* () {})()
    return this.deps.driverFor(worker.hostId).followLogs(worker.id, afterSeq, signal)
  }

  // ---- the loop ----

  async reconcile(): Promise<void> {
    const endpoints = new Map((await this.deps.endpoints.listAll()).map((e) => [e.id, e]))
    const workloads = new Map<string, WorkloadState>()
    for (const driver of this.deps.drivers) {
      for (const workload of await driver.list()) {
        if (workload.labels[POD_LABEL_KIND] === 'worker') workloads.set(workload.id, workload)
      }
    }
    const nowMs = this.deps.clock.now().getTime()
    const rows: ManagedWorker[] = []
    for (const worker of await this.deps.workers.listAll()) {
      if (worker.phase !== 'STOPPED') rows.push(worker)
      else if (nowMs - Date.parse(worker.phaseChangedAt) > STOPPED_WORKER_RETENTION_MS) {
        await this.deps.workers.delete(worker.id)
      }
    }
    const known = new Set(rows.map((w) => w.id))
    for (const workload of workloads.values()) {
      if (known.has(workload.id)) continue
      this.deps.logger.warn({ workerId: workload.id }, 'removing a workload of no worker')
      for (const driver of this.deps.drivers) await driver.remove(workload.id)
    }

    const next = new Map<string, Seen>()
    const byEndpoint = new Map<string, ManagedWorker[]>()
    for (const worker of rows) {
      if (!endpoints.has(worker.endpointId)) {
        await this.remove(worker, 'its endpoint was deleted')
        continue
      }
      byEndpoint.set(worker.endpointId, [...(byEndpoint.get(worker.endpointId) ?? []), worker])
    }
    for (const endpoint of endpoints.values()) {
      if (this.stopped) return
      try {
        const current = await this.reconcileEndpoint(
          endpoint,
          byEndpoint.get(endpoint.id) ?? [],
          workloads,
        )
        for (const worker of current) next.set(worker.id, this.seenOf(worker, endpoint))
      } catch (error) {
        this.deps.logger.error({ err: error, endpointId: endpoint.id }, 'autoscaling failed')
      }
    }
    this.seen = next
  }

  private observedStatus(worker: ManagedWorker): WorkerStatus {
    switch (worker.phase) {
      case 'PENDING':
        return 'THROTTLED'
      case 'STARTING':
        return 'INITIALIZING'
      // Never shown for STOPPED: those are left out of the loop and of every list.
      case 'UNHEALTHY':
      case 'STOPPED':
        return 'UNHEALTHY'
      case 'READY': {
        const record = this.deps.presence.find(worker.endpointId, worker.id)
        return record && record.jobIds.size > 0 ? 'RUNNING' : 'IDLE'
      }
    }
  }

  /** One endpoint: observe, decide, act. Returns its workers after the tick. */
  private async reconcileEndpoint(
    endpoint: Endpoint,
    workers: ManagedWorker[],
    workloads: ReadonlyMap<string, WorkloadState>,
  ): Promise<ManagedWorker[]> {
    const nowMs = this.deps.clock.now().getTime()
    const current: ManagedWorker[] = []
    for (const worker of workers) {
      const observed = await this.observe(worker, workloads.get(worker.id), nowMs)
      if (observed) current.push(observed)
    }
    if (await this.deps.billing?.outOfCredits(endpoint.accountId)) {
      return this.drainForCredits(endpoint, current)
    }

    const stats = await this.deps.queue.scalingStats(endpoint.id)
    const keyGeneration = (await this.deps.workerKeyFor(endpoint.id)).generation
    const staleness = new Map(current.map((w) => [w.id, staleReason(w, endpoint, keyGeneration)]))
    const scaling: ScalingWorker[] = current.map((worker) => {
      const status = this.observedStatus(worker)
      if (status === 'IDLE') {
        if (!this.idleSince.has(worker.id)) this.idleSince.set(worker.id, nowMs)
      } else this.idleSince.delete(worker.id)
      return {
        id: worker.id,
        state:
          status === 'THROTTLED'
            ? 'PENDING'
            : status === 'INITIALIZING'
              ? 'STARTING'
              : status === 'UNHEALTHY'
                ? 'UNHEALTHY'
                : status,
        stale: staleness.get(worker.id) ?? null,
        idleSinceMs: this.idleSince.get(worker.id) ?? null,
        recycle: this.deps.presence.find(endpoint.id, worker.id)?.recycle ?? false,
      }
    })
    const decision = decideScaling({
      workers: endpoint.workers,
      scaling: endpoint.scaling,
      queue: {
        queued: stats.queued,
        oldestQueuedAtMs: stats.oldestQueuedAt === null ? null : Date.parse(stats.oldestQueuedAt),
        inProgress: stats.inProgress,
      },
      current: scaling,
      nowMs,
    })
    this.logDecision(endpoint, decision)

    const stopping = new Set(decision.stop.map((s) => s.workerId))
    await Promise.all(
      decision.stop.map(async ({ workerId, reason }) => {
        const worker = current.find((w) => w.id === workerId)
        if (worker) await this.remove(worker, reason)
      }),
    )
    const kept = current.filter((w) => !stopping.has(w.id))
    for (let i = 0; i < decision.start; i++) {
      const worker = this.newWorker(endpoint)
      await this.deps.workers.insert(worker)
      await this.event(worker, `wanted for endpoint version ${worker.version}`)
      kept.push(worker)
    }
    const out: ManagedWorker[] = []
    for (const worker of kept) {
      out.push(worker.phase === 'PENDING' ? await this.launch(endpoint, worker) : worker)
    }
    return out
  }

  /** Out of credits: no new worker; the ones without a job stop, the others after their job. */
  private async drainForCredits(
    endpoint: Endpoint,
    current: ManagedWorker[],
  ): Promise<ManagedWorker[]> {
    const kept: ManagedWorker[] = []
    for (const worker of current) {
      const status = this.observedStatus(worker)
      if (status === 'RUNNING' || status === 'UNHEALTHY') kept.push(worker)
      else await this.remove(worker, 'the account is out of credits (balance at or below zero)')
    }
    if (kept.length < current.length)
      this.logDecision(endpoint, {
        start: 0,
        stop: [],
        reasons: ['the account is out of credits: no worker is started, idle ones are stopped'],
      })
    return kept
  }

  private logDecision(endpoint: Endpoint, decision: ReturnType<typeof decideScaling>): void {
    const said = decision.reasons.join('; ')
    if (said === '' || said === this.lastLogged.get(endpoint.id)) return
    this.lastLogged.set(endpoint.id, said)
    this.deps.logger.info(
      {
        endpointId: endpoint.id,
        start: decision.start,
        stop: decision.stop.map((s) => s.workerId),
        reasons: decision.reasons,
      },
      'autoscaler decision',
    )
  }

  private newWorker(endpoint: Endpoint): ManagedWorker {
    const now = this.deps.clock.now().toISOString()
    return {
      id: newId.pod(),
      endpointId: endpoint.id,
      accountId: endpoint.accountId,
      version: endpoint.version,
      keyGeneration: 0,
      phase: 'PENDING',
      reason: 'waiting for a host with room',
      hostId: null,
      dataCenterId: null,
      gpuTypeId: null,
      cpuFlavorId: null,
      gpuCount: 0,
      gpuIndices: [],
      vcpus: 0,
      memoryGb: 0,
      image: endpoint.image,
      createdAt: now,
      startedAt: null,
      phaseChangedAt: now,
    }
  }

  /**
   * Moves the worker on by what its workload and its calls say; undefined when it is gone
   * (an UNHEALTHY worker past its retention).
   */
  private async observe(
    worker: ManagedWorker,
    workload: WorkloadState | undefined,
    nowMs: number,
  ): Promise<ManagedWorker | undefined> {
    const sinceMs = nowMs - Date.parse(worker.phaseChangedAt)
    if (worker.phase === 'UNHEALTHY') {
      if (sinceMs < this.settings.unhealthyRetentionMs) return worker
      // Gone since it became UNHEALTHY: the meter charges it up to then.
      await this.deps.workers.update({ ...worker, phase: 'STOPPED' })
      this.idleSince.delete(worker.id)
      return undefined
    }
    if (worker.phase === 'PENDING') return worker
    const exited = (what: string) =>
      workload === undefined
        ? `its workload is gone ${what}`
        : `exited with code ${workload.exitCode ?? 'none (killed)'} ${what}`
    const record = this.deps.presence.find(worker.endpointId, worker.id)
    if (worker.phase === 'STARTING') {
      if (workload === undefined || workload.phase === 'exited') {
        return this.unhealthy(worker, exited('before asking for a job'))
      }
      if (record && record.lastSeenAt >= Date.parse(worker.phaseChangedAt)) {
        return this.setPhase(worker, 'READY', null)
      }
      if (sinceMs > this.settings.startTimeoutMs) {
        return this.unhealthy(
          worker,
          `did not ask for a job within ${this.settings.startTimeoutMs / 1000} s of starting`,
        )
      }
      return worker
    }
    // READY
    if (workload === undefined || workload.phase === 'exited') {
      return this.unhealthy(worker, exited('while ready'))
    }
    if (record?.unhealthy) {
      return this.unhealthy(
        worker,
        `failed its fitness check ${record.unhealthy.check}: ${record.unhealthy.reason}`,
      )
    }
    const lastSeenAt = record?.lastSeenAt ?? 0
    if (
      nowMs - Math.max(lastSeenAt, Date.parse(worker.phaseChangedAt), this.startedAtMs) >
      this.settings.heartbeatTimeoutMs
    ) {
      return this.unhealthy(
        worker,
        `missed its heartbeats for more than ${this.settings.heartbeatTimeoutMs / 1000} s`,
      )
    }
    return worker
  }

  private async setPhase(
    worker: ManagedWorker,
    phase: ManagedWorker['phase'],
    reason: string | null,
  ): Promise<ManagedWorker> {
    const next = {
      ...worker,
      phase,
      reason,
      phaseChangedAt: this.deps.clock.now().toISOString(),
    }
    await this.deps.workers.update(next)
    await this.event(next, reason ? `${phase}: ${reason}` : phase)
    return next
  }

  /** A line of the worker's system log; a failure to write one never stops the loop. */
  private async event(worker: ManagedWorker, line: string): Promise<void> {
    try {
      await this.deps.events?.append(worker.id, this.deps.clock.now().toISOString(), line)
    } catch (error) {
      this.deps.logger.warn({ err: error, workerId: worker.id }, 'could not record a worker event')
    }
  }

  /** Its jobs go back to the queue (or fail after MAX_JOB_ATTEMPTS); its workload is removed. */
  private async unhealthy(worker: ManagedWorker, reason: string): Promise<ManagedWorker> {
    const released = await this.deps.queue.releaseWorker(worker.endpointId, worker.id)
    this.deps.logger.warn(
      { endpointId: worker.endpointId, workerId: worker.id, reason, releasedJobs: released },
      'worker unhealthy; replacing it',
    )
    await this.release(worker, 0)
    this.deps.presence.forget(worker.endpointId, worker.id)
    return this.setPhase({ ...worker, hostId: worker.hostId }, 'UNHEALTHY', reason)
  }

  /** Stops and forgets a worker: workload, allocation, record. */
  private async remove(worker: ManagedWorker, reason: string): Promise<void> {
    this.deps.logger.info(
      { endpointId: worker.endpointId, workerId: worker.id, reason },
      'stopping worker',
    )
    await this.release(worker, this.settings.stopGraceMs)
    // A job it still held (it was stopped while working) is not lost.
    await this.deps.queue.releaseWorker(worker.endpointId, worker.id)
    // A launched worker is kept, STOPPED, until the meter has charged it up to now.
    if (worker.startedAt === null) await this.deps.workers.delete(worker.id)
    else await this.setPhase(worker, 'STOPPED', reason)
    this.deps.presence.forget(worker.endpointId, worker.id)
    this.idleSince.delete(worker.id)
  }

  private async release(worker: ManagedWorker, graceMs: number): Promise<void> {
    if (worker.hostId !== null) {
      const driver = this.deps.driverFor(worker.hostId)
      this.stopping.add(worker.id)
      const stopped = driver.stop(worker.id, { graceMs })
      // A worker loop that got SIGTERM (runpod-python) waits for its open long polls before it
      // exits: end them once it has the signal, so that it need not be killed after the grace.
      const timer = setTimeout(() => this.deps.endPolls?.(worker.endpointId, worker.id), 200)
      try {
        await stopped
      } finally {
        clearTimeout(timer)
        this.stopping.delete(worker.id)
      }
      await driver.remove(worker.id)
    }
    await this.deps.allocations.remove('worker', worker.id)
  }

  /** Keeps the worker PENDING (THROTTLED) with why, logged when the reason changes. */
  private async throttled(
    endpoint: Endpoint,
    worker: ManagedWorker,
    reason: string,
  ): Promise<ManagedWorker> {
    if (reason === worker.reason) return worker
    this.deps.logger.info(
      { endpointId: endpoint.id, workerId: worker.id, reason },
      'worker throttled',
    )
    return this.setPhase(worker, 'PENDING', reason)
  }

  /** Places a PENDING worker and starts its workload; it stays PENDING (THROTTLED) without room. */
  private async launch(endpoint: Endpoint, worker: ManagedWorker): Promise<ManagedWorker> {
    const volumes: Array<{ id: string; dataCenterId: string; path: string }> = []
    for (const id of endpoint.networkVolumes) {
      const volume = await this.deps.networkVolume(endpoint.accountId, id)
      if (volume) volumes.push({ id, ...volume })
    }
    const candidates = workerCandidates(
      endpoint,
      volumes.map((v) => v.dataCenterId),
    )
    // Checked before placement, at the price of the first candidate (the preferred compute):
    // the check reads other tables, which must not wait inside the capacity transaction.
    const first = candidates[0]
    const refusal =
      first && this.deps.billing && this.deps.hourlyPrice
        ? await this.deps.billing.refusal(
            endpoint.accountId,
            this.deps.hourlyPrice(first, endpoint),
          )
        : null
    if (refusal !== null) return this.throttled(endpoint, worker, refusal)
    const now = this.deps.clock.now().toISOString()
    const placed = await this.deps.exclusiveCapacity(async (allocations) => {
      const snapshot = {
        hosts: this.deps.fleet.hosts,
        dataCenters: this.deps.fleet.dataCenters,
        allocations: await allocations.list(),
      }
      const refusals: string[] = []
      for (const candidate of candidates) {
        const result = this.deps.place(snapshot, candidate.request)
        if (!result.ok) {
          refusals.push(result.detail)
          continue
        }
        const { placement } = result
        await allocations.insert({
          id: newId.allocation(),
          hostId: placement.hostId,
          ownerKind: 'worker',
          ownerId: worker.id,
          gpuCount: placement.gpuIndices.length,
          gpuIndices: placement.gpuIndices,
          vcpus: placement.vcpus,
          memoryGb: placement.memoryGb,
          diskGb: placement.diskGb,
          createdAt: now,
        })
        return { ok: true as const, candidate, placement }
      }
      return { ok: false as const, refusals }
    })
    if (!placed.ok) {
      const reason =
        candidates.length === 0
          ? 'no data center satisfies both the endpoint and its network volumes'
          : `no capacity: ${placed.refusals.slice(0, 3).join('; ')}${placed.refusals.length > 3 ? `; and ${placed.refusals.length - 3} more` : ''}`
      return this.throttled(endpoint, worker, reason)
    }
    const { candidate, placement } = placed
    const key = await this.deps.workerKeyFor(endpoint.id)
    const startedAt = this.deps.clock.now().toISOString()
    const launched: ManagedWorker = {
      ...worker,
      phase: 'STARTING',
      reason: null,
      hostId: placement.hostId,
      dataCenterId: placement.dataCenterId,
      gpuTypeId: candidate.gpuTypeId,
      cpuFlavorId: candidate.cpuFlavorId,
      gpuCount: placement.gpuIndices.length,
      gpuIndices: placement.gpuIndices,
      vcpus: placement.vcpus,
      memoryGb: placement.memoryGb,
      image: endpoint.image,
      keyGeneration: key.generation,
      startedAt,
      phaseChangedAt: startedAt,
    }
    await this.deps.workers.update(launched)
    await this.event(
      launched,
      `placed on host ${placement.hostId} in ${placement.dataCenterId}; starting version ${endpoint.version}`,
    )
    try {
      const volume = volumes.find((v) => v.dataCenterId === placement.dataCenterId)
      const registryAuth = endpoint.registry
        ? await this.deps.registryCredentials(endpoint.accountId, endpoint.registry)
        : undefined
      const spec = workerWorkloadOf(endpoint, launched, {
        baseUrl: this.deps.jobApiBaseUrl(),
        workerKey: key.workerKey,
        pingIntervalMs: this.settings.pingIntervalMs,
        diskPath: workerDiskPath(this.deps.dataDir, worker.id),
        ...(volume ? { networkVolume: { id: volume.id, path: volume.path } } : {}),
        ...(registryAuth ? { registryAuth } : {}),
        platformMounts: this.deps.platformMounts?.(endpoint) ?? [],
      })
      await this.deps.driverFor(placement.hostId).start(spec)
      this.deps.logger.info(
        {
          endpointId: endpoint.id,
          workerId: worker.id,
          hostId: placement.hostId,
          version: endpoint.version,
        },
        'worker started',
      )
      return launched
    } catch (error) {
      return this.unhealthy(launched, `could not start: ${(error as Error).message}`)
    }
  }
}
