import { decideScaling, type ScalingWorker } from '../domain/serverless/autoscaler.js'
import type { Endpoint } from '../domain/serverless/endpoint.js'
import type { ScalingStats } from '../domain/serverless/ports.js'
import {
  mayStart,
  startBackoffView,
  type StartBackoffView,
} from '../domain/serverless/start-backoff.js'
import {
  STOPPED_WORKER_RETENTION_MS,
  type ManagedWorker,
  type WorkerRoster,
  type WorkerStatus,
} from '../domain/serverless/worker.js'
import type { WorkerObserver } from '../domain/serverless/worker-service.js'
import type { WorkerCounts } from '../domain/serverless/worker-presence.js'
import type { LogLine, LogQuery, RuntimeDriver } from '../runtime/driver.js'
import { ReconcileLoop } from '../shared/reconcile-loop.js'
import { WorkerActions } from './worker-actions.js'
import {
  DEFAULT_AUTOSCALER_SETTINGS,
  WAKE_MIN_SPACING_MS,
  type WorkerAutoscalerDeps,
  type WorkerAutoscalerSettings,
} from './worker-autoscaler-config.js'
import { WorkerFailures } from './worker-failures.js'
import { followWorkerLogs, readWorkerLogs, type WorkerLogSources } from './worker-logs.js'
import { observeWorker, type WorkerObservationDeps } from './worker-observation.js'
import { WorkerRosterView, type SeenWorker } from './worker-roster-view.js'
import {
  listWorkerWorkloads,
  removeStrayWorkloads,
  type ListedWorkload,
} from './worker-workload-listing.js'

export {
  DEFAULT_AUTOSCALER_SETTINGS,
  SCALE_DOWN_REASONS,
  scaleDownReason,
  WAKE_MIN_SPACING_MS,
  type WorkerAutoscalerDeps,
  type WorkerAutoscalerSettings,
} from './worker-autoscaler-config.js'

/** The queue of an endpoint whose jobs are not counted: nothing queued or held (below). */
const NOTHING_HELD: ScalingStats = {
  queued: 0,
  oldestQueuedAt: null,
  inProgress: 0,
  heldByWorker: new Map(),
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

/**
 * The worker autoscaler (docs/serverless-workers.md): one reconcile loop that runs every
 * endpoint's workers. Each tick it observes the workers (started, asking for jobs, holding jobs,
 * crashed, silent: worker-observation.ts), asks the pure `decideScaling` what to change, places
 * and launches new workers like pods are placed (worker-launch.ts), and stops the ones to go,
 * never one that holds a job (worker-actions.ts). It also answers the job service's questions
 * about workers (WorkerRoster) from its read model (worker-roster-view.ts).
 */
export class WorkerAutoscaler implements WorkerRoster, WorkerObserver {
  private readonly settings: WorkerAutoscalerSettings
  private readonly failures: WorkerFailures
  private readonly roster: WorkerRosterView
  private readonly actions: WorkerActions
  private readonly observation: WorkerObservationDeps
  private readonly logSources: WorkerLogSources
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
    this.roster = new WorkerRosterView({ presence: deps.presence, hostDraining: deps.hostDraining })
    this.actions = new WorkerActions(deps, this.settings, this.failures, this.roster)
    this.observation = {
      actions: this.actions,
      roster: this.roster,
      presence: deps.presence,
      failures: this.failures,
      settings: this.settings,
    }
    this.logSources = { workers: deps.workers, driverFor: deps.driverFor, failures: this.failures }
    this.loop = new ReconcileLoop({
      clock: deps.timers,
      pass: () => this.reconcile(),
      intervalMs: this.settings.intervalMs,
      minGapMs: WAKE_MIN_SPACING_MS,
      onError: (error) => deps.logger.error({ err: error }, 'autoscaler failed'),
    })
    this.following = new ReconcileLoop({
      clock: deps.timers,
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
    // One that takes jobs runs it; a throttled one waits for room, which a pass cannot make.
    if (this.roster.hasTakerOrWaiter(endpointId)) return
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
    this.roster.retiredFrom(all)
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
    this.roster.replaceHeld(held)
    await this.failures.refresh()
    this.roster.replaceSeen(
      [...byEndpoint].map(([endpointId, workers]) =>
        this.roster.rosterOf(endpoints.get(endpointId)!, workers),
      ),
    )
  }

  /**
   * An endpoint has a new version: its older workers take no job from now on, and their long
   * polls end (a job waiting for one would be handed to it), without waiting for the next tick;
   * its crash-loop backoff, earned by the older version, ends.
   * Replicas that follow learn it on their next pass (the gap of docs/serverless-workers.md).
   */
  async drainOlderVersions(endpoint: Pick<Endpoint, 'id' | 'version'>): Promise<void> {
    this.roster.noteNewestVersion(endpoint)
    const older = this.roster.olderThan(endpoint.id, endpoint.version)
    await Promise.all(older.map((workerId) => this.deps.endPolls?.(endpoint.id, workerId)))
    await this.failures.versionChanged(endpoint.id, endpoint.version)
  }

  // ---- WorkerRoster ----

  takesJobs(endpointId: string, workerId: string): boolean {
    return this.roster.takesJobs(endpointId, workerId)
  }

  counts(endpointId: string): WorkerCounts {
    return this.roster.counts(endpointId)
  }

  async startBackoff(endpointId: string): Promise<StartBackoffView | null> {
    const backoff = this.failures.backoffOf(endpointId)
    if (!backoff) return null
    return startBackoffView(backoff, await this.failures.lastLines(backoff.lastFailure.workerId))
  }

  /** The status the workers list shows. */
  statusOf(worker: ManagedWorker): WorkerStatus {
    return this.roster.statusOf(worker)
  }

  readLogs(worker: ManagedWorker, query: LogQuery): Promise<LogLine[]> {
    return readWorkerLogs(this.logSources, worker, query)
  }

  followLogs(worker: ManagedWorker, afterSeq: number, signal: AbortSignal): AsyncIterable<LogLine> {
    return followWorkerLogs(this.logSources, worker, afterSeq, signal)
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
    this.roster.retiredFrom(all)
    const rows: ManagedWorker[] = []
    for (const worker of all) {
      if (worker.phase !== 'STOPPED') rows.push(worker)
      else if (nowMs - Date.parse(worker.phaseChangedAt) > STOPPED_WORKER_RETENTION_MS) {
        await this.deps.workers.delete(worker.id)
      }
    }
    await removeStrayWorkloads(rows, workloads, this.deps.logger)
    await this.failures.refresh()

    const next: ReadonlyMap<string, SeenWorker>[] = []
    // Filled endpoint by endpoint (reconcileEndpoint): a worker gone since holds nothing.
    this.roster.replaceHeld()
    const byEndpoint = new Map<string, ManagedWorker[]>()
    for (const worker of rows) {
      if (!endpoints.has(worker.endpointId)) {
        // Its jobs went with the endpoint: nothing it holds is lost.
        await this.actions
          .remove(worker, 'its endpoint was deleted')
          .catch((error: unknown) =>
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
        next.push(this.roster.rosterOf(endpoint, current))
      } catch (error) {
        this.deps.logger.error({ err: error, endpointId: endpoint.id }, 'autoscaling failed')
      }
    }
    this.roster.replaceSeen(next)
  }

  /** One endpoint: observe, decide, act. Returns its workers after the tick. */
  private async reconcileEndpoint(
    endpoint: Endpoint,
    workers: ManagedWorker[],
    workloads: ReadonlyMap<string, ListedWorkload>,
    unlisted: ReadonlySet<RuntimeDriver>,
  ): Promise<ManagedWorker[]> {
    // What the store says each worker holds, for observing and deciding below. An endpoint that
    // may have no worker and has none decides nothing from its queue: its backlog is not
    // counted every second (100 000 queued jobs took 15 ms of each pass, bench/README.md).
    const stats =
      endpoint.workers.max === 0 && workers.length === 0
        ? NOTHING_HELD
        : await this.deps.queue.scalingStats(endpoint.id)
    for (const [id, n] of stats.heldByWorker) this.roster.noteHeld(id, n)
    const nowMs = this.deps.clock.now().getTime()
    const observed: ManagedWorker[] = []
    for (const worker of workers) {
      const down = worker.hostId === null ? undefined : this.deps.hostDown?.(worker.hostId)
      if (down && (worker.phase === 'STARTING' || worker.phase === 'READY')) {
        observed.push(await this.actions.hostLost(worker, down))
        continue
      }
      // A host that does not list its workloads now: the worker's is unknown, not gone.
      const listed = worker.hostId === null || !unlisted.has(this.deps.driverFor(worker.hostId))
      const next = await observeWorker(this.observation, worker, {
        workload: workloads.get(worker.id)?.state,
        listed,
        nowMs,
        loopStartedAtMs: this.startedAtMs,
      })
      if (next) observed.push(next)
    }
    const current = await this.actions.retireUnhealthy(observed)
    if (await this.deps.billing?.outOfCredits(endpoint.accountId)) {
      return this.drainForCredits(endpoint, current)
    }

    const keyGeneration = (await this.deps.workerKeyFor(endpoint.id)).generation
    const staleness = new Map(current.map((w) => [w.id, staleReason(w, endpoint, keyGeneration)]))
    const scaling: ScalingWorker[] = current.map((worker) => {
      const status = this.roster.observedStatus(worker)
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
        idleSinceMs: this.roster.idleSinceMs(worker, status, nowMs),
        recycle: this.deps.presence.find(endpoint.id, worker.id)?.recycle ?? false,
        leaving: this.roster.leavingReason(worker),
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
      marked.push(await this.actions.markMovingOff(worker, decision.replaced.includes(worker.id)))
    }
    const stopped = new Set<string>()
    await Promise.all(
      decision.stop.map(async ({ workerId, reason }) => {
        const worker = marked.find((w) => w.id === workerId)
        if (worker && (await this.actions.stopIfFree(worker, reason))) stopped.add(workerId)
      }),
    )
    const kept = marked.filter((w) => !stopped.has(w.id))
    if (decision.start > 0) {
      this.deps.onScale?.('up', endpoint.scaling.type.toLowerCase(), decision.start)
    }
    for (let i = 0; i < decision.start; i++) {
      kept.push(await this.actions.add(endpoint))
    }
    // A throttled worker waits out the backoff too: launching it would be a start.
    const launching = mayStart(backoff, nowMs)
    const out: ManagedWorker[] = []
    for (const worker of kept) {
      out.push(
        worker.phase === 'PENDING' && launching
          ? await this.actions.launch(endpoint, worker)
          : worker,
      )
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
      const status = this.roster.observedStatus(worker)
      const free = status !== 'RUNNING' && status !== 'UNHEALTHY'
      if (
        !free ||
        !(await this.actions.stopIfFree(
          worker,
          'the account is out of credits (balance at or below zero)',
        ))
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
}
