import type { AllocationRepo } from '../domain/catalog/ports.js'
import type { Endpoint } from '../domain/serverless/endpoint.js'
import type { JobQueue } from '../domain/serverless/ports.js'
import type { StartBackoffRepo } from '../domain/serverless/start-backoff.js'
import type { WorkerPresence } from '../domain/serverless/worker-presence.js'
import type { RuntimeDriver } from '../runtime/driver.js'
import type { SweptJobObservers } from './swept-jobs.js'
import type { WorkerLaunchDeps } from './worker-launch.js'
import type { TimerClock } from '../shared/clock.js'

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
  /** The clock its loop's timers wait on (default: the system clock): a ManualClock drives it. */
  timers?: TimerClock
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
  /**
   * Told of the jobs a worker's end ended or requeued (out of memory, lost with its host): the
   * metrics count them and their spans end, as the job sweeper's do.
   */
  sweptJobs?: SweptJobObservers
}
