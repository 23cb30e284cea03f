import type { Logger } from 'pino'
import type { PodLogLine, PodLogQuery } from '../domain/pods/ports.js'
import {
  afterFailure,
  DEFAULT_START_BACKOFF,
  LAST_FAILURE_LINES,
  type StartBackoff,
  type StartBackoffRepo,
} from '../domain/serverless/start-backoff.js'
import { KEPT_LOG_LINES, type ManagedWorker, type WorkerRepo } from '../domain/serverless/worker.js'
import type { RuntimeDriver } from '../runtime/driver.js'
import type { Clock } from '../shared/clock.js'

export interface WorkerFailuresDeps {
  backoffs: StartBackoffRepo
  workers: WorkerRepo
  clock: Clock
  logger: Logger
  limits?: { initialMs: number; maxMs: number }
}

/** The lines of `lines` that `query` asks for, as a driver answers it (docs/pods.md, "Logs"). */
function select(lines: PodLogLine[], query: PodLogQuery): PodLogLine[] {
  let out = lines
  if (query.afterSeq !== undefined) out = out.filter((l) => l.seq > query.afterSeq!)
  if (query.since !== undefined) {
    const since = Date.parse(query.since)
    out = out.filter((l) => Date.parse(l.ts) >= since)
  }
  if (query.tail !== undefined) out = query.tail === 0 ? [] : out.slice(-query.tail)
  return out
}

/**
 * What the platform remembers of workers that fail (docs/serverless-workers.md, "Crash
 * loops"): each endpoint's start backoff, stored so that `/health` on any replica and a
 * restarted leader see it, and the last lines of a failed worker's output, kept when its
 * workload is removed, for as long as the worker's record is kept (listed or not: 24 h after it
 * failed, STOPPED_WORKER_RETENTION_MS).
 */
export class WorkerFailures {
  private backoffs = new Map<string, StartBackoff>()
  private readonly limits: { initialMs: number; maxMs: number }

  constructor(private readonly deps: WorkerFailuresDeps) {
    this.limits = deps.limits ?? DEFAULT_START_BACKOFF
  }

  /** Reads every endpoint's backoff from the store (the leader each tick, a follower each pass). */
  async refresh(): Promise<void> {
    this.backoffs = new Map((await this.deps.backoffs.list()).map((b) => [b.endpointId, b]))
  }

  backoffOf(endpointId: string): StartBackoff | undefined {
    return this.backoffs.get(endpointId)
  }

  /**
   * The worker failed for `reason` (it becomes UNHEALTHY): its last lines are kept before its
   * workload goes, and the endpoint starts no worker for a while, longer each time in a row.
   */
  async failed(
    worker: ManagedWorker,
    reason: string,
    driver: RuntimeDriver | undefined,
  ): Promise<void> {
    if (driver) {
      try {
        await this.deps.workers.keepLog(
          worker.id,
          await driver.readLogs(worker.id, { tail: KEPT_LOG_LINES }),
        )
      } catch (error) {
        this.deps.logger.warn(
          { err: error, workerId: worker.id },
          'could not keep the output of a failed worker',
        )
      }
    }
    const backoff = afterFailure(
      this.backoffs.get(worker.endpointId),
      { endpointId: worker.endpointId, workerId: worker.id, reason },
      this.deps.clock.now().getTime(),
      this.limits,
    )
    await this.deps.backoffs.put(backoff)
    this.backoffs.set(worker.endpointId, backoff)
    this.deps.logger.warn(
      {
        endpointId: worker.endpointId,
        workerId: worker.id,
        reason,
        failures: backoff.failures,
        nextStartAt: backoff.nextStartAt,
      },
      'worker failed; the endpoint starts no worker until nextStartAt',
    )
  }

  /** A worker of the endpoint asked for a job: its workers start normally again. */
  async startedHealthy(endpointId: string): Promise<void> {
    if (!this.backoffs.has(endpointId)) return
    await this.deps.backoffs.delete(endpointId)
    this.backoffs.delete(endpointId)
    this.deps.logger.info({ endpointId }, 'a worker started healthy; the start backoff ends')
  }

  /**
   * The endpoint has a new version (image, command, env...): what crashed was the old one, so the
   * new one starts at once rather than after the old one's backoff.
   */
  async versionChanged(endpointId: string, version: number): Promise<void> {
    const backoff =
      this.backoffs.get(endpointId) ??
      (await this.deps.backoffs.list()).find((b) => b.endpointId === endpointId)
    if (!backoff) return
    await this.deps.backoffs.delete(endpointId)
    this.backoffs.delete(endpointId)
    this.deps.logger.info(
      { endpointId, version },
      'the endpoint has a new version; the start backoff ends',
    )
  }

  /** The last lines of the failed worker's output, oldest first; none when none were kept. */
  async lastLines(workerId: string): Promise<string[]> {
    const kept = await this.deps.workers.keptLog(workerId)
    return (kept ?? []).slice(-LAST_FAILURE_LINES).map((l) => l.line)
  }

  /** The lines kept for a failed worker as `query` asks, or undefined when none were kept. */
  async readKept(worker: ManagedWorker, query: PodLogQuery): Promise<PodLogLine[] | undefined> {
    const kept = await this.deps.workers.keptLog(worker.id)
    return kept && select(kept, query)
  }

  /** The worker is no longer listed: its kept lines go. */
  forgetLog(workerId: string): Promise<void> {
    return this.deps.workers.dropKeptLog(workerId)
  }
}
