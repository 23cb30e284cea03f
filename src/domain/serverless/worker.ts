import type { PodLogLine } from '../pods/ports.js'
import type { StartBackoffView } from './start-backoff.js'
import type { WorkerCounts } from './worker-presence.js'

/**
 * A serverless worker the platform runs for an endpoint (docs/serverless-workers.md): a
 * workload placed on a host like a pod, started from the endpoint's container block, that
 * takes the endpoint's jobs through the worker protocol.
 */

/** Where the platform is with the worker; IDLE and RUNNING are told apart by its jobs. */
export type WorkerPhase =
  /** Wanted, not placed: no host has room (shown THROTTLED). */
  | 'PENDING'
  /** Placed and launched, has not asked for a job yet (INITIALIZING). */
  | 'STARTING'
  /** Asking for jobs (IDLE or RUNNING). */
  | 'READY'
  /** Crashed, failed its fitness check or missed its heartbeats; its workload is gone. */
  | 'UNHEALTHY'
  /**
   * Stopped and gone since `phaseChangedAt`; no longer listed or counted, the record is kept
   * (STOPPED_WORKER_RETENTION_MS) so that the billing meter charges it up to that instant.
   */
  | 'STOPPED'

/** The statuses of the workers list (wire-compat §3.3) and `/health`. */
export type WorkerStatus = 'RUNNING' | 'IDLE' | 'INITIALIZING' | 'THROTTLED' | 'UNHEALTHY'

export interface ManagedWorker {
  /** 14 lowercase letters and digits, like a pod id: RunPod's workerId is the worker's pod id. */
  id: string
  endpointId: string
  accountId: string
  /** The endpoint version it was started from. */
  version: number
  /** The generation of the worker key it was given: a rotation makes it stale. */
  keyGeneration: number
  phase: WorkerPhase
  /**
   * Why it is PENDING or UNHEALTHY; for a READY or STARTING worker leaving a draining host whose
   * replacement is placed, `moving off host <id> (draining): ...` (it takes no new job).
   */
  reason: string | null
  hostId: string | null
  dataCenterId: string | null
  gpuTypeId: string | null
  cpuFlavorId: string | null
  gpuCount: number
  gpuIndices: number[]
  vcpus: number
  memoryGb: number
  image: string
  createdAt: string
  /** When its workload was launched. */
  startedAt: string | null
  phaseChangedAt: string
}

/**
 * The phases of a worker gone for good: whatever it still sends, it takes no job (the job
 * queue's take refuses it in the same statement: docs/serverless-queue.md, "Taking and leases").
 */
export const RETIRED_WORKER_PHASES: readonly WorkerPhase[] = ['UNHEALTHY', 'STOPPED']

/**
 * How long a STOPPED worker's record is kept: far longer than any meter interval. Its logs (its
 * system lines, and the last lines of a failed worker's output) are readable as long.
 */
export const STOPPED_WORKER_RETENTION_MS = 24 * 3600 * 1000

export function emptyWorkerCounts(): WorkerCounts {
  return { idle: 0, initializing: 0, ready: 0, running: 0, throttled: 0, unhealthy: 0 }
}

/** Adds one worker of `status` to `/health` counts (`ready` = asking for jobs, idle or not). */
export function countWorker(counts: WorkerCounts, status: WorkerStatus): void {
  if (status === 'RUNNING') counts.running += 1
  else if (status === 'IDLE') counts.idle += 1
  else if (status === 'INITIALIZING') counts.initializing += 1
  else if (status === 'THROTTLED') counts.throttled += 1
  else counts.unhealthy += 1
  if (status === 'RUNNING' || status === 'IDLE') counts.ready += 1
}

export interface WorkerRepo {
  insert(worker: ManagedWorker): Promise<void>
  update(worker: ManagedWorker): Promise<void>
  delete(id: string): Promise<void>
  get(id: string): Promise<ManagedWorker | undefined>
  listByEndpoint(endpointId: string): Promise<ManagedWorker[]>
  /** Every worker of every endpoint, oldest first. */
  listAll(): Promise<ManagedWorker[]>
  /** Keeps the last lines of a failed worker's output, its workload being removed. */
  keepLog(workerId: string, lines: PodLogLine[]): Promise<void>
  /** The lines kept for the worker, or undefined when none were. */
  keptLog(workerId: string): Promise<PodLogLine[] | undefined>
  /** Forgets them (the worker is no longer listed); deleting the worker forgets them too. */
  dropKeptLog(workerId: string): Promise<void>
}

/** How many lines of a failed worker's output are kept once its workload is removed. */
export const KEPT_LOG_LINES = 100

/**
 * How many UNHEALTHY workers an endpoint lists at most: older ones are dropped before
 * `unhealthyRetentionMs` (workers failing in a loop are few with the backoff; many failing at
 * once are not).
 */
export const MAX_LISTED_UNHEALTHY_WORKERS = 10

/**
 * What the job service asks of whoever runs workers: whether a worker may take new jobs (a
 * stale or recycling one drains), the `/health` worker counts, and why workers fail to start.
 */
export interface WorkerRoster {
  takesJobs(endpointId: string, workerId: string): boolean
  counts(endpointId: string): WorkerCounts
  /** The endpoint's crash-loop backoff while its workers fail, or null. */
  startBackoff(endpointId: string): Promise<StartBackoffView | null>
}
