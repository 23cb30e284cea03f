import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { Config } from '../config/schema.js'
import type { Clock } from '../shared/clock.js'
import { SCALE_DOWN_REASONS } from '../control/worker-autoscaler.js'
import { POD_STATUSES } from '../domain/pods/pod.js'
import type { JobEnd, JobEvents } from '../domain/serverless/job-events.js'
import type { WorkerPresence } from '../domain/serverless/worker-presence.js'
import type { WorkerPhase } from '../domain/serverless/worker.js'
import type { Store } from '../store/open-store.js'
import { PlatformCounts } from '../store/platform-counts.js'
import { EndpointLabels, OTHER_ENDPOINTS } from './endpoint-labels.js'

const WORKER_PHASES: readonly WorkerPhase[] = ['PENDING', 'STARTING', 'READY', 'UNHEALTHY']
const JOB_ENDS: readonly JobEnd[] = ['COMPLETED', 'FAILED', 'TIMED_OUT', 'CANCELLED']
/** Seconds: from a second (a warm worker) to an hour (a cold start behind a long queue). */
const JOB_SECONDS = [0.05, 0.25, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600]

/**
 * The platform's own metrics at `/metrics` besides HTTP and the process (docs/production.md,
 * "Monitoring"): jobs, the queue, workers, pods, the autoscaler, webhooks, the database and the
 * billing meter. Every label takes a bounded set of values: the job and queue metrics' `endpoint`
 * is the id of at most `telemetry.endpointLabels` endpoints, `other` for the rest (EndpointLabels).
 */
export interface PlatformMetrics {
  readonly registry: Registry
  readonly jobs: JobEvents
  onScale(direction: 'up' | 'down', reason: string, count: number): void
  onWebhookAttempt(outcome: 'delivered' | 'retry' | 'gave_up'): void
  onQuery(seconds: number, failed: boolean): void
  /**
   * The gauges read when `/metrics` is: from the store, the workers that connect by themselves
   * (`presence`, as `/health` counts them), and this replica's meter.
   */
  watch(sources: {
    store: Store
    presence: Pick<WorkerPresence, 'everyActive'>
    meter: { meteredThroughMs: number | undefined }
    meterIntervalMs: number
    /** The platform's clock: the ages compare it with the times it wrote. */
    clock: Clock
  }): void
}

export function platformMetrics(config: Pick<Config, 'telemetry'>): PlatformMetrics {
  const registry = new Registry()
  const endpoints = new EndpointLabels(config.telemetry.endpointLabels)
  const withEndpoint = (endpointId: string, labels: Record<string, string> = {}) => ({
    ...labels,
    endpoint: endpoints.of(endpointId),
  })

  const submitted = new Counter({
    name: 'podyard_jobs_submitted_total',
    help: 'Jobs submitted (/run, /runsync, OpenAI routes, public models)',
    labelNames: ['endpoint'],
    registers: [registry],
  })
  const ended = new Counter({
    name: 'podyard_jobs_ended_total',
    help: 'Jobs that ended, by status: COMPLETED, FAILED, TIMED_OUT, CANCELLED',
    labelNames: ['status', 'endpoint'],
    registers: [registry],
  })
  // `other` is always there, 0 until there are more endpoints than the cap: rates and alerts
  // have a series to read before the first job.
  for (const status of JOB_ENDS) ended.inc({ status, endpoint: OTHER_ENDPOINTS }, 0)
  submitted.inc({ endpoint: OTHER_ENDPOINTS }, 0)
  const delay = new Histogram({
    name: 'podyard_job_delay_seconds',
    help: 'From submission to a worker taking the job',
    labelNames: ['endpoint'],
    buckets: JOB_SECONDS,
    registers: [registry],
  })
  const execution = new Histogram({
    name: 'podyard_job_execution_seconds',
    help: 'From a worker taking the job to its result (COMPLETED or FAILED)',
    labelNames: ['endpoint'],
    buckets: JOB_SECONDS,
    registers: [registry],
  })
  const scaled = new Counter({
    name: 'podyard_autoscaler_scale_total',
    help: 'Workers started (direction up, reason the scaler type) and stopped (down, reason why)',
    labelNames: ['direction', 'reason'],
    registers: [registry],
  })
  for (const reason of ['queue_delay', 'request_count']) scaled.inc({ direction: 'up', reason }, 0)
  for (const reason of SCALE_DOWN_REASONS) scaled.inc({ direction: 'down', reason }, 0)
  const webhooks = new Counter({
    name: 'podyard_webhook_attempts_total',
    help: 'Webhook delivery attempts by outcome: delivered, retry (failed, another follows), gave_up',
    labelNames: ['outcome'],
    registers: [registry],
  })
  for (const outcome of ['delivered', 'retry', 'gave_up']) webhooks.inc({ outcome }, 0)
  const queries = new Histogram({
    name: 'podyard_db_query_duration_seconds',
    help: 'Database statements, by outcome (ok or error)',
    labelNames: ['outcome'],
    buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
    registers: [registry],
  })

  return {
    registry,
    jobs: {
      submitted: (endpointId) => submitted.inc(withEndpoint(endpointId)),
      started: (endpointId, delayMs) =>
        delay.observe(withEndpoint(endpointId), Math.max(0, delayMs) / 1000),
      ended: (endpointId, status, executionMs) => {
        ended.inc(withEndpoint(endpointId, { status }))
        if (executionMs !== undefined) {
          execution.observe(withEndpoint(endpointId), executionMs / 1000)
        }
      },
    },
    onScale: (direction, reason, count) => scaled.inc({ direction, reason }, count),
    onWebhookAttempt: (outcome) => webhooks.inc({ outcome }),
    onQuery: (seconds, failed) => queries.observe({ outcome: failed ? 'error' : 'ok' }, seconds),
    watch: (sources) => watchStore(registry, endpoints, sources),
  }
}

/**
 * A gauge's reading from the store: when the store does not answer, the gauge keeps its last
 * value, so that `/metrics` still serves everything else (`/readyz` says the store is down).
 */
async function fromStore(read: () => Promise<void>): Promise<void> {
  try {
    await read()
  } catch {
    // Kept stale on purpose; see above.
  }
}

function watchStore(
  registry: Registry,
  endpoints: EndpointLabels,
  sources: Parameters<PlatformMetrics['watch']>[0],
): void {
  const { store, meter, presence, clock } = sources
  const stored = new PlatformCounts(store.db)
  new Gauge({
    name: 'podyard_queue_depth',
    help: 'Jobs waiting for a worker (IN_QUEUE), by endpoint',
    labelNames: ['endpoint'],
    registers: [registry],
    async collect() {
      await fromStore(async () => {
        const rows = await stored.queuedJobsByEndpoint()
        // The longest queues take the free label values first.
        rows.sort((a, b) => b.count - a.count)
        const depth = new Map<string, number>([[OTHER_ENDPOINTS, 0]])
        for (const row of rows) {
          const endpoint = endpoints.of(row.endpointId)
          depth.set(endpoint, (depth.get(endpoint) ?? 0) + row.count)
        }
        this.reset()
        for (const [endpoint, count] of depth) this.set({ endpoint }, count)
      })
    },
  })
  new Gauge({
    name: 'podyard_queue_oldest_age_seconds',
    help: 'How long the oldest job waiting for a worker has waited (0 when none waits), by endpoint',
    labelNames: ['endpoint'],
    registers: [registry],
    async collect() {
      await fromStore(async () => {
        const rows = await stored.oldestQueuedJobByEndpoint()
        const now = clock.now().getTime()
        const age = new Map<string, number>([[OTHER_ENDPOINTS, 0]])
        for (const row of rows) {
          if (!row.oldest) continue
          const endpoint = endpoints.of(row.endpointId)
          const seconds = Math.max(0, (now - Date.parse(row.oldest)) / 1000)
          age.set(endpoint, Math.max(age.get(endpoint) ?? 0, seconds))
        }
        this.reset()
        for (const [endpoint, seconds] of age) this.set({ endpoint }, seconds)
      })
    },
  })
  new Gauge({
    name: 'podyard_workers',
    help: 'Serverless workers by phase: PENDING (no room), STARTING, READY, UNHEALTHY; those that connect by themselves as READY or UNHEALTHY',
    labelNames: ['phase'],
    registers: [registry],
    async collect() {
      await fromStore(async () => {
        const rows = await stored.workerPhases()
        const counts = new Map<string, number>(WORKER_PHASES.map((phase) => [phase, 0]))
        const managed = new Set<string>()
        for (const row of rows) {
          managed.add(row.id)
          counts.set(row.phase, (counts.get(row.phase) ?? 0) + 1)
        }
        // Workers started by someone else count as /health counts them: idle or running is
        // READY, a worker that reports itself unhealthy is UNHEALTHY.
        for (const record of presence.everyActive()) {
          if (managed.has(record.workerId)) continue
          const phase = record.unhealthy ? 'UNHEALTHY' : 'READY'
          counts.set(phase, counts.get(phase)! + 1)
        }
        for (const phase of WORKER_PHASES) this.set({ phase }, counts.get(phase) ?? 0)
      })
    },
  })
  new Gauge({
    name: 'podyard_pods',
    help: 'Pods by status',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      await fromStore(async () => {
        const rows = await stored.podsByStatus()
        for (const status of POD_STATUSES) {
          this.set({ status }, rows.find((r) => r.status === status)?.count ?? 0)
        }
      })
    },
  })
  const pool = store.pool
  if (pool) {
    new Gauge({
      name: 'podyard_db_pool_connections',
      help: 'PostgreSQL pool connections: total (open), idle, waiting (callers queued for one), max',
      labelNames: ['state'],
      registers: [registry],
      collect() {
        const now = pool()
        for (const state of ['total', 'idle', 'waiting', 'max'] as const) {
          this.set({ state }, now[state])
        }
      },
    })
  }
  new Gauge({
    name: 'podyard_billing_meter_lag_seconds',
    help: "Since the billing meter's last pass on this replica began (it runs on the leader; 0 before the first)",
    registers: [registry],
    collect() {
      const through = meter.meteredThroughMs
      this.set(through === undefined ? 0 : Math.max(0, (clock.now().getTime() - through) / 1000))
    },
  })
}
