import { AppError } from '../../shared/app-error.js'
import type { Clock } from '../../shared/clock.js'
import { followEvents } from '../pods/event-follow.js'
import type { LogSource, PodEventRepo, PodLogLine, PodLogQuery } from '../pods/ports.js'
import type { EndpointService } from './endpoint-service.js'
import type { StartBackoffView } from './start-backoff.js'
import type { ManagedWorker, WorkerRepo, WorkerStatus } from './worker.js'

/**
 * What runs the workers knows of them: their status now, their output, and why the endpoint's
 * workers fail to start.
 */
export interface WorkerObserver {
  statusOf(worker: ManagedWorker): WorkerStatus
  startBackoff(endpointId: string): Promise<StartBackoffView | null>
  readLogs(worker: ManagedWorker, query: PodLogQuery): Promise<PodLogLine[]>
  followLogs(
    worker: ManagedWorker,
    afterSeq: number,
    signal: AbortSignal,
  ): AsyncIterable<PodLogLine>
}

/** One line of the workers list (wire-compat §3.3). */
export interface WorkerListItem {
  id: string
  status: WorkerStatus
  /** Started from an older version of the endpoint: it drains and is replaced. */
  isStale: boolean
  version: number
  gpuCount: number
  image: string
  uptimeSeconds: number
  gpuTypeId: string | null
  dataCenterId: string | null
  startedAt: string | null
  /** Why it is THROTTLED or UNHEALTHY, or that it is moving off a draining host (ours). */
  reason: string | null
}

export interface WorkerList {
  endpointVersion: number
  summary: {
    running: number
    idle: number
    initializing: number
    throttled: number
    unhealthy: number
    total: number
  }
  workers: WorkerListItem[]
  /**
   * Ours, only while the endpoint's workers fail in a row: how many, the last failure and when
   * the next worker starts (docs/serverless-workers.md, "Crash loops").
   */
  startBackoff?: StartBackoffView
}

export interface WorkerServiceDeps {
  endpoints: EndpointService
  repo: WorkerRepo
  observer: WorkerObserver
  clock: Clock
  /** The workers' system logs (what the autoscaler did with each); none without it. */
  events?: Pick<PodEventRepo, 'list'>
}

/** The workers the platform runs for an account's endpoints, as their owner sees them. */
export class WorkerService {
  constructor(private readonly deps: WorkerServiceDeps) {}

  async list(accountId: string, endpointId: string): Promise<WorkerList> {
    const endpoint = await this.deps.endpoints.get(accountId, endpointId)
    const now = this.deps.clock.now().getTime()
    const summary = { running: 0, idle: 0, initializing: 0, throttled: 0, unhealthy: 0, total: 0 }
    const listed = (await this.deps.repo.listByEndpoint(endpoint.id)).filter(
      (worker) => worker.phase !== 'STOPPED',
    )
    const workers = listed.map((worker) => {
      const status = this.deps.observer.statusOf(worker)
      const key = status.toLowerCase() as Lowercase<WorkerStatus>
      summary[key] += 1
      summary.total += 1
      const live = worker.startedAt !== null && status !== 'UNHEALTHY'
      return {
        id: worker.id,
        status,
        isStale: worker.version !== endpoint.version,
        version: worker.version,
        gpuCount: worker.gpuCount,
        image: worker.image,
        uptimeSeconds: live
          ? Math.max(0, Math.floor((now - Date.parse(worker.startedAt!)) / 1000))
          : 0,
        gpuTypeId: worker.gpuTypeId,
        dataCenterId: worker.dataCenterId,
        startedAt: worker.startedAt,
        reason: worker.reason,
      } satisfies WorkerListItem
    })
    const backoff = await this.deps.observer.startBackoff(endpoint.id)
    return {
      endpointVersion: endpoint.version,
      summary,
      workers,
      ...(backoff ? { startBackoff: backoff } : {}),
    }
  }

  /**
   * The account's worker of the endpoint, listed or not: a worker that was stopped or replaced
   * is found (its logs stay readable) until its record goes, 24 h after it stopped
   * (STOPPED_WORKER_RETENTION_MS). Anything else is 404.
   */
  async get(accountId: string, endpointId: string, workerId: string): Promise<ManagedWorker> {
    const endpoint = await this.deps.endpoints.get(accountId, endpointId)
    const worker = await this.deps.repo.get(workerId)
    if (!worker || worker.endpointId !== endpoint.id) {
      throw new AppError('NOT_FOUND', `worker ${workerId} of endpoint ${endpoint.id} not found`)
    }
    return worker
  }

  /** `container`: the worker's output; `system`: what the platform did with it. */
  async readLogs(
    worker: ManagedWorker,
    source: LogSource,
    query: PodLogQuery,
  ): Promise<PodLogLine[]> {
    if (source === 'container') return this.deps.observer.readLogs(worker, query)
    return this.deps.events ? this.deps.events.list(worker.id, query) : []
  }

  async *followLogs(
    worker: ManagedWorker,
    source: LogSource,
    afterSeq: number,
    signal: AbortSignal,
  ): AsyncIterable<PodLogLine> {
    if (source === 'container') {
      yield* this.deps.observer.followLogs(worker, afterSeq, signal)
    } else if (this.deps.events) {
      // A failed or stopped worker is gone: like its kept output, its story ends with what is
      // recorded.
      if (worker.phase === 'UNHEALTHY' || worker.phase === 'STOPPED') {
        yield* await this.deps.events.list(worker.id, { afterSeq })
      } else yield* followEvents(this.deps.events, worker.id, afterSeq, signal)
    }
  }
}
