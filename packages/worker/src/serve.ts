import { backoffDelayMs } from './backoff.js'
import { Reachability, sleep } from './delivery.js'
import { errorMessage } from './errors.js'
import { JobLeases } from './job-leases.js'
import { JobRuns } from './job-runs.js'
import { localTestSource, localTestWorker } from './local-test.js'
import {
  ABORT_SETTLE_MS,
  DEFAULT_GRACE_PERIOD_MS,
  initialConcurrency,
  isPositiveInteger,
  loggerOf,
  type Handler,
  type ServeOptions,
  type StopOptions,
  type WorkerHandle,
  type WorkerLogger,
} from './serve-options.js'
import { hasTakeUrl, resolveConnection } from './worker-config.js'
import { HttpClient } from './worker-http.js'
import { TakeRefused, WorkerProtocol } from './worker-protocol.js'
import { SDK_VERSION_TAG } from './version.js'

/**
 * A worker of an endpoint: its take loop fills free slots with jobs (job-runs.ts runs them), its
 * leases are kept and its stop notices heard (job-leases.ts), and it stops gracefully.
 */
class Worker implements WorkerHandle {
  readonly workerId: string
  readonly done: Promise<void>
  private resolveDone!: () => void
  private readonly http = new HttpClient()
  private readonly protocol: WorkerProtocol
  private readonly log: WorkerLogger
  private concurrency: number
  private readonly concurrencyModifier: ((current: number) => number) | undefined
  /** The jobs this worker holds: running, or with a result waiting for delivery. */
  private readonly runs: JobRuns
  private readonly reachability = new Reachability()
  /** Aborted when the worker starts stopping: ends the take loop and its sleeps. */
  private readonly stopping = new AbortController()
  /** Aborted once every job is over: ends the stop channel and the heartbeat. */
  private readonly finished = new AbortController()
  private takeController: AbortController | undefined
  private slotFreed: (() => void) | undefined
  private stopped: Promise<void> | undefined
  private readonly loops: Promise<void>[] = []

  constructor(
    handler: Handler<never>,
    private readonly options: ServeOptions,
  ) {
    const connection = resolveConnection(options)
    this.workerId = connection.workerId
    this.protocol = new WorkerProtocol(connection, this.http, SDK_VERSION_TAG)
    this.log = loggerOf(options)
    const { concurrency, modifier } = initialConcurrency(options)
    this.concurrency = concurrency
    this.concurrencyModifier = modifier
    this.runs = new JobRuns({
      handler,
      options,
      workerId: this.workerId,
      version: SDK_VERSION_TAG,
      protocol: this.protocol,
      reachability: this.reachability,
      log: this.log,
      concurrency: () => this.concurrency,
      onEnded: () => {
        this.slotFreed?.()
        if (options.refreshWorker) void this.stop()
      },
    })
    const leases = new JobLeases({
      runs: this.runs,
      protocol: this.protocol,
      reachability: this.reachability,
      log: this.log,
      finished: this.finished.signal,
      taking: () => this.takeController !== undefined,
    })
    this.done = new Promise((resolve) => {
      this.resolveDone = resolve
    })
    this.loops.push(this.takeLoop())
    if (this.protocol.stopChannelAvailable) this.loops.push(leases.stopChannelLoop())
    if (connection.pingUrl !== undefined) {
      this.loops.push(leases.heartbeatLoop(connection.pingIntervalMs), leases.fenceLoop())
    }
  }

  get activeJobs(): number {
    return this.runs.size
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
    await this.runs.settle(gracePeriodMs)
    if (this.runs.size > 0) {
      this.log.warn('the grace period is over: aborting the jobs not delivered yet', {
        jobs: this.runs.ids(),
      })
      for (const job of this.runs.all()) this.runs.abandon(job, 'the worker is stopping')
      await this.runs.settle(ABORT_SETTLE_MS)
    }
    this.finished.abort()
    await Promise.allSettled(this.loops)
    this.http.close()
    this.resolveDone()
  }

  private async takeLoop(): Promise<void> {
    let failures = 0
    while (!this.stopping.signal.aborted) {
      this.modifyConcurrency()
      const free = this.concurrency - this.runs.size
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
        const taken = await this.protocol.take(free, this.runs.size > 0, controller.signal)
        failures = 0
        this.reachability.answered()
        const leaseEndsAt =
          taken.leaseEndsAfterMs === undefined ? undefined : sentAt + taken.leaseEndsAfterMs
        for (const job of taken.jobs) this.runs.start(job, sentAt, leaseEndsAt)
      } catch (error) {
        if (this.stopping.signal.aborted) break
        failures += 1
        const delay = error instanceof TakeRefused ? error.retryAfterMs : backoffDelayMs(failures)
        this.log.warn('job-take failed', { error: errorMessage(error), retryInMs: delay })
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
        error: errorMessage(error),
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
