import type { Kysely, Selectable } from 'kysely'
import {
  WORKER_PRESENCE_WINDOW_MS,
  type WorkerPresence,
  type WorkerRecord,
} from '../domain/serverless/worker-presence.js'
import type { Database, WorkerPresenceTable } from './database-schema.js'
import { retryLockConflicts } from '../shared/lock-conflict-retry.js'
import type { TimerClock } from '../shared/clock.js'
import { ReconcileLoop } from '../shared/reconcile-loop.js'

/** How often each replica publishes the workers it saw and reads everyone's. */
export const SHARED_PRESENCE_SYNC_MS = 1_000

export interface SharedWorkerPresenceDeps {
  /** The clock its loop's timers wait on (default: the system clock): a ManualClock drives it. */
  timers?: TimerClock
  db: Kysely<Database>
  presence: WorkerPresence
  /** The presence's clock (its records' times), in ms. */
  now: () => number
  intervalMs?: number
  logger: { warn(fields: object, message: string): void }
}

/**
 * Worker presence shared by the replicas (docs/production.md, "Several replicas"): every
 * interval each replica upserts the workers it saw since the last sync into `worker_presence`
 * (the later sighting of a worker wins, whichever replica made it), deletes the ones it forgot
 * (stopped workers), and replaces its own view with the table's. A worker that alternates
 * between replicas is IDLE or RUNNING alike on all of them, up to one interval late; jobs a
 * worker took on two replicas within one interval may be known only by its next call or ping.
 */
export class SharedWorkerPresence {
  private readonly ticks: ReconcileLoop

  constructor(private readonly deps: SharedWorkerPresenceDeps) {
    this.ticks = new ReconcileLoop({
      clock: deps.timers,
      pass: () => this.sync(),
      intervalMs: deps.intervalMs ?? SHARED_PRESENCE_SYNC_MS,
      onError: (error) => deps.logger.warn({ err: error }, 'syncing worker presence failed'),
    })
  }

  start(): void {
    this.ticks.start()
  }

  async stop(): Promise<void> {
    await this.ticks.stop()
  }

  /** One publish and one read; exposed for tests. */
  async sync(): Promise<void> {
    const { db, presence } = this.deps
    const changes = presence.takeChanges()
    try {
      if (changes.seen.length > 0) {
        // In one order on every replica (by endpoint, then worker): two replicas upserting the
        // same workers lock their rows in that order, so they never deadlock; PostgreSQL's
        // serialization failures and deadlocks with other writers are retried.
        const rows = changes.seen.map(rowOf).sort(byKey)
        await retryLockConflicts(() =>
          db
            .insertInto('worker_presence')
            .values(rows)
            .onConflict((oc) =>
              oc
                .columns(['endpoint_id', 'worker_id'])
                .doUpdateSet((eb) => ({
                  last_seen_ms: eb.ref('excluded.last_seen_ms'),
                  job_ids: eb.ref('excluded.job_ids'),
                  unhealthy: eb.ref('excluded.unhealthy'),
                  recycle: eb.ref('excluded.recycle'),
                }))
                .where('excluded.last_seen_ms', '>=', (eb) =>
                  eb.ref('worker_presence.last_seen_ms'),
                ),
            )
            .execute(),
        )
      }
      for (const gone of changes.forgotten) {
        await db
          .deleteFrom('worker_presence')
          .where('endpoint_id', '=', gone.endpointId)
          .where('worker_id', '=', gone.workerId)
          .execute()
      }
    } catch (error) {
      presence.returnChanges(changes)
      throw error
    }
    const since = this.deps.now() - WORKER_PRESENCE_WINDOW_MS
    await retryLockConflicts(() =>
      db.deleteFrom('worker_presence').where('last_seen_ms', '<', since).execute(),
    )
    const rows = await db
      .selectFrom('worker_presence')
      .selectAll()
      .where('last_seen_ms', '>=', since)
      .execute()
    presence.replaceAll(rows.map(recordOf))
  }
}

function byKey(
  a: { endpoint_id: string; worker_id: string },
  b: { endpoint_id: string; worker_id: string },
): number {
  if (a.endpoint_id !== b.endpoint_id) return a.endpoint_id < b.endpoint_id ? -1 : 1
  return a.worker_id < b.worker_id ? -1 : a.worker_id > b.worker_id ? 1 : 0
}

function rowOf(record: WorkerRecord) {
  return {
    endpoint_id: record.endpointId,
    worker_id: record.workerId,
    last_seen_ms: record.lastSeenAt,
    job_ids: JSON.stringify([...record.jobIds]),
    unhealthy: record.unhealthy ? JSON.stringify(record.unhealthy) : null,
    recycle: record.recycle ? 1 : 0,
  }
}

function recordOf(row: Selectable<WorkerPresenceTable>): WorkerRecord {
  const record: WorkerRecord = {
    endpointId: row.endpoint_id,
    workerId: row.worker_id,
    lastSeenAt: Number(row.last_seen_ms),
    jobIds: new Set(JSON.parse(row.job_ids) as string[]),
    recycle: Number(row.recycle) === 1,
  }
  if (row.unhealthy !== null) {
    record.unhealthy = JSON.parse(row.unhealthy) as { check: string; reason: string }
  }
  return record
}
