/**
 * A serverless job: what a client submits to an endpoint's queue (`/run`, `/runsync`) and a
 * worker takes, runs and reports on. The model and its bounds are described in
 * docs/serverless-queue.md; the wire shapes in wire-compat §4 and §5.
 */
import type { TraceOrigin } from '../../shared/tracing.js'

export const JOB_STATUSES = [
  'IN_QUEUE',
  'IN_PROGRESS',
  'COMPLETED',
  'FAILED',
  'CANCELLED',
  'TIMED_OUT',
] as const
export type JobStatus = (typeof JOB_STATUSES)[number]

/** The statuses a job never leaves except by `retry` (FAILED, TIMED_OUT) or deletion. */
export const TERMINAL_JOB_STATUSES: ReadonlySet<JobStatus> = new Set<JobStatus>([
  'COMPLETED',
  'FAILED',
  'CANCELLED',
  'TIMED_OUT',
])

/** The statuses `retry` accepts. */
export const RETRYABLE_JOB_STATUSES: ReadonlySet<JobStatus> = new Set<JobStatus>([
  'FAILED',
  'TIMED_OUT',
])

export function isTerminal(status: JobStatus): boolean {
  return TERMINAL_JOB_STATUSES.has(status)
}

const SECOND = 1_000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

/** Job policy (spec "Job policy"): the longest a worker may run the job once it has it. */
export const MIN_EXECUTION_TIMEOUT_MS = 5 * SECOND
export const MAX_EXECUTION_TIMEOUT_MS = 7 * DAY
export const DEFAULT_EXECUTION_TIMEOUT_MS = 10 * MINUTE
/** Job policy: the job's whole lifespan from submission, queue time included. */
export const MIN_TTL_MS = 10 * SECOND
export const MAX_TTL_MS = 7 * DAY
export const DEFAULT_TTL_MS = DAY
/** Result retention (spec "Result retention"): how long a finished job stays readable. */
export const RUN_RESULT_RETENTION_MS = 30 * MINUTE
export const SYNC_RESULT_RETENTION_MS = 1 * MINUTE
/** `/runsync` job ids start with this (wire-compat §4.1). */
export const SYNC_JOB_ID_PREFIX = 'sync-'

/**
 * How many times a job may be handed to a worker that is then lost (crashed, stopped
 * heart-beating) before the job fails instead of going back to the queue: a job that kills
 * every worker it reaches must not take the endpoint down forever.
 */
export const MAX_JOB_ATTEMPTS = 3

/** Why an attempt that was not the job's last ended: its worker was lost, the job requeued. */
export function lostAttemptReason(attempt: number): string {
  return `the job's worker was lost on attempt ${attempt} of ${MAX_JOB_ATTEMPTS} (crashed, stopped, missed its heartbeats or lost with its host); the job went back to the queue`
}

/** The error of a job that failed because its workers kept being lost. */
export function lostWorkerError(attempts: number): string {
  return `the job's worker was lost ${attempts} times (crashed, stopped or missed its heartbeats); it is not retried again`
}

export interface JobPolicy {
  executionTimeout: number
  ttl: number
  lowPriority: boolean
}

/** Passed through to the worker; never echoed by a read route or log. */
export interface S3Config {
  accessId: string
  accessSecret: string
  bucketName: string
  endpointUrl: string
  objectPath?: string
}

export interface Job {
  /** A UUID; `sync-<uuid>` for `/runsync` jobs. */
  id: string
  endpointId: string
  accountId: string
  status: JobStatus
  /** Any JSON value; the job API accepts only objects. */
  input: unknown
  webhook?: string
  policy: JobPolicy
  /** Only the worker that takes the job sees it (`take`); every other view leaves it out. */
  s3Config?: S3Config
  /** The worker's output, or its latest progress update while IN_PROGRESS. */
  output?: unknown
  error?: string
  /** The worker that has (or last had) the job. */
  workerId?: string
  createdAt: string
  /** When the current (or last) attempt was taken. */
  startedAt?: string
  completedAt?: string
  /** createdAt + policy.ttl: the job is deleted then, in any state. */
  expiresAt: string
  /** While IN_PROGRESS: the worker loses the job unless it heart-beats before this. */
  leaseExpiresAt?: string
  /** While IN_PROGRESS: startedAt + policy.executionTimeout; TIMED_OUT after it. */
  deadlineAt?: string
  /** When a finished job is deleted (completedAt + retention). */
  retainUntil?: string
  /** How many times a worker has taken the job (a lease expiry re-queues it with this counted). */
  attempts: number
  /** How many times a client retried the job (`/retry`). */
  retries: number
  /** Submitted through `/runsync`. */
  sync: boolean
  /** The seq of the last stream chunk appended (0: none). */
  streamSeq: number
  /** Changes on every write, so a waiter can tell whether it missed one. */
  version: number
  /** The request that queued it, when the server traces (docs/production.md, "Tracing"). */
  trace?: TraceOrigin
}

/** What the job API may show: the job without `s3Config`. */
export type JobView = Omit<Job, 's3Config'>

export interface StreamChunk {
  /** 1, 2, 3... per job, in the order the worker appended them. */
  seq: number
  output: unknown
}

/** Queue wait and run time in ms (wire-compat §4: `delayTime`, `executionTime`). */
export function jobTimings(job: JobView, now: Date): { delayTime: number; executionTime: number } {
  const created = Date.parse(job.createdAt)
  const started = job.startedAt === undefined ? undefined : Date.parse(job.startedAt)
  const ended = job.completedAt === undefined ? now.getTime() : Date.parse(job.completedAt)
  if (started === undefined) return { delayTime: Math.max(0, ended - created), executionTime: 0 }
  return { delayTime: Math.max(0, started - created), executionTime: Math.max(0, ended - started) }
}

export function resultRetentionMs(sync: boolean): number {
  return sync ? SYNC_RESULT_RETENTION_MS : RUN_RESULT_RETENTION_MS
}

function boundedIntegerProblems(value: unknown, field: string, min: number, max: number): string[] {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    return [`${field}: must be an integer number of milliseconds, got ${JSON.stringify(value)}`]
  }
  if (value < min || value > max) return [`${field}: must be between ${min} and ${max}`]
  return []
}

export type PolicyResult =
  { policy: JobPolicy; problems: [] } | { policy?: undefined; problems: string[] }

/**
 * The policy a submission asks for, with defaults filled in, or the problems with it as
 * `<field>: <problem>` lines. `defaultExecutionTimeout` is the endpoint's `timeout` when it has
 * one. Unknown policy keys are ignored (RunPod documents only these three).
 */
export function resolvePolicy(
  input: unknown,
  options: { field?: string; defaultExecutionTimeout?: number } = {},
): PolicyResult {
  const field = options.field ?? 'body.policy'
  if (input === undefined || input === null) input = {}
  if (typeof input !== 'object' || Array.isArray(input)) {
    return { problems: [`${field}: must be an object`] }
  }
  const raw = input as Record<string, unknown>
  const problems: string[] = []
  const executionTimeout =
    raw.executionTimeout ?? options.defaultExecutionTimeout ?? DEFAULT_EXECUTION_TIMEOUT_MS
  problems.push(
    ...boundedIntegerProblems(
      executionTimeout,
      `${field}.executionTimeout`,
      MIN_EXECUTION_TIMEOUT_MS,
      MAX_EXECUTION_TIMEOUT_MS,
    ),
  )
  const ttl = raw.ttl ?? DEFAULT_TTL_MS
  problems.push(...boundedIntegerProblems(ttl, `${field}.ttl`, MIN_TTL_MS, MAX_TTL_MS))
  const lowPriority = raw.lowPriority ?? false
  if (typeof lowPriority !== 'boolean') {
    problems.push(`${field}.lowPriority: must be a boolean, got ${JSON.stringify(lowPriority)}`)
  }
  if (problems.length > 0) return { problems }
  return {
    policy: {
      executionTimeout: executionTimeout as number,
      ttl: ttl as number,
      lowPriority: lowPriority as boolean,
    },
    problems: [],
  }
}

/** A new IN_QUEUE job. `createdAt` is the submission time; the ttl counts from it. */
export function newJob(fields: {
  id: string
  endpointId: string
  accountId: string
  input: unknown
  policy: JobPolicy
  sync: boolean
  createdAt: Date
  webhook?: string
  s3Config?: S3Config
  trace?: TraceOrigin
}): Job {
  const job: Job = {
    id: fields.id,
    endpointId: fields.endpointId,
    accountId: fields.accountId,
    status: 'IN_QUEUE',
    input: fields.input,
    policy: fields.policy,
    createdAt: fields.createdAt.toISOString(),
    expiresAt: new Date(fields.createdAt.getTime() + fields.policy.ttl).toISOString(),
    attempts: 0,
    retries: 0,
    sync: fields.sync,
    streamSeq: 0,
    version: 1,
  }
  if (fields.webhook !== undefined) job.webhook = fields.webhook
  if (fields.s3Config !== undefined) job.s3Config = fields.s3Config
  if (fields.trace !== undefined) job.trace = fields.trace
  return job
}

/**
 * The moves of the state machine, each named by what causes it:
 * submit -> IN_QUEUE; take: IN_QUEUE -> IN_PROGRESS; progress, stream: IN_PROGRESS ->
 * IN_PROGRESS; complete: IN_PROGRESS -> COMPLETED; fail: IN_PROGRESS -> FAILED; timeout:
 * IN_PROGRESS -> TIMED_OUT; leaseLost: IN_PROGRESS -> IN_QUEUE; cancel: IN_QUEUE or
 * IN_PROGRESS -> CANCELLED; retry: FAILED or TIMED_OUT -> IN_QUEUE. Deletion (ttl,
 * retention, purge of queued jobs) is not a status.
 */
export type JobEvent =
  | 'take'
  | 'progress'
  | 'stream'
  | 'complete'
  | 'fail'
  | 'timeout'
  | 'leaseLost'
  | 'cancel'
  | 'retry'

const TRANSITIONS: Record<JobEvent, { from: readonly JobStatus[]; to: JobStatus | 'same' }> = {
  take: { from: ['IN_QUEUE'], to: 'IN_PROGRESS' },
  progress: { from: ['IN_PROGRESS'], to: 'same' },
  stream: { from: ['IN_PROGRESS'], to: 'same' },
  complete: { from: ['IN_PROGRESS'], to: 'COMPLETED' },
  fail: { from: ['IN_PROGRESS'], to: 'FAILED' },
  timeout: { from: ['IN_PROGRESS'], to: 'TIMED_OUT' },
  leaseLost: { from: ['IN_PROGRESS'], to: 'IN_QUEUE' },
  cancel: { from: ['IN_QUEUE', 'IN_PROGRESS'], to: 'CANCELLED' },
  retry: { from: ['FAILED', 'TIMED_OUT'], to: 'IN_QUEUE' },
}

/** The statuses from which `event` is allowed. */
export function allowedFrom(event: JobEvent): readonly JobStatus[] {
  return TRANSITIONS[event].from
}

/** The status after `event`, or undefined when `event` is not allowed from `status`. */
export function nextStatus(status: JobStatus, event: JobEvent): JobStatus | undefined {
  const rule = TRANSITIONS[event]
  if (!rule.from.includes(status)) return undefined
  return rule.to === 'same' ? status : rule.to
}

/** The retried job: same id and input, back in the queue, output and run cleared. */
export function retried(job: Job): Job | undefined {
  if (nextStatus(job.status, 'retry') === undefined) return undefined
  const next: Job = {
    ...job,
    status: 'IN_QUEUE',
    retries: job.retries + 1,
    streamSeq: 0,
    version: job.version + 1,
  }
  for (const key of [
    'output',
    'error',
    'workerId',
    'startedAt',
    'completedAt',
    'leaseExpiresAt',
    'deadlineAt',
    'retainUntil',
  ] as const) {
    delete next[key]
  }
  return next
}
