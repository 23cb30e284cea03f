import type { AllocationRepo } from '../domain/catalog/ports.js'
import { hostLostReason } from '../domain/hosts/host-state.js'
import { decideScaling, type ScalingWorker } from '../domain/serverless/autoscaler.js'
import type { Endpoint } from '../domain/serverless/endpoint.js'
import type { JobQueue } from '../domain/serverless/ports.js'
import {
  mayStart,
  startBackoffView,
  type StartBackoffRepo,
  type StartBackoffView,
} from '../domain/serverless/start-backoff.js'
import {
  countWorker,
  emptyWorkerCounts,
  MAX_LISTED_UNHEALTHY_WORKERS,
  RETIRED_WORKER_PHASES,
  STOPPED_WORKER_RETENTION_MS,
  type ManagedWorker,
  type WorkerRoster,
  type WorkerStatus,
} from '../domain/serverless/worker.js'
import type { WorkerObserver } from '../domain/serverless/worker-service.js'
import type { WorkerCounts, WorkerPresence } from '../domain/serverless/worker-presence.js'
import type { LogLine, LogQuery, RuntimeDriver, WorkloadState } from '../runtime/driver.js'
import { newId } from '../shared/ids.js'
import { ReconcileLoop } from '../shared/reconcile-loop.js'
import { outOfMemoryReason } from './out-of-memory.js'
import { untilLaunched } from './until-launched.js'
import { WorkerFailures } from './worker-failures.js'
import { launchWorker, type WorkerLaunchDeps } from './worker-launch.js'
import {
  listWorkerWorkloads,
  removeStrayWorkloads,
  type ListedWorkload,
} from './worker-workload-listing.js'

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
  /** After a worker fails, no worker of its endpoint starts for this long, doubled per failure. */
  startBackoffMs: number
  /** The longest such wait. */
  startBackoffMaxMs: number
}

/**
 * Passes woken by queued jobs (`jobQueued`) start at least this far apart, so that a stream of
 * submissions to an endpoint whose worker cannot be placed does not run the loop back to back.
 */
export const WAKE_MIN_SPACING_MS = 50

/** Why workers are stopped, as the metrics label them (bounded, unlike the logged reasons). */
export const SCALE_DOWN_REASONS = [
  'idle',
  'never_placed',
  'stale',
  'recycled',
  'credits',
  'other',
] as const

export function scaleDownReason(reason: string): (typeof SCALE_DOWN_REASONS)[number] {
  if (reason.startsWith('idle')) return 'idle'
  if (reason.includes('never placed')) return 'never_placed'
  if (reason.startsWith('stale')) return 'stale'
  if (reason.startsWith('recycled')) return 'recycled'
  if (reason.includes('out of credits')) return 'credits'
  return 'other'
}

export const DEFAULT_AUTOSCALER_SETTINGS: WorkerAutoscalerSettings = {
  intervalMs: 1000,
  pingIntervalMs: 10_000,
  heartbeatTimeoutMs: 30_000,
  startTimeoutMs: 120_000,
  stopGraceMs: 10_000,
  unhealthyRetentionMs: 60_000,
  startBackoffMs: 1000,
  startBackoffMaxMs: 60_000,
}

export interface WorkerAutoscalerDeps extends WorkerLaunchDeps {
  endpoints: { listAll(): Promise<Endpoint[]> }
  allocations: AllocationRepo
  drivers: RuntimeDriver[]
  queue: Pick<JobQueue, 'releaseWorker' | 'requeueWorkerJobs' | 'failWorkerJobs' | 'scalingStats'>
  presence: WorkerPresence
  /** Each endpoint's crash-loop backoff (docs/serverless-workers.md, "Crash loops"). */
  startBackoffs: StartBackoffRepo
  settings?: Partial<WorkerAutoscalerSettings>
  /**
   * Ends the worker's long polls (take, job-stop) at once, as it is being stopped; resolves
   * when those this server holds have answered.
   */
  endPolls?: (endpointId: string, workerId: string) => void | Promise<void>
  /** The host's state when it is DOWN (the host board), else undefined. */
  hostDown?: (hostId: string) => { since: string; reason: string | null } | undefined
  /** Whether the operator drains the host: its workers are moved off. */
  hostDraining?: (hostId: string) => boolean
  /** Whether every host a driver serves is DOWN: then it is not even asked for its list. */
  driverDown?: (driver: RuntimeDriver) => boolean
  /**
   * Told of each scale-up (`count` new workers, `reason` the endpoint's scaler type) and each
   * worker stopped (`reason` one of SCALE_DOWN_REASONS), for the metrics.
   */
  onScale?: (direction: 'up' | 'down', reason: string, count: number) => void
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
  version: number
  status: WorkerStatus
  takesJobs: boolean
}

/**
 * The worker autoscaler (docs/serverless-workers.md): one reconcile loop that runs every
 * endpoint's workers. Each tick it observes the workers (started, asking for jobs, holding jobs,
 * crashed, silent), asks the pure `decideScaling` what to change, places and launches new
 * workers like pods are placed (worker-launch.ts), and stops the ones to go, never one that
 * holds a job. It also answers the job service's questions about workers (WorkerRoster).
 */
export class WorkerAutoscaler implements WorkerRoster, WorkerObserver {
  private readonly settings: WorkerAutoscalerSettings
  private readonly failures: WorkerFailures
  /** Between start() and stop(): this replica runs the loop. */
  private readonly loop: ReconcileLoop
  /** On a replica that does not lead: the roster read from the store (follow()). */
  private readonly following: ReconcileLoop
  /** Set by stop(): a pass under way ends early. */
  private stopped = false
  /**
   * When this loop started. Presence lives in memory, so a restarted server has heard nothing
   * from the workers it adopts: their silence is counted from here, not from before the restart.
   */
  private startedAtMs = 0
  private readonly idleSince = new Map<string, number>()
  /** Workers being stopped: they take no job, whatever the last tick saw. */
  private readonly stopping = new Set<string>()
  /**
   * Managed workers that are gone for good (UNHEALTHY, STOPPED, lost with their host): they take
   * no job, whatever they still send. A lost host's worker may run on and call, and must not be
   * mistaken for a worker that connects by itself.
   */
  private retired = new Set<string>()
  private seen = new Map<string, Seen>()
  /** Each endpoint's newest version as its updates said (drainOlderVersions). */
  private readonly newestVersion = new Map<string, number>()
  /**
   * The running jobs the store has leased to each worker, as of this tick: a worker holding one
   * is RUNNING whatever its last heartbeat said (a late first ping names no job).
   */
  private held = new Map<string, number>()
  /** The reasons last logged per endpoint, so a steady state is not logged every tick. */
  private readonly lastLogged = new Map<string, string>()

  constructor(private readonly deps: WorkerAutoscalerDeps) {
    const given = Object.entries(deps.settings ?? {}).filter(([, value]) => value !== undefined)
    this.settings = { ...DEFAULT_AUTOSCALER_SETTINGS, ...Object.fromEntries(given) }
    this.failures = new WorkerFailures({
      backoffs: deps.startBackoffs,
      workers: deps.workers,
      clock: deps.clock,
      logger: deps.logger,
      limits: { initialMs: this.settings.startBackoffMs, maxMs: this.settings.startBackoffMaxMs },
    })
    this.loop = new ReconcileLoop({
      pass: () => this.reconcile(),
      intervalMs: this.settings.intervalMs,
      minGapMs: WAKE_MIN_SPACING_MS,
      onError: (error) => deps.logger.error({ err: error }, 'autoscaler failed'),
    })
    this.following = new ReconcileLoop({
      pass: () => this.refreshRoster(),
      intervalMs: this.settings.intervalMs,
      onError: (error) =>
        deps.logger.error({ err: error }, 'reading the workers of the leader failed'),
    })
  }

  start(): void {
    this.stopped = false
    this.startedAtMs = this.deps.clock.now().getTime()
    this.loop.start({ immediate: true })
  }

  /**
   * A pass now (or right after the one in progress) rather than at the next interval: a host
   * started draining. Only where the loop runs (the leader); elsewhere the leader's pass sees
   * the host's schedule in the store.
   */
  nudge(): void {
    this.loop.wakeIn(0)
  }

  /**
   * A job was queued on the endpoint (docs/serverless-workers.md, "Scaling"): when none of its
   * workers takes jobs or waits for a host, the loop runs now rather than at its next tick, so
   * that a cold start from zero workers begins at once (passes at most every
   * WAKE_MIN_SPACING_MS). With a worker that takes jobs, the next tick decides whether to add
   * one beside it.
   */
  jobQueued(endpointId: string): void {
    if (!this.loop.running) return
    for (const seen of this.seen.values()) {
      // One that takes jobs runs it; a throttled one waits for room, which a pass cannot make.
      if (seen.endpointId === endpointId && (seen.takesJobs || seen.status === 'THROTTLED')) return
    }
    this.loop.nudge()
  }

  /** Stops the loop; workers keep running (a restarted server adopts them). */
  async stop(): Promise<void> {
    this.stopped = true
    await this.loop.stop()
  }

  /**
   * On a replica that does not lead (docs/production.md, "Several replicas"): keeps what the
   * job service asks (takesJobs, counts, statusOf, startBackoff) current from the stored workers,
   * jobs and backoffs every interval, starting and stopping nothing.
   */
  follow(): void {
    this.following.start({ immediate: true })
  }

  async unfollow(): Promise<void> {
    await this.following.stop()
  }

  /** The roster from the stored workers, jobs and backoffs and the shared presence, without acting. */
  async refreshRoster(): Promise<void> {
    const endpoints = new Map((await this.deps.endpoints.listAll()).map((e) => [e.id, e]))
    const all = await this.deps.workers.listAll()
    this.retired = retiredOf(all)
    const live = all.filter((w) => endpoints.has(w.endpointId) && w.phase !== 'STOPPED')
    const held = new Map<string, number>()
    const byEndpoint = new Map<string, ManagedWorker[]>()
    for (const worker of live) {
      byEndpoint.set(worker.endpointId, [...(byEndpoint.get(worker.endpointId) ?? []), worker])
    }
    for (const endpointId of byEndpoint.keys()) {
      for (const [id, n] of (await this.deps.queue.scalingStats(endpointId)).heldByWorker) {
        held.set(id, n)
      }
    }
    this.held = held
    await this.failures.refresh()
    const seen = new Map<string, Seen>()
    for (const [endpointId, workers] of byEndpoint) {
      for (const [id, one] of this.rosterOf(endpoints.get(endpointId)!, workers)) seen.set(id, one)
    }
    this.seen = seen
  }

  /**
   * What the job service is told of an endpoint's workers. A worker leaving a draining host
   * keeps taking jobs until its replacement is placed (its record then says it is moving off),
   * and none afterwards, so that it becomes free and can go.
   */
  private rosterOf(endpoint: Endpoint, workers: readonly ManagedWorker[]): Map<string, Seen> {
    const out = new Map<string, Seen>()
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

  /** Why the worker is moved off its host (the host drains), or null. */
  private leavingReason(worker: ManagedWorker): string | null {
    if (worker.hostId === null || (worker.phase !== 'STARTING' && worker.phase !== 'READY'))
      return null
    return this.deps.hostDraining?.(worker.hostId) ? `its host ${worker.hostId} is draining` : null
  }

  /**
   * An endpoint has a new version: its older workers take no job from now on, and their long
   * polls end (a job waiting for one would be handed to it), without waiting for the next tick;
   * its crash-loop backoff, earned by the older version, ends.
   * Replicas that follow learn it on their next pass (the gap of docs/serverless-workers.md).
   */
  async drainOlderVersions(endpoint: Pick<Endpoint, 'id' | 'version'>): Promise<void> {
    // Kept apart from `seen`: a tick that read the endpoint before the update would put it back.
    const known = this.newestVersion.get(endpoint.id) ?? 0
    this.newestVersion.set(endpoint.id, Math.max(known, endpoint.version))
    const older = [...this.seen].filter(
      ([, seen]) => seen.endpointId === endpoint.id && seen.version < endpoint.version,
    )
    await Promise.all(older.map(([workerId]) => this.deps.endPolls?.(endpoint.id, workerId)))
    await this.failures.versionChanged(endpoint.id, endpoint.version)
  }

  // ---- WorkerRoster ----

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

  async startBackoff(endpointId: string): Promise<StartBackoffView | null> {
    const backoff = this.failures.backoffOf(endpointId)
    if (!backoff) return null
    return startBackoffView(backoff, await this.failures.lastLines(backoff.lastFailure.workerId))
  }

  /** The status the workers list shows. */
  statusOf(worker: ManagedWorker): WorkerStatus {
    return this.seen.get(worker.id)?.status ?? this.observedStatus(worker)
  }

  /** A failed or stopped worker's kept lines (its workload is gone), else what its driver has. */
  async readLogs(worker: ManagedWorker, query: LogQuery): Promise<LogLine[]> {
    // Its workload is gone (or on a lost host, which may not answer): only the kept lines.
    if (RETIRED_WORKER_PHASES.includes(worker.phase)) {
      return (await this.failures.readKept(worker, query)) ?? []
    }
    if (worker.hostId === null) return []
    return this.deps.driverFor(worker.hostId).readLogs(worker.id, query)
  }

  async *followLogs(
    worker: ManagedWorker,
    afterSeq: number,
    signal: AbortSignal,
  ): AsyncIterable<LogLine> {
    // Followed from its launch: a worker waiting for a host (THROTTLED) has no workload yet.
    const launched = await untilLaunched(
      worker,
      () => this.deps.workers.get(worker.id),
      (current) => current.phase === 'PENDING' || current.hostId === null,
      signal,
    )
    // A failed or stopped worker writes nothing more: its stream ends after the kept lines.
    if (!launched || launched.hostId === null || RETIRED_WORKER_PHASES.includes(launched.phase))
      return
    yield* this.deps.driverFor(launched.hostId).followLogs(launched.id, afterSeq, signal)
  }

  // ---- the loop ----

  async reconcile(): Promise<void> {
    const endpoints = new Map((await this.deps.endpoints.listAll()).map((e) => [e.id, e]))
    const { workloads, unlisted } = await listWorkerWorkloads(
      this.deps.drivers,
      this.deps.logger,
      this.deps.driverDown,
    )
    const nowMs = this.deps.clock.now().getTime()
    const all = await this.deps.workers.listAll()
    this.retired = retiredOf(all)
    const rows: ManagedWorker[] = []
    for (const worker of all) {
      if (worker.phase !== 'STOPPED') rows.push(worker)
      else if (nowMs - Date.parse(worker.phaseChangedAt) > STOPPED_WORKER_RETENTION_MS) {
        await this.deps.workers.delete(worker.id)
      }
    }
    await removeStrayWorkloads(rows, workloads, this.deps.logger)
    await this.failures.refresh()

    const next = new Map<string, Seen>()
    // Filled endpoint by endpoint (reconcileEndpoint): a worker gone since holds nothing.
    this.held = new Map()
    const byEndpoint = new Map<string, ManagedWorker[]>()
    for (const worker of rows) {
      if (!endpoints.has(worker.endpointId)) {
        // Its jobs went with the endpoint: nothing it holds is lost.
        await this.remove(worker, 'its endpoint was deleted').catch((error: unknown) =>
          this.deps.logger.error(
            { err: error, workerId: worker.id },
            'stopping a worker of a deleted endpoint failed; tried again next pass',
          ),
        )
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
          unlisted,
        )
        for (const [id, seen] of this.rosterOf(endpoint, current)) next.set(id, seen)
      } catch (error) {
        this.deps.logger.error({ err: error, endpointId: endpoint.id }, 'autoscaling failed')
      }
    }
    this.seen = next
  }

  private holds(worker: ManagedWorker): boolean {
    if ((this.held.get(worker.id) ?? 0) > 0) return true
    const record = this.deps.presence.find(worker.endpointId, worker.id)
    return record !== undefined && record.jobIds.size > 0
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
      case 'READY':
        return this.holds(worker) ? 'RUNNING' : 'IDLE'
    }
  }

  /** One endpoint: observe, decide, act. Returns its workers after the tick. */
  private async reconcileEndpoint(
    endpoint: Endpoint,
    workers: ManagedWorker[],
    workloads: ReadonlyMap<string, ListedWorkload>,
    unlisted: ReadonlySet<RuntimeDriver>,
  ): Promise<ManagedWorker[]> {
    // What the store says each worker holds, for observing and deciding below.
    const stats = await this.deps.queue.scalingStats(endpoint.id)
    for (const [id, n] of stats.heldByWorker) this.held.set(id, n)
    const nowMs = this.deps.clock.now().getTime()
    const observed: ManagedWorker[] = []
    for (const worker of workers) {
      const down = worker.hostId === null ? undefined : this.deps.hostDown?.(worker.hostId)
      if (down && (worker.phase === 'STARTING' || worker.phase === 'READY')) {
        observed.push(await this.hostLost(worker, down))
        continue
      }
      // A host that does not list its workloads now: the worker's is unknown, not gone.
      const listed = worker.hostId === null || !unlisted.has(this.deps.driverFor(worker.hostId))
      const next = await this.observe(worker, workloads.get(worker.id)?.state, nowMs, listed)
      if (next) observed.push(next)
    }
    const current = await this.retireUnhealthy(observed)
    if (await this.deps.billing?.outOfCredits(endpoint.accountId)) {
      return this.drainForCredits(endpoint, current)
    }

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
        leaving: this.leavingReason(worker),
      }
    })
    const backoff = this.failures.backoffOf(endpoint.id)
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
      backoff: backoff && {
        untilMs: Date.parse(backoff.nextStartAt),
        why: `${backoff.failures} worker(s) failed in a row, the last ${backoff.lastFailure.workerId}: ${backoff.lastFailure.reason}; next start at ${backoff.nextStartAt}`,
      },
    })
    this.logDecision(endpoint, decision)

    const marked: ManagedWorker[] = []
    for (const worker of current) {
      marked.push(await this.markMovingOff(worker, decision.replaced.includes(worker.id)))
    }
    const stopped = new Set<string>()
    await Promise.all(
      decision.stop.map(async ({ workerId, reason }) => {
        const worker = marked.find((w) => w.id === workerId)
        if (worker && (await this.stopIfFree(worker, reason))) stopped.add(workerId)
      }),
    )
    const kept = marked.filter((w) => !stopped.has(w.id))
    if (decision.start > 0) {
      this.deps.onScale?.('up', endpoint.scaling.type.toLowerCase(), decision.start)
    }
    for (let i = 0; i < decision.start; i++) {
      const worker = this.newWorker(endpoint)
      await this.deps.workers.insert(worker)
      await this.event(worker, `wanted for endpoint version ${worker.version}`)
      kept.push(worker)
    }
    // A throttled worker waits out the backoff too: launching it would be a start.
    const launching = mayStart(backoff, nowMs)
    const out: ManagedWorker[] = []
    for (const worker of kept) {
      out.push(
        worker.phase === 'PENDING' && launching ? await this.launch(endpoint, worker) : worker,
      )
    }
    return out
  }

  /**
   * A worker leaving a draining host whose replacement is placed takes no new job: its record
   * says so (`reason`), so that every replica's roster agrees; an uncordon takes it back.
   */
  private async markMovingOff(worker: ManagedWorker, replaced: boolean): Promise<ManagedWorker> {
    const reason = replaced
      ? `moving off host ${worker.hostId} (draining): replaced elsewhere, stopped once its jobs are done`
      : isMovingOff(worker) && this.leavingReason(worker) === null
        ? null
        : worker.reason
    if (reason === worker.reason) return worker
    const next = { ...worker, reason }
    await this.deps.workers.update(next)
    if (reason) await this.event(next, reason)
    return next
  }

  /**
   * Past MAX_LISTED_UNHEALTHY_WORKERS, the endpoint's oldest UNHEALTHY workers stop being listed
   * before their retention ends (STOPPED, as the meter needs).
   */
  private async retireUnhealthy(workers: ManagedWorker[]): Promise<ManagedWorker[]> {
    const unhealthy = workers
      .filter((w) => w.phase === 'UNHEALTHY')
      .sort((a, b) => Date.parse(b.phaseChangedAt) - Date.parse(a.phaseChangedAt))
    const retired = new Set(unhealthy.slice(MAX_LISTED_UNHEALTHY_WORKERS).map((w) => w.id))
    for (const worker of workers) if (retired.has(worker.id)) await this.unlist(worker)
    return workers.filter((w) => !retired.has(w.id))
  }

  /**
   * An UNHEALTHY worker leaves the list: STOPPED since it became UNHEALTHY. Its kept lines stay
   * readable through its logs route until its record goes (STOPPED_WORKER_RETENTION_MS).
   */
  private async unlist(worker: ManagedWorker): Promise<void> {
    // The meter charges it up to phaseChangedAt, when it became UNHEALTHY and was removed.
    await this.deps.workers.update({ ...worker, phase: 'STOPPED' })
    this.idleSince.delete(worker.id)
  }

  /** Out of credits: no new worker; the ones without a job stop, the others after their job. */
  private async drainForCredits(
    endpoint: Endpoint,
    current: ManagedWorker[],
  ): Promise<ManagedWorker[]> {
    const kept: ManagedWorker[] = []
    for (const worker of current) {
      const status = this.observedStatus(worker)
      const free = status !== 'RUNNING' && status !== 'UNHEALTHY'
      if (
        !free ||
        !(await this.stopIfFree(worker, 'the account is out of credits (balance at or below zero)'))
      ) {
        kept.push(worker)
      }
    }
    if (kept.length < current.length)
      this.logDecision(endpoint, {
        start: 0,
        stop: [],
        replaced: [],
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
   * Moves the worker on by what its workload, its calls and the jobs it holds say; undefined
   * when it is gone (an UNHEALTHY worker past its retention).
   */
  private async observe(
    worker: ManagedWorker,
    workload: WorkloadState | undefined,
    nowMs: number,
    listed = true,
  ): Promise<ManagedWorker | undefined> {
    const sinceMs = nowMs - Date.parse(worker.phaseChangedAt)
    if (worker.phase === 'UNHEALTHY') {
      if (sinceMs < this.settings.unhealthyRetentionMs) return worker
      await this.unlist(worker)
      return undefined
    }
    if (worker.phase === 'PENDING') return worker
    // Killed for its memory limit: its jobs would be on another attempt too, so they fail
    // with the reason rather than go back to the queue.
    const outOfMemory =
      workload?.outOfMemory && workload.exitCode !== 0
        ? outOfMemoryReason('worker', worker.memoryGb)
        : undefined
    const exited = (what: string) =>
      workload === undefined
        ? `its workload is gone ${what}`
        : outOfMemory
          ? `${outOfMemory} ${what}`
          : `exited with code ${exitCodeOf(workload.exitCode)} ${what}`
    const record = this.deps.presence.find(worker.endpointId, worker.id)
    if (worker.phase === 'STARTING') {
      if (
        (record && record.lastSeenAt >= Date.parse(worker.phaseChangedAt)) ||
        this.holds(worker)
      ) {
        // It asked for a job: a healthy start, which ends the endpoint's crash-loop backoff.
        await this.failures.startedHealthy(worker.endpointId)
        return this.setPhase(worker, 'READY', null)
      }
      if (listed && (workload === undefined || workload.phase === 'exited')) {
        return this.unhealthy(worker, exited('before asking for a job'), outOfMemory)
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
    if (listed && (workload === undefined || workload.phase === 'exited')) {
      return this.unhealthy(worker, exited('while ready'), outOfMemory)
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
    const next = this.withPhase(worker, phase, reason)
    await this.deps.workers.update(next)
    return this.phaseWritten(next)
  }

  private withPhase(
    worker: ManagedWorker,
    phase: ManagedWorker['phase'],
    reason: string | null,
  ): ManagedWorker {
    return { ...worker, phase, reason, phaseChangedAt: this.deps.clock.now().toISOString() }
  }

  /** The worker's new phase is stored: remembered here and written to its system log. */
  private async phaseWritten(next: ManagedWorker): Promise<ManagedWorker> {
    if (RETIRED_WORKER_PHASES.includes(next.phase)) this.retired.add(next.id)
    await this.event(next, next.reason ? `${next.phase}: ${next.reason}` : next.phase)
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

  /**
   * Its jobs go back to the queue (or fail after MAX_JOB_ATTEMPTS; with `jobError`, fail at
   * once with it); its last lines are kept and the endpoint backs off (worker-failures.ts); its
   * workload is removed.
   */
  private async unhealthy(
    worker: ManagedWorker,
    reason: string,
    jobError?: string,
  ): Promise<ManagedWorker> {
    await this.failures.failed(
      worker,
      reason,
      worker.hostId === null ? undefined : this.deps.driverFor(worker.hostId),
    )
    // Gone first, then its jobs go back to the queue: a worker that only went silent may still
    // be running them, and a job must never run on two workers at once.
    await this.release(worker, 0)
    const released =
      jobError === undefined
        ? await this.deps.queue.releaseWorker(worker.endpointId, worker.id)
        : (await this.deps.queue.failWorkerJobs(worker.endpointId, worker.id, jobError)).ended
            .length
    this.deps.logger.warn(
      { endpointId: worker.endpointId, workerId: worker.id, reason, releasedJobs: released },
      'worker unhealthy; replaced it',
    )
    this.deps.presence.forget(worker.endpointId, worker.id)
    this.idleSince.delete(worker.id)
    return this.setPhase(worker, 'UNHEALTHY', reason)
  }

  /**
   * The worker's host is DOWN: the worker cannot be stopped nor asked anything, and may still run
   * there (an engine can die while its containers live on). It is UNHEALTHY at once, naming the
   * host, and replaced elsewhere without a crash-loop backoff (the endpoint did nothing wrong).
   * Its long polls end, then, in one transaction, it is stored UNHEALTHY and its jobs go back to
   * the queue, now, not after their leases, fenced: whatever it still sends (a result, a
   * heartbeat) names jobs no longer its own and is refused, and it takes nothing more, on any
   * replica (a take reads its stored phase with the queue; before it did, a replica whose view
   * of the workers lagged handed it back the job just requeued). Its workload is removed when
   * the host answers again.
   */
  private async hostLost(
    worker: ManagedWorker,
    down: { since: string; reason: string | null },
  ): Promise<ManagedWorker> {
    const reason = hostLostReason(worker.hostId!, down.since, down.reason)
    this.retired.add(worker.id)
    await this.deps.endPolls?.(worker.endpointId, worker.id)
    const next = this.withPhase(worker, 'UNHEALTHY', reason)
    const jobs = await this.deps.queue.requeueWorkerJobs(worker.endpointId, worker.id, {
      phase: 'UNHEALTHY',
      reason,
      changedAt: next.phaseChangedAt,
    })
    await this.deps.allocations.remove('worker', worker.id)
    this.deps.presence.forget(worker.endpointId, worker.id)
    this.idleSince.delete(worker.id)
    this.deps.logger.warn(
      { endpointId: worker.endpointId, workerId: worker.id, reason, ...jobs },
      'worker lost with its host; its jobs are back in the queue and it is replaced elsewhere',
    )
    return this.phaseWritten(next)
  }

  /**
   * Stops a worker the scaler, a stale version or key, a recycle or the credits let go, only
   * once it holds nothing: it takes no new job from now on, its long polls here are ended (a
   * job one of them was taking is then in the store), and the store is asked again. True when
   * it was stopped; false when it holds a job after all (it stays, and is stopped when free).
   */
  private async stopIfFree(worker: ManagedWorker, reason: string): Promise<boolean> {
    this.stopping.add(worker.id)
    try {
      await this.deps.endPolls?.(worker.endpointId, worker.id)
      const held = (await this.deps.queue.scalingStats(worker.endpointId)).heldByWorker.get(
        worker.id,
      )
      if (held !== undefined) {
        this.held.set(worker.id, held)
        this.deps.logger.info(
          { endpointId: worker.endpointId, workerId: worker.id, reason, heldJobs: held },
          'not stopping a worker that holds a job; it is stopped once free',
        )
        return false
      }
      await this.remove(worker, reason)
      this.deps.onScale?.('down', scaleDownReason(reason), 1)
      return true
    } finally {
      this.stopping.delete(worker.id)
    }
  }

  /** Stops and forgets a worker: workload, allocation, record. */
  private async remove(worker: ManagedWorker, reason: string): Promise<void> {
    this.deps.logger.info(
      { endpointId: worker.endpointId, workerId: worker.id, reason },
      'stopping worker',
    )
    await this.release(worker, this.settings.stopGraceMs)
    // A job it still held (its endpoint was deleted, or another replica handed it one as it
    // was stopped) is not lost.
    await this.deps.queue.releaseWorker(worker.endpointId, worker.id)
    // A launched worker is kept, STOPPED, until the meter has charged it up to now.
    if (worker.startedAt === null) await this.deps.workers.delete(worker.id)
    else {
      await this.setPhase(worker, 'STOPPED', reason)
      // A failed worker of a deleted endpoint: its kept lines are no longer readable.
      if (worker.phase === 'UNHEALTHY') await this.failures.forgetLog(worker.id)
    }
    this.deps.presence.forget(worker.endpointId, worker.id)
    this.idleSince.delete(worker.id)
  }

  /** Stops and removes its workload (but on a DOWN host: later, stray), then frees its place. */
  private async release(worker: ManagedWorker, graceMs: number): Promise<void> {
    if (worker.hostId !== null && !this.deps.hostDown?.(worker.hostId)) {
      const driver = this.deps.driverFor(worker.hostId)
      const wasStopping = this.stopping.has(worker.id)
      this.stopping.add(worker.id)
      const stopped = driver.stop(worker.id, { graceMs })
      // A worker loop that got SIGTERM (runpod-python) waits for its open long polls before it
      // exits: end them once it has the signal, so that it need not be killed after the grace.
      const timer = setTimeout(() => void this.deps.endPolls?.(worker.endpointId, worker.id), 200)
      try {
        await stopped
      } finally {
        clearTimeout(timer)
        if (!wasStopping) this.stopping.delete(worker.id)
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
    const outcome = await launchWorker(this.deps, this.settings.pingIntervalMs, endpoint, worker)
    if (outcome.kind === 'throttled') return this.throttled(endpoint, worker, outcome.reason)
    if (outcome.kind === 'failed') return this.unhealthy(outcome.worker, outcome.reason)
    return outcome.worker
  }
}

/** The managed workers that are gone for good and must never take a job again. */
function retiredOf(workers: readonly ManagedWorker[]): Set<string> {
  return new Set(workers.filter((w) => RETIRED_WORKER_PHASES.includes(w.phase)).map((w) => w.id))
}

/** The worker leaves a draining host and its replacement is placed (markMovingOff). */
function isMovingOff(worker: ManagedWorker): boolean {
  return worker.phase === 'READY' || worker.phase === 'STARTING'
    ? (worker.reason?.startsWith('moving off host ') ?? false)
    : false
}

/**
 * An exit code as a reason says it; the shell's own codes with what they mean, the usual
 * first mistakes (a command or interpreter the worker's environment does not have).
 */
function exitCodeOf(code: number | null | undefined): string {
  if (code === null || code === undefined) return 'none (killed)'
  if (code === 127) return '127 (command not found)'
  if (code === 126) return '126 (command not executable)'
  return String(code)
}
