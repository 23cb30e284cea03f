import {
  chunkError,
  exceptionError,
  isStreamResult,
  resultBody,
  streamExceptionError,
  type DoneBody,
} from './job-result.js'
import { deliver, type Answer, type Reachability } from './delivery.js'
import { abortError, errorMessage } from './errors.js'
import type { Handler, JobContext, ServeOptions, WorkerLogger } from './serve-options.js'
import type { WorkerJob, WorkerProtocol } from './worker-protocol.js'

/** A job this worker holds: running, or with a result waiting for delivery. */
export interface RunningJob {
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
  /**
   * A time (this worker's clock) before which the lease a take gave cannot end: when the take
   * was sent, plus how long after it arrived the platform says the lease ends (podyard's take
   * answers say; a take that waited for work gives a lease that starts when it ends).
   */
  leaseEndsAt?: number
  /** A progress update not sent yet (or waiting to be sent again): a newer one replaces it. */
  waitingProgress?: { value: unknown; sending: boolean; delivered: Promise<unknown> }
}

export interface JobRunsDeps {
  handler: Handler<never>
  options: Pick<ServeOptions, 'returnAggregateOutput' | 'refreshWorker'>
  workerId: string
  /** The SDK's version as errors report it. */
  version: string
  protocol: WorkerProtocol
  reachability: Reachability
  log: WorkerLogger
  /** The worker's concurrency now: a worker that runs one job at a time says so with its result. */
  concurrency: () => number
  /** A run is over (its result delivered or given up): its slot is free. */
  onEnded: () => void
}

/**
 * The jobs a worker holds and their runs: each handler's call, its stream chunks, progress
 * updates and result, delivered in order (docs/worker-sdk.md, "Delivery"), and how runs are
 * given up (the platform stopped the job, its lease ran out, the worker stops).
 */
export class JobRuns {
  private readonly running = new Map<string, RunningJob>()
  private warnedNoStreamUrl = false

  constructor(private readonly deps: JobRunsDeps) {}

  get size(): number {
    return this.running.size
  }

  get(jobId: string): RunningJob | undefined {
    return this.running.get(jobId)
  }

  ids(): string[] {
    return [...this.running.keys()]
  }

  all(): RunningJob[] {
    return [...this.running.values()]
  }

  /** Waits until no job runs or `timeoutMs` has passed (a take answered meanwhile adds jobs). */
  async settle(timeoutMs: number): Promise<void> {
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

  abandon(job: RunningJob, reason: string): void {
    job.abandoned = true
    job.controller.abort(abortError(reason))
  }

  start(job: WorkerJob, takenAt: number, leaseEndsAt?: number): void {
    const held = this.running.get(job.id)
    if (held !== undefined && !held.abandoned) {
      // Its lease ran out and the platform re-queued it, then handed it back to this worker: the
      // run (or its result waiting for delivery) reports to the new attempt.
      held.takes += 1
      held.renewedAt = Math.max(held.renewedAt, takenAt)
      if (leaseEndsAt !== undefined) {
        held.leaseEndsAt = Math.max(held.leaseEndsAt ?? leaseEndsAt, leaseEndsAt)
      }
      held.onTakenAgain?.()
      this.deps.log.info('a take handed again a job this worker holds: keeping its run', {
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
      ...(leaseEndsAt === undefined ? {} : { leaseEndsAt }),
    }
    this.running.set(job.id, entry)
    entry.task = this.run(job, entry)
      .catch((error: unknown) =>
        this.deps.log.error('job failed to run', { jobId: job.id, error: errorMessage(error) }),
      )
      .finally(() => {
        if (this.running.get(job.id) === entry) this.running.delete(job.id)
        this.deps.onEnded()
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
        this.deps.reachability,
        this.deps.log,
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
        return await this.deps.protocol.done(
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
    const { workerId, version } = this.deps
    const context: JobContext = {
      id: job.id,
      workerId,
      signal: entry.controller.signal,
      progress: (value) => this.progress(entry, value),
    }
    let body: DoneBody
    let isStream = false
    try {
      let result: unknown = (this.deps.handler as Handler)(job, context)
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
          workerId,
          version,
          hostname: process.env.RUNPOD_POD_HOSTNAME,
        }),
      }
    }
    if (entry.abandoned) return
    entry.resultReady = true
    if (this.deps.options.refreshWorker) body.stopPod = true
    await this.post(entry, 'job-done', () =>
      this.deps.protocol.finish(job.id, body, isStream, this.deps.concurrency() === 1),
    )
  }

  private async consumeStream(
    stream: AsyncIterable<unknown> | Iterable<unknown>,
    entry: RunningJob,
  ): Promise<DoneBody> {
    const { options, protocol } = this.deps
    const aggregate: unknown[] = []
    try {
      for await (const chunk of stream) {
        if (entry.abandoned) return {}
        const error = chunkError(chunk)
        if (error !== undefined) return { error }
        if (options.returnAggregateOutput) aggregate.push(chunk)
        if (protocol.canStream) {
          const index = entry.chunks++
          await this.post(entry, 'job-stream', () => protocol.stream(entry.id, chunk, index))
        } else if (!this.warnedNoStreamUrl) {
          this.warnedNoStreamUrl = true
          this.deps.log.warn(
            'a handler yielded but no job-stream URL is configured: chunks are dropped',
          )
        }
      }
    } catch (error) {
      return { error: streamExceptionError(error) }
    }
    return { output: options.returnAggregateOutput ? aggregate : [] }
  }
}
