import type { ManagedWorker } from '../domain/serverless/worker.js'
import type { WorkerPresence } from '../domain/serverless/worker-presence.js'
import type { WorkloadState } from '../runtime/driver.js'
import { outOfMemoryReason } from './out-of-memory.js'
import type { WorkerActions } from './worker-actions.js'
import type { WorkerAutoscalerSettings } from './worker-autoscaler-config.js'
import type { WorkerFailures } from './worker-failures.js'
import type { WorkerRosterView } from './worker-roster-view.js'

export interface WorkerObservationDeps {
  actions: WorkerActions
  roster: WorkerRosterView
  presence: WorkerPresence
  failures: WorkerFailures
  settings: Pick<
    WorkerAutoscalerSettings,
    'unhealthyRetentionMs' | 'startTimeoutMs' | 'heartbeatTimeoutMs'
  >
}

/** What a pass saw of one worker beside its record. */
export interface PassObservation {
  /** Its workload as its host listed it; undefined when not listed. */
  workload: WorkloadState | undefined
  /** False when its host did not list its workloads now: the workload is unknown, not gone. */
  listed: boolean
  nowMs: number
  /**
   * When the loop started. Presence lives in memory, so a restarted server has heard nothing
   * from the workers it adopts: their silence is counted from here, not from before the restart.
   */
  loopStartedAtMs: number
}

/**
 * Moves the worker on by what its workload, its calls and the jobs it holds say: STARTING to
 * READY once it asks for a job, to UNHEALTHY when it exits, fails its fitness check, starts too
 * slowly or goes silent; undefined when it is gone (an UNHEALTHY worker past its retention).
 */
export async function observeWorker(
  deps: WorkerObservationDeps,
  worker: ManagedWorker,
  { workload, listed, nowMs, loopStartedAtMs }: PassObservation,
): Promise<ManagedWorker | undefined> {
  const { actions, settings } = deps
  const sinceMs = nowMs - Date.parse(worker.phaseChangedAt)
  if (worker.phase === 'UNHEALTHY') {
    if (sinceMs < settings.unhealthyRetentionMs) return worker
    await actions.unlist(worker)
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
  const record = deps.presence.find(worker.endpointId, worker.id)
  if (worker.phase === 'STARTING') {
    if (
      (record && record.lastSeenAt >= Date.parse(worker.phaseChangedAt)) ||
      deps.roster.holds(worker)
    ) {
      // It asked for a job: a healthy start, which ends the endpoint's crash-loop backoff.
      await deps.failures.startedHealthy(worker.endpointId)
      return actions.setPhase(worker, 'READY', null)
    }
    if (listed && (workload === undefined || workload.phase === 'exited')) {
      return actions.unhealthy(worker, exited('before asking for a job'), outOfMemory)
    }
    if (sinceMs > settings.startTimeoutMs) {
      return actions.unhealthy(
        worker,
        `did not ask for a job within ${settings.startTimeoutMs / 1000} s of starting`,
      )
    }
    return worker
  }
  // READY
  if (listed && (workload === undefined || workload.phase === 'exited')) {
    return actions.unhealthy(worker, exited('while ready'), outOfMemory)
  }
  if (record?.unhealthy) {
    return actions.unhealthy(
      worker,
      `failed its fitness check ${record.unhealthy.check}: ${record.unhealthy.reason}`,
    )
  }
  const lastSeenAt = record?.lastSeenAt ?? 0
  if (
    nowMs - Math.max(lastSeenAt, Date.parse(worker.phaseChangedAt), loopStartedAtMs) >
    settings.heartbeatTimeoutMs
  ) {
    return actions.unhealthy(
      worker,
      `missed its heartbeats for more than ${settings.heartbeatTimeoutMs / 1000} s`,
    )
  }
  return worker
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
