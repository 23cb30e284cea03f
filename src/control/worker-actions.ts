import { hostLostReason } from '../domain/hosts/host-state.js'
import type { Endpoint } from '../domain/serverless/endpoint.js'
import {
  MAX_LISTED_UNHEALTHY_WORKERS,
  RETIRED_WORKER_PHASES,
  type ManagedWorker,
} from '../domain/serverless/worker.js'
import { newId } from '../shared/ids.js'
import {
  scaleDownReason,
  type WorkerAutoscalerDeps,
  type WorkerAutoscalerSettings,
} from './worker-autoscaler-config.js'
import type { WorkerFailures } from './worker-failures.js'
import { observeSweptJobs } from './swept-jobs.js'
import { launchWorker } from './worker-launch.js'
import { isMovingOff, type WorkerRosterView } from './worker-roster-view.js'

/**
 * What the autoscaler does to a managed worker once a pass has decided: add, launch, mark,
 * stop, declare it UNHEALTHY or lost with its host. Each change is stored, written to the
 * worker's system log and reflected in the roster, so that the job service stops handing a
 * worker jobs the moment it is on its way out.
 */
export class WorkerActions {
  constructor(
    private readonly deps: WorkerAutoscalerDeps,
    private readonly settings: WorkerAutoscalerSettings,
    private readonly failures: WorkerFailures,
    private readonly roster: WorkerRosterView,
  ) {}

  /** A new PENDING worker of the endpoint, stored; the pass launches it when it may. */
  async add(endpoint: Endpoint): Promise<ManagedWorker> {
    const now = this.deps.clock.now().toISOString()
    const worker: ManagedWorker = {
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
    await this.deps.workers.insert(worker)
    await this.event(worker, `wanted for endpoint version ${worker.version}`)
    return worker
  }

  async setPhase(
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
    if (RETIRED_WORKER_PHASES.includes(next.phase)) this.roster.retire(next.id)
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
   * A worker leaving a draining host whose replacement is placed takes no new job: its record
   * says so (`reason`), so that every replica's roster agrees; an uncordon takes it back.
   */
  async markMovingOff(worker: ManagedWorker, replaced: boolean): Promise<ManagedWorker> {
    const reason = replaced
      ? `moving off host ${worker.hostId} (draining): replaced elsewhere, stopped once its jobs are done`
      : isMovingOff(worker) && this.roster.leavingReason(worker) === null
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
  async retireUnhealthy(workers: ManagedWorker[]): Promise<ManagedWorker[]> {
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
  async unlist(worker: ManagedWorker): Promise<void> {
    // The meter charges it up to phaseChangedAt, when it became UNHEALTHY and was removed.
    await this.deps.workers.update({ ...worker, phase: 'STOPPED' })
    this.roster.forgetIdle(worker.id)
  }

  /**
   * Its jobs go back to the queue (or fail after MAX_JOB_ATTEMPTS; with `jobError`, fail at
   * once with it); its last lines are kept and the endpoint backs off (worker-failures.ts); its
   * workload is removed.
   */
  async unhealthy(
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
    let released: number
    if (jobError === undefined) {
      released = await this.deps.queue.releaseWorker(worker.endpointId, worker.id)
    } else {
      const swept = await this.deps.queue.failWorkerJobs(worker.endpointId, worker.id, jobError)
      observeSweptJobs(this.deps.sweptJobs ?? {}, swept, this.deps.clock.now().getTime())
      released = swept.ended.length
    }
    this.deps.logger.warn(
      { endpointId: worker.endpointId, workerId: worker.id, reason, releasedJobs: released },
      'worker unhealthy; replaced it',
    )
    this.deps.presence.forget(worker.endpointId, worker.id)
    this.roster.forgetIdle(worker.id)
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
  async hostLost(
    worker: ManagedWorker,
    down: { since: string; reason: string | null },
  ): Promise<ManagedWorker> {
    const reason = hostLostReason(worker.hostId!, down.since, down.reason)
    this.roster.retire(worker.id)
    await this.deps.endPolls?.(worker.endpointId, worker.id)
    const next = this.withPhase(worker, 'UNHEALTHY', reason)
    const jobs = await this.deps.queue.requeueWorkerJobs(worker.endpointId, worker.id, {
      phase: 'UNHEALTHY',
      reason,
      changedAt: next.phaseChangedAt,
    })
    observeSweptJobs(this.deps.sweptJobs ?? {}, jobs, this.deps.clock.now().getTime())
    await this.deps.allocations.remove('worker', worker.id)
    this.deps.presence.forget(worker.endpointId, worker.id)
    this.roster.forgetIdle(worker.id)
    this.deps.logger.warn(
      {
        endpointId: worker.endpointId,
        workerId: worker.id,
        reason,
        requeued: jobs.requeued,
        ended: jobs.ended.map((job) => job.id),
      },
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
  async stopIfFree(worker: ManagedWorker, reason: string): Promise<boolean> {
    this.roster.beginStopping(worker.id)
    try {
      await this.deps.endPolls?.(worker.endpointId, worker.id)
      const held = (await this.deps.queue.scalingStats(worker.endpointId)).heldByWorker.get(
        worker.id,
      )
      if (held !== undefined) {
        this.roster.noteHeld(worker.id, held)
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
      this.roster.endStopping(worker.id)
    }
  }

  /** Stops and forgets a worker: workload, allocation, record. */
  async remove(worker: ManagedWorker, reason: string): Promise<void> {
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
    this.roster.forgetIdle(worker.id)
  }

  /** Stops and removes its workload (but on a DOWN host: later, stray), then frees its place. */
  private async release(worker: ManagedWorker, graceMs: number): Promise<void> {
    if (worker.hostId !== null && !this.deps.hostDown?.(worker.hostId)) {
      const driver = this.deps.driverFor(worker.hostId)
      const wasStopping = this.roster.isStopping(worker.id)
      this.roster.beginStopping(worker.id)
      const stopped = driver.stop(worker.id, { graceMs })
      // A worker loop that got SIGTERM (runpod-python) waits for its open long polls before it
      // exits: end them once it has the signal, so that it need not be killed after the grace.
      const timer = setTimeout(() => void this.deps.endPolls?.(worker.endpointId, worker.id), 200)
      try {
        await stopped
      } finally {
        clearTimeout(timer)
        if (!wasStopping) this.roster.endStopping(worker.id)
      }
      await driver.remove(worker.id)
    }
    await this.deps.allocations.remove('worker', worker.id)
  }

  /** Places a PENDING worker and starts its workload; it stays PENDING (THROTTLED) without room. */
  async launch(endpoint: Endpoint, worker: ManagedWorker): Promise<ManagedWorker> {
    const outcome = await launchWorker(this.deps, this.settings.pingIntervalMs, endpoint, worker)
    if (outcome.kind === 'throttled') return this.throttled(endpoint, worker, outcome.reason)
    if (outcome.kind === 'failed') return this.unhealthy(outcome.worker, outcome.reason)
    return outcome.worker
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
}
