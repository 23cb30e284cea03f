import { readFileSync } from 'node:fs'
import {
  chunkError,
  exceptionError,
  isStreamResult,
  resultBody,
  streamExceptionError,
  type DoneBody,
} from './job-result.js'
import { resolveConnection, type WorkerConnectionOptions } from './worker-config.js'
import { HttpClient } from './worker-http.js'
import { TakeRefused, WorkerProtocol, type WorkerJob } from './worker-protocol.js'

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
   * Posts a progress update (`/status` shows it as the output of the IN_PROGRESS job). Never
   * rejects: a failed post is logged. Updates and the result are posted in order.
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
  /** Jobs in flight at once (default 1); above 1 free slots are filled with job-take-batch. */
  concurrency?: number
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
   * Graceful shutdown: stops taking jobs, lets the jobs in flight finish and report within the
   * grace period, aborts the rest (their results are not posted: the platform re-queues them
   * when their lease runs out), then resolves. Idempotent.
   */
  stop(options?: StopOptions): Promise<void>
}

export const DEFAULT_GRACE_PERIOD_MS = 30_000
/** After the grace period, how long aborted handlers get to settle before `stop()` resolves. */
export const ABORT_SETTLE_MS = 1_000
/** Attempts of a job-done or job-stream post (runpod-python makes 3). */
const POST_ATTEMPTS = 3
const POST_RETRY_DELAYS_MS = [250, 1_000]
const MAX_BACKOFF_MS = 5_000

function sdkVersion(): string {
  try {
    const pkg = JSON.parse(
      readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'),
    ) as { version?: string }
    return `podyard-worker/${pkg.version ?? 'unknown'}`
  } catch {
    return 'podyard-worker/unknown'
  }
}

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

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error))

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve()
    const done = () => {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done, { once: true })
  })
}

function abortError(message: string): Error {
  return new DOMException(message, 'AbortError')
}

interface RunningJob {
  id: string
  controller: AbortController
  /** Stopped by the platform or by shutdown: its result is not posted. */
  abandoned: boolean
  /** The job's posts, in order (progress updates, then the result). */
  posts: Promise<void>
  task?: Promise<void>
}

class Worker implements WorkerHandle {
  readonly workerId: string
  readonly done: Promise<void>
  private resolveDone!: () => void
  private readonly http = new HttpClient()
  private readonly protocol: WorkerProtocol
  private readonly log: WorkerLogger
  private readonly concurrency: number
  private readonly version = sdkVersion()
  private readonly running = new Map<string, RunningJob>()
  /** Aborted when the worker starts stopping: ends the take loop and its sleeps. */
  private readonly stopping = new AbortController()
  /** Aborted once every job is over: ends the stop channel and the heartbeat. */
  private readonly finished = new AbortController()
  private takeController: AbortController | undefined
  private slotFreed: (() => void) | undefined
  private stopped: Promise<void> | undefined
  private warnedNoStreamUrl = false
  private readonly loops: Promise<void>[] = []

  constructor(
    private readonly handler: Handler<never>,
    private readonly options: ServeOptions,
  ) {
    const connection = resolveConnection(options)
    this.workerId = connection.workerId
    this.protocol = new WorkerProtocol(connection, this.http, this.version)
    this.log = options.logger === null ? silentLogger : (options.logger ?? stderrLogger)
    const concurrency = options.concurrency ?? 1
    if (!Number.isInteger(concurrency) || concurrency < 1) {
      throw new RangeError(`concurrency must be a positive integer, not ${concurrency}`)
    }
    this.concurrency = concurrency
    this.done = new Promise((resolve) => {
      this.resolveDone = resolve
    })
    this.loops.push(this.takeLoop())
    if (this.protocol.stopChannelAvailable) this.loops.push(this.stopChannelLoop())
    if (connection.pingUrl !== undefined)
      this.loops.push(this.heartbeatLoop(connection.pingIntervalMs))
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
      this.log.warn('the grace period is over: aborting the jobs still running', {
        jobs: [...this.running.keys()],
      })
      for (const job of this.running.values()) {
        job.abandoned = true
        job.controller.abort(abortError('the worker is stopping'))
      }
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
        const jobs = await this.protocol.take(free, this.running.size > 0, controller.signal)
        failures = 0
        for (const job of jobs) this.start(job)
      } catch (error) {
        if (this.stopping.signal.aborted) break
        failures += 1
        const delay =
          error instanceof TakeRefused
            ? error.retryAfterMs
            : Math.min(MAX_BACKOFF_MS, 250 * 2 ** (failures - 1))
        this.log.warn('job-take failed', { error: describe(error), retryInMs: delay })
        await sleep(delay, this.stopping.signal)
      } finally {
        this.takeController = undefined
      }
    }
  }

  private async stopChannelLoop(): Promise<void> {
    let failures = 0
    while (!this.finished.signal.aborted) {
      try {
        const ids = await this.protocol.stops(this.finished.signal)
        failures = 0
        for (const id of ids) {
          const job = this.running.get(id)
          if (job === undefined) continue
          this.log.info('the platform stopped a job', { jobId: id })
          job.abandoned = true
          job.controller.abort(
            abortError(`the platform stopped job ${id} (cancelled, timed out or expired)`),
          )
        }
      } catch (error) {
        if (this.finished.signal.aborted) break
        failures += 1
        const delay = Math.min(MAX_BACKOFF_MS, 250 * 2 ** (failures - 1))
        this.log.warn('job-stop failed', { error: describe(error), retryInMs: delay })
        await sleep(delay, this.finished.signal)
      }
    }
  }

  private async heartbeatLoop(intervalMs: number): Promise<void> {
    let failing = false
    while (!this.finished.signal.aborted) {
      try {
        await this.protocol.ping([...this.running.keys()], 2 * intervalMs)
        failing = false
      } catch (error) {
        if (!failing) this.log.warn('ping failed', { error: describe(error) })
        failing = true
      }
      await sleep(intervalMs, this.finished.signal)
    }
  }

  private start(job: WorkerJob): void {
    const previous = this.running.get(job.id)
    if (previous !== undefined) {
      // Handed out again (its lease was lost): the old run must not report.
      previous.abandoned = true
      previous.controller.abort(abortError(`job ${job.id} was handed out again`))
    }
    const entry: RunningJob = {
      id: job.id,
      controller: new AbortController(),
      abandoned: false,
      posts: Promise.resolve(),
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

  /** Chains a post after the job's earlier ones; resolves once it is done, never rejects. */
  private post(entry: RunningJob, what: string, send: () => Promise<void>): Promise<void> {
    const next = entry.posts.then(async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await send()
        } catch (error) {
          if (attempt >= POST_ATTEMPTS) {
            this.log.error(`${what} failed`, { jobId: entry.id, error: describe(error) })
            return
          }
          await new Promise((resolve) => setTimeout(resolve, POST_RETRY_DELAYS_MS[attempt - 1]))
        }
      }
    })
    entry.posts = next
    return next
  }

  private async run(job: WorkerJob, entry: RunningJob): Promise<void> {
    const context: JobContext = {
      id: job.id,
      workerId: this.workerId,
      signal: entry.controller.signal,
      progress: (value) => {
        if (entry.abandoned) return Promise.resolve()
        return this.post(entry, 'progress update', () =>
          this.protocol.done(job.id, { status: 'IN_PROGRESS', output: value }, false),
        )
      },
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
          await this.post(entry, 'job-stream', () => this.protocol.stream(entry.id, chunk))
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
  return new Worker(handler as Handler<never>, options)
}
