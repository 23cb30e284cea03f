import type { Kysely } from 'kysely'
import type { LimitedOperation, OperationUsage } from '../domain/serverless/operation-limits.js'
import type { Database } from './database-schema.js'
import type { TimerClock } from '../shared/clock.js'
import { ReconcileLoop } from '../shared/reconcile-loop.js'

/** How often each replica publishes its job API counters and reads the others'. */
export const SHARED_LIMITS_SYNC_MS = 1_000
/**
 * A replica's requests in flight count for this long after it last wrote them: a replica that
 * died (or lost the database) stops holding back the others' concurrency after a few syncs.
 */
const IN_FLIGHT_STALE_MS = 5_000
/** Rows nobody has written for this long are deleted (a window is 10 s). */
const ROW_RETENTION_MS = 60_000

export interface SharedJobLimitsDeps {
  /** The clock its loop's timers wait on (default: the system clock): a ManualClock drives it. */
  timers?: TimerClock
  db: Kysely<Database>
  replicaId: string
  /** This replica's counters, and where the others' go (JobLimiter.usage / setOthers). */
  limiter: { usage(): OperationUsage[]; setOthers(usage: OperationUsage[]): void }
  now?: () => number
  intervalMs?: number
  logger: { warn(fields: object, message: string): void }
}

/**
 * The job API limits of several replicas (docs/production.md, "Several replicas"): every
 * interval each replica writes its own counters to `job_rate_counts` (one row per endpoint,
 * operation and replica) and reads the other replicas' rows. The hot path never waits for the
 * database; the price is that the others' requests are seen up to one interval late, so in the
 * worst case the cluster admits about one interval's worth of the other replicas' traffic over
 * a limit.
 */
export class SharedJobLimits {
  private readonly ticks: ReconcileLoop
  private readonly written = new Set<string>()
  private readonly now: () => number

  constructor(private readonly deps: SharedJobLimitsDeps) {
    this.now = deps.now ?? Date.now
    this.ticks = new ReconcileLoop({
      clock: deps.timers,
      pass: () => this.sync(),
      intervalMs: deps.intervalMs ?? SHARED_LIMITS_SYNC_MS,
      onError: (error) => deps.logger.warn({ err: error }, 'syncing the job API counters failed'),
    })
  }

  start(): void {
    this.ticks.start()
  }

  async stop(): Promise<void> {
    await this.ticks.stop()
    // Leaving: this replica's requests no longer count anywhere.
    await this.deps.db
      .deleteFrom('job_rate_counts')
      .where('replica_id', '=', this.deps.replicaId)
      .execute()
      .catch(() => undefined)
  }

  /** One write and one read; exposed for tests. */
  async sync(): Promise<void> {
    const now = this.now()
    const { db, replicaId } = this.deps
    const usage = this.deps.limiter.usage()
    const current = new Set(usage.map((u) => `${u.endpointId}\u0000${u.operation}`))
    const rows = usage.map((u) => ({
      endpoint_id: u.endpointId,
      operation: u.operation,
      replica_id: replicaId,
      window_start_ms: u.windowStart,
      count: u.count,
      in_flight: u.inFlight,
      updated_at_ms: now,
    }))
    if (rows.length > 0) {
      await db
        .insertInto('job_rate_counts')
        .values(rows)
        .onConflict((oc) =>
          oc.columns(['endpoint_id', 'operation', 'replica_id']).doUpdateSet((eb) => ({
            window_start_ms: eb.ref('excluded.window_start_ms'),
            count: eb.ref('excluded.count'),
            in_flight: eb.ref('excluded.in_flight'),
            updated_at_ms: eb.ref('excluded.updated_at_ms'),
          })),
        )
        .execute()
    }
    // Counters the limiter has forgotten (idle since a past window) are no longer anyone's.
    for (const key of this.written) {
      if (current.has(key)) continue
      const [endpointId, operation] = key.split('\u0000') as [string, string]
      await db
        .deleteFrom('job_rate_counts')
        .where('endpoint_id', '=', endpointId)
        .where('operation', '=', operation)
        .where('replica_id', '=', replicaId)
        .execute()
      this.written.delete(key)
    }
    for (const key of current) this.written.add(key)
    await db
      .deleteFrom('job_rate_counts')
      .where('updated_at_ms', '<', now - ROW_RETENTION_MS)
      .execute()
    const others = await db
      .selectFrom('job_rate_counts')
      .selectAll()
      .where('replica_id', '!=', replicaId)
      .execute()
    this.deps.limiter.setOthers(
      others.map((row) => ({
        endpointId: row.endpoint_id,
        operation: row.operation as LimitedOperation,
        windowStart: Number(row.window_start_ms),
        count: Number(row.count),
        inFlight: Number(row.updated_at_ms) >= now - IN_FLIGHT_STALE_MS ? Number(row.in_flight) : 0,
      })),
    )
  }
}
