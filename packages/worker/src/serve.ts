import {
  chunkError,
  exceptionError,
  isStreamResult,
  resultBody,
  streamExceptionError,
  type DoneBody,
} from './job-result.js'
import { backoffDelayMs } from './backoff.js'
import { deliver, Reachability, sleep, type Answer } from './delivery.js'
import {
  LOCAL_WORKER_ID,
  LocalTestInputError,
  localTestJob,
  localTestSource,
  runLocalTest,
  type LocalTestSource,
} from './local-test.js'
import { hasTakeUrl, resolveConnection, type WorkerConnectionOptions } from './worker-config.js'
import { HttpClient } from './worker-http.js'
import { TakeRefused, WorkerProtocol, type PingAnswer, type WorkerJob } from './worker-protocol.js'
import { SDK_VERSION_TAG } from './version.js'

/** What a handler gets besides its job. */
export interface JobContext {
  /** The job id. */
  readonly id: string
  readonly workerId: string
  /**
   * Aborted when the platform stops the job (cancelled, timed out, deleted by its ttl, or its
   * lease lost) or when a stopping worker's grace period is over. After that, nothing the
   * handler returns is reported.
   */
  readonly signal: AbortSignal
  /**
   * Posts a progress update (`/status` shows it as the output of the IN_PROGRESS job). Resolves
   * once the platform has answered for it, or a newer update has replaced it while it waited;
   * never rejects. Updates and the result are delivered in order, retried like the result.
   */
  progress(value: unknown): Promise<void>
}

/**
 * A job handler: returns (or resolves to) the job's output, or is an async (or sync) generator
 * whose yields are stream chunks. Throwing fails the job.
 */
export type Handler<Input = Record<string, unknown>> = (
  job: WorkerJob<Input>,
  context: JobContext,
) => unknown

export interface WorkerLogger {
  info(message: string, fields?: Record<string, unknown>): void
  warn(message: string, fields?: Record<string, unknown>): void
  error(message: string, fields?: Record<string, unknown>): void
}

export interface ServeOptions extends WorkerConnectionOptions {
  /**
   * Jobs in flight at once; above 1 free slots are filled with job-take-batch. A number, or
   * runpod-python's `concurrency_modifier`: a function given the current concurrency before each
   * take, returning the next (it starts at 1). Default: `PODYARD_WORKER_CONCURRENCY` from the
   * environment (what `podyard dev --concurrency` sets), else 1.
   */
  concurrency?: number | ((current: number) => number)
  /** Generator handlers: the final output is the array of all chunks (else `[]`). */
  returnAggregateOutput?: boolean
  /**
   * Recycle the worker after its first job: the result carries `stopPod: true` and the worker
   * stops (runpod-python's `refresh_worker`).
   */
  refreshWorker?: boolean
  /** How long `stop()` lets jobs in flight finish before aborting them. Default 30 000 ms. */
  gracePeriodMs?: number
  /** Where the worker logs; default warnings and errors on stderr; `null` for silence. */
  logger?: WorkerLogger | null
  /**
   * The program's arguments, read for `--test_input '{"input": ...}'` (run one job locally, with
   * no server, as runpod-python does). Default `process.argv.slice(2)`.
   */
  argv?: readonly string[]
}

export interface StopOptions {
  gracePeriodMs?: number
}

export interface WorkerHandle {
  readonly workerId: string
  /** Jobs being handled now. */
  readonly activeJobs: number
  /** Resolves once the worker has stopped (by `stop()`, or after its job with `refreshWorker`). */
  readonly done: Promise<void>
  /**
   * Graceful shutdown: stops taking jobs, lets the jobs in flight finish and deliver their
   * results within the grace period (undelivered ones are still retried meanwhile), aborts the
   * rest (what they have not delivered is dropped: the platform re-queues them when their lease
   * runs out), then resolves. Idempotent.
   */
  stop(options?: StopOptions): Promise<void>
}

export const DEFAULT_GRACE_PERIOD_MS = 30_000
/** After the grace period, how long aborted handlers get to settle before `stop()` resolves. */
export const ABORT_SETTLE_MS = 1_000
/**
 * How long a stop notice waits for a take in flight to hand its job back to this worker before
 * the job is stopped: a notice sent when the job's lease ran out is stale once the job is this
 * worker's again (docs/worker-sdk.md, "Cancellation").
 */
export const STOP_CONFIRM_MS = 1_000
/**
 * A run is given up this long before its lease would end unrenewed, so that it has stopped
 * before the platform can hand the job to another worker (docs/worker-sdk.md, "Fencing").
 */
export const FENCE_MARGIN_MS = 1_000
/** How often the fence looks for runs taken since it last looked (each is due a lease later). */
const FENCE_CHECK_MS = 250

const stderrLogger: WorkerLogger = {
  info: () => {},
  warn: (message, fields) => writeLog('warn', message, fields),
  error: (message, fields) => writeLog('error', message, fields),
}
const silentLogger: WorkerLogger = { info: () => {}, warn: () => {}, error: () => {} }

function writeLog(level: string, message: string, fields?: Record<string, unknown>): void {
  process.stderr.write(
    `${JSON.stringify({ time: new Date().toISOString(), level, msg: message, ...fields })}\n`,
  )
}

const isPositiveInteger = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= 1

/** `PODYARD_WORKER_CONCURRENCY`, when set; a value that is no positive integer is refused. */
function concurrencyFromEnv(env: Record<string, string | undefined>): number {
  const raw = env.PODYARD_WORKER_CONCURRENCY
  if (raw === undefined || raw.trim() === '') return 1
  const value = Number(raw)
  if (!isPositiveInteger(value)) {
    throw new RangeError(`PODYARD_WORKER_CONCURRENCY must be a positive integer, not ${raw}`)
  }
  return value
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error))

function abortError(message: string): Error {
  return new DOMException(message, 'AbortError')
}

interface RunningJob {
  id: string
  controller: AbortController
  /** Stopped by the platform or by shutdown: nothing more of it is delivered. */
  abandoned: boolean
  /** The job's deliveries, in order (progress updates and chunks, then the result). */
  posts: Promise<unknown>
  task?: Promise<void>
  /** How many takes handed this job to this worker (more than 1: its lease ran out meanwhile). */
  takes: number
  /** Called when a take hands the job to this worker again. */
  onTakenAgain?: () => void
  /** The handler has returned: only its result's delivery is left. */
  resultReady: boolean
  /** The next stream chunk's index within the run. */
  chunks: number
  /**
   * When the request that last renewed the job's lease was sent (this worker's clock): the take
   * that handed it out, or a heartbeat whose answer named it.
   */
  renewedAt: number
  /** A progress update not sent yet (or waiting to be sent again): a newer one replaces it. */
  waitingProgress?: { value: unknown; sending: boolean; delivered: Promise<unknown> }
}

class Worker implements WorkerHandle {
  readonly workerId: string
  readonly done: Promise<void>
  private resolveDone!: () => void
  private readonly http = new HttpClient()
  private readonly protocol: WorkerProtocol
  private readonly log: WorkerLogger
  private concurrency: number
  private readonly concurrencyModifier: ((current: number) => number) | undefined
  private readonly version = SDK_VERSION_TAG
  /** The jobs this worker holds: running, or with a result waiting for delivery. */
  private readonly running = new Map<string, RunningJob>()
  private readonly reachability = new Reachability()
  /** Aborted when the worker starts stopping: ends the take loop and its sleeps. */
  private readonly stopping = new AbortController()
  /** Aborted once every job is over: ends the stop channel and the heartbeat. */
  private readonly finished = new AbortController()
  private takeController: AbortController | undefined
  private slotFreed: (() => void) | undefined
  private stopped: Promise<void> | undefined
  private warnedNoStreamUrl = false
  private readonly loops: Promise<void>[] = []
  /** How long a lease lasts, as the platform's heartbeat answers say (podyard's do). */
  private leaseMs: number | undefined

  constructor(
    private readonly handler: Handler<never>,
    private readonly options: ServeOptions,
  ) {
    const connection = resolveConnection(options)
    this.workerId = connection.workerId
    this.protocol = new WorkerProtocol(connection, this.http, this.version)
    this.log = options.logger === null ? silentLogger : (options.logger ?? stderrLogger)
    const concurrency = options.concurrency ?? concurrencyFromEnv(options.env ?? process.env)
    if (typeof concurrency === 'function') {
      this.concurrencyModifier = concurrency
      this.concurrency = 1
    } else {
      if (!isPositiveInteger(concurrency)) {
        throw new RangeError(`concurrency must be a positive integer, not ${concurrency}`)
      }
      this.concurrency = concurrency
    }
    this.done = new Promise((resolve) => {
      this.resolveDone = resolve
    })
    this.loops.push(this.takeLoop())
    if (this.protocol.stopChannelAvailable) this.loops.push(this.stopChannelLoop())
    if (connection.pingUrl !== undefined) {
      this.loops.push(this.heartbeatLoop(connection.pingIntervalMs), this.fenceLoop())
    }
  }

  get activeJobs(): number {
    return this.running.size
  }

  stop(options: StopOptions = {}): Promise<void> {
    this.stopped ??= this.shutdown(
      options.gracePeriodMs ?? this.options.gracePeriodMs ?? DEFAULT_GRACE_PERIOD_MS,
    )
    return this.stopped
  }

  private async shutdown(gracePeriodMs: number): Promise<void> {
    this.stopping.abort()
    this.takeController?.abort()
    this.slotFreed?.()
    await this.settle(gracePeriodMs)
    if (this.running.size > 0) {
      this.log.warn('the grace period is over: aborting the jobs not delivered yet', {
        jobs: [...this.running.keys()],
      })
      for (const job of this.running.values()) this.abandon(job, 'the worker is stopping')
      await this.settle(ABORT_SETTLE_MS)
    }
    this.finished.abort()
    await Promise.allSettled(this.loops)
    this.http.close()
    this.resolveDone()
  }

  /** Waits until no job runs or `timeoutMs` has passed (a take answered meanwhile adds jobs). */
  private async settle(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while (this.running.size > 0) {
      const remaining = deadline - Date.now()
      if (remaining <= 0) return
      let timer: NodeJS.Timeout | undefined
      await Promise.race([
        Promise.allSettled([...this.running.values()].map((job) => job.task)),
        new Promise((resolve) => {
          timer = setTimeout(resolve, remaining)
        }),
      ])
      clearTimeout(timer)
    }
  }

  private async takeLoop(): Promise<void> {
    let failures = 0
    while (!this.stopping.signal.aborted) {
      this.modifyConcurrency()
      const free = this.concurrency - this.running.size
      if (free <= 0) {
        await new Promise<void>((resolve) => {
          this.slotFreed = resolve
        })
        this.slotFreed = undefined
        continue
      }
      const controller = new AbortController()
      this.takeController = controller
      try {
        const sentAt = Date.now()
        const jobs = await this.protocol.take(free, this.running.size > 0, controller.signal)
        failures = 0
        this.reachability.answered()
        for (const job of jobs) this.start(job, sentAt)
      } catch (error) {
        if (this.stopping.signal.aborted) break
        failures += 1
        const delay = error instanceof TakeRefused ? error.retryAfterMs : backoffDelayMs(failures)
        this.log.warn('job-take failed', { error: describe(error), retryInMs: delay })
        await sleep(delay, this.stopping.signal)
      } finally {
        this.takeController = undefined
      }
    }
  }

  /** Asks the concurrency function for the next concurrency; a bad answer keeps the last one. */
  private modifyConcurrency(): void {
    if (this.concurrencyModifier === undefined) return
    let next: unknown
    try {
      next = this.concurrencyModifier(this.concurrency)
    } catch (error) {
      this.log.error('the concurrency function threw: keeping the concurrency', {
        concurrency: this.concurrency,
        error: describe(error),
      })
      return
    }
    if (!isPositiveInteger(next)) {
      this.log.error('the concurrency function returned no positive integer: keeping the last', {
        concurrency: this.concurrency,
        returned: String(next),
      })
      return
    }
    this.concurrency = next
  }

  private async stopChannelLoop(): Promise<void> {
    let failures = 0
    while (!this.finished.signal.aborted) {
      try {
        const ids = await this.protocol.stops(this.finished.signal)
        failures = 0
        this.reachability.answered()
        for (const id of ids) {
          const job = this.running.get(id)
          if (job !== undefined && !job.abandoned) void this.onStopNotice(job)
        }
      } catch (error) {
        if (this.finished.signal.aborted) break
        failures += 1
        const delay = backoffDelayMs(failures)
        this.log.warn('job-stop failed', { error: describe(error), retryInMs: delay })
        await sleep(delay, this.finished.signal)
      }
    }
  }

  private async heartbeatLoop(intervalMs: number): Promise<void> {
    let failing = false
    let pingDue = 0
    while (!this.finished.signal.aborted) {
      if (Date.now() >= pingDue) {
        pingDue = Date.now() + intervalMs
        try {
          await this.heartbeat(2 * intervalMs)
          failing = false
          this.reachability.answered()
        } catch (error) {
          if (!failing) this.log.warn('ping failed', { error: describe(error) })
          failing = true
        }
      }
      await sleep(Math.max(0, pingDue - Date.now()), this.finished.signal)
    }
  }

  /**
   * Looks at the runs' leases on a timer of its own: a heartbeat that hangs (it may wait twice
   * the ping interval for an answer) must not delay giving up a run whose lease is ending.
   */
  private async fenceLoop(): Promise<void> {
    while (!this.finished.signal.aborted) {
      const next = Math.min(this.fence(), Date.now() + FENCE_CHECK_MS)
      await sleep(Math.max(0, next - Date.now()), this.finished.signal)
    }
  }

  /** One heartbeat naming every job this worker holds; notes the leases it renewed. */
  private async heartbeat(timeoutMs: number): Promise<PingAnswer | undefined> {
    const sentAt = Date.now()
    const answer = await this.protocol.ping([...this.running.keys()], timeoutMs)
    if (answer?.leaseMs !== undefined) this.leaseMs = answer.leaseMs
    for (const id of answer?.renewed ?? []) {
      const job = this.running.get(id)
      if (job !== undefined) job.renewedAt = Math.max(job.renewedAt, sentAt)
    }
    return answer
  }

  /**
   * Gives up the runs whose leases this worker could not renew for a whole lease: the platform
   * may have handed those jobs to another worker, and a job must never run twice at once. A
   * result already waiting for delivery is kept (the platform ignores it if the job moved on).
   * Returns when to look again (ms since the epoch).
   */
  private fence(): number {
    const leaseMs = this.leaseMs
    if (leaseMs === undefined) return Number.POSITIVE_INFINITY
    let next = Number.POSITIVE_INFINITY
    for (const job of this.running.values()) {
      if (job.abandoned || job.resultReady) continue
      const giveUpAt = job.renewedAt + leaseMs - FENCE_MARGIN_MS
      if (Date.now() < giveUpAt) {
        next = Math.min(next, giveUpAt)
        continue
      }
      this.log.warn('giving up a job whose lease could not be renewed: it may run elsewhere', {
        jobId: job.id,
        leaseMs,
      })
      this.abandon(job, `job ${job.id}'s lease ran out: the platform could not be reached`)
    }
    return next
  }

  /**
   * A stop notice names a job of this worker. It is stale when the job has come back to this
   * worker since it was sent: its lease ran out (the platform was unreachable for longer than
   * the lease, or restarted), the notice went out, and a take handed the job back. So a job
   * handed back, or handed back in the next STOP_CONFIRM_MS while a take is in flight, is only
   * stopped when the platform confirms that the worker no longer holds it.
   */
  private async onStopNotice(job: RunningJob): Promise<void> {
    const takes = job.takes
    if (this.takeController !== undefined) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, STOP_CONFIRM_MS)
        job.onTakenAgain = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      job.onTakenAgain = undefined
    }
    if (job.abandoned || this.running.get(job.id) !== job) return
    if (job.takes !== takes || (job.takes > 1 && (await this.stillHolds(job.id)))) {
      this.log.info('a stop notice came for a job handed back to this worker since: ignored', {
        jobId: job.id,
      })
      return
    }
    this.log.info('the platform stopped a job', { jobId: job.id })
    this.abandon(job, `the platform stopped job ${job.id} (cancelled, timed out or expired)`)
  }

  /** Whether the platform says this worker holds the job (a heartbeat that names it renews it). */
  private async stillHolds(jobId: string): Promise<boolean> {
    try {
      const answer = await this.heartbeat(this.protocol.pingIntervalMs * 2)
      return answer?.renewed?.includes(jobId) ?? false
    } catch {
      return false
    }
  }

  private abandon(job: RunningJob, reason: string): void {
    job.abandoned = true
    job.controller.abort(abortError(reason))
  }

  private start(job: WorkerJob, takenAt: number): void {
    const held = this.running.get(job.id)
    if (held !== undefined && !held.abandoned) {
      // Its lease ran out and the platform re-queued it, then handed it back to this worker: the
      // run (or its result waiting for delivery) reports to the new attempt.
      held.takes += 1
      held.renewedAt = Math.max(held.renewedAt, takenAt)
      held.onTakenAgain?.()
      this.log.info('a take handed again a job this worker holds: keeping its run', {
        jobId: job.id,
        run: held.resultReady ? 'result waiting for delivery' : 'running',
      })
      return
    }
    const entry: RunningJob = {
      id: job.id,
      controller: new AbortController(),
      abandoned: false,
      posts: Promise.resolve(),
      takes: 1,
      resultReady: false,
      chunks: 0,
      renewedAt: takenAt,
    }
    this.running.set(job.id, entry)
    entry.task = this.run(job, entry)
      .catch((error: unknown) =>
        this.log.error('job failed to run', { jobId: job.id, error: describe(error) }),
      )
      .finally(() => {
        if (this.running.get(job.id) === entry) this.running.delete(job.id)
        this.slotFreed?.()
        if (this.options.refreshWorker) void this.stop()
      })
  }

  /**
   * Chains a delivery after the job's earlier ones; resolves once the platform has answered for
   * it (or it was given up: docs/worker-sdk.md, "Delivery"), never rejects.
   */
  private post(entry: RunningJob, what: string, send: () => Promise<Answer>): Promise<unknown> {
    const next = entry.posts.then(() =>
      deliver(
        { jobId: entry.id, what, send, signal: entry.controller.signal },
        this.reachability,
        this.log,
      ),
    )
    entry.posts = next
    return next
  }

  /** Queues a progress update; one still waiting takes the new value instead. */
  private async progress(entry: RunningJob, value: unknown): Promise<void> {
    if (entry.abandoned) return
    const waiting = entry.waitingProgress
    if (waiting !== undefined && !waiting.sending) {
      waiting.value = value
      await waiting.delivered
      return
    }
    const update = { value, sending: false, delivered: Promise.resolve() as Promise<unknown> }
    entry.waitingProgress = update
    update.delivered = this.post(entry, 'progress update', async () => {
      update.sending = true
      try {
        return await this.protocol.done(
          entry.id,
          { status: 'IN_PROGRESS', output: update.value },
          false,
        )
      } finally {
        update.sending = false
      }
    }).finally(() => {
      if (entry.waitingProgress === update) entry.waitingProgress = undefined
    })
    await update.delivered
  }

  private async run(job: WorkerJob, entry: RunningJob): Promise<void> {
    const context: JobContext = {
      id: job.id,
      workerId: this.workerId,
      signal: entry.controller.signal,
      progress: (value) => this.progress(entry, value),
    }
    let body: DoneBody
    let isStream = false
    try {
      let result: unknown = (this.handler as Handler)(job, context)
      if (!isStreamResult(result)) result = await result
      if (isStreamResult(result)) {
        isStream = true
        body = await this.consumeStream(result, entry)
      } else {
        body = resultBody(result)
      }
    } catch (error) {
      body = {
        error: exceptionError(error, {
          workerId: this.workerId,
          version: this.version,
          hostname: process.env.RUNPOD_POD_HOSTNAME,
        }),
      }
    }
    if (entry.abandoned) return
    entry.resultReady = true
    if (this.options.refreshWorker) body.stopPod = true
    await this.post(entry, 'job-done', () =>
      this.protocol.finish(job.id, body, isStream, this.concurrency === 1),
    )
  }

  private async consumeStream(
    stream: AsyncIterable<unknown> | Iterable<unknown>,
    entry: RunningJob,
  ): Promise<DoneBody> {
    const aggregate: unknown[] = []
    try {
      for await (const chunk of stream) {
        if (entry.abandoned) return {}
        const error = chunkError(chunk)
        if (error !== undefined) return { error }
        if (this.options.returnAggregateOutput) aggregate.push(chunk)
        if (this.protocol.canStream) {
          const index = entry.chunks++
          await this.post(entry, 'job-stream', () => this.protocol.stream(entry.id, chunk, index))
        } else if (!this.warnedNoStreamUrl) {
          this.warnedNoStreamUrl = true
          this.log.warn('a handler yielded but no job-stream URL is configured: chunks are dropped')
        }
      }
    } catch (error) {
      return { error: streamExceptionError(error) }
    }
    return { output: this.options.returnAggregateOutput ? aggregate : [] }
  }
}

/**
 * Starts a worker that takes jobs from a podyard (or RunPod-protocol) endpoint and runs them
 * with `handler` (docs/worker-sdk.md). Configuration comes from `options`, else from the
 * environment runpod-python's worker reads (RUNPOD_WEBHOOK_GET_JOB, RUNPOD_AI_API_KEY, ...).
 */
export function serve<Input = Record<string, unknown>>(
  handler: Handler<Input>,
  options: ServeOptions = {},
): WorkerHandle {
  const source = localTestSource(
    options.argv ?? process.argv.slice(2),
    hasTakeUrl(options),
    process.cwd(),
  )
  if (source !== undefined) return localTestWorker(handler as Handler<never>, source, options)
  return new Worker(handler as Handler<never>, options)
}

/**
 * A handle over one local test run (runpod-python's `run_local`): the process's exit code is 1
 * when the job fails or there is no valid job to run, as runpod-python's is.
 */
function localTestWorker(
  handler: Handler<never>,
  source: LocalTestSource,
  options: ServeOptions,
): WorkerHandle {
  const controller = new AbortController()
  let activeJobs = 1
  const done = (async () => {
    try {
      const job = localTestJob(source)
      const report = await runLocalTest(handler, job, controller.signal, {
        returnAggregateOutput: options.returnAggregateOutput ?? false,
      })
      if (report.status === 'FAILED') process.exitCode = 1
    } catch (error) {
      if (!(error instanceof LocalTestInputError)) throw error
      process.stderr.write(`podyard-worker: ${error.message}\n`)
      process.exitCode = 1
    } finally {
      activeJobs = 0
    }
  })()
  return {
    workerId: LOCAL_WORKER_ID,
    get activeJobs() {
      return activeJobs
    },
    done,
    stop: async () => {
      controller.abort(abortError('the worker is stopping'))
      await done
    },
  }
}
