import { sql, type Kysely } from 'kysely'
import type { Pod } from '../domain/pods/pod.js'
import type {
  CapacityUnit,
  PodEventRepo,
  PodFilter,
  PodLogLine,
  PodRepo,
  PodStore,
} from '../domain/pods/ports.js'
import type { Host } from '../domain/catalog/fleet.js'
import { AllocationLedger } from './allocation-ledger.js'
import { KyselyAllocationRepo } from './allocation-repo.js'
import { eventAppendMany, podStatements } from './pod-statements.js'
import { readAccountPools } from './account-pool-repo.js'
import { readQuotaUse } from './quota-repo.js'
import { changesOf, rowsOf } from './raw-sql.js'
import type { Database } from './database-schema.js'
import type { Store } from './open-store.js'
import { WriteBatcher } from '../shared/write-batcher.js'

function columnsOf(pod: Pod) {
  return {
    id: pod.id,
    account_id: pod.accountId,
    name: pod.name,
    status: pod.status,
    host_id: pod.hostId,
    version: pod.version,
    created_at: pod.createdAt,
    terminated_at: pod.terminatedAt,
    doc: JSON.stringify(pod),
  }
}

export class KyselyPodRepo implements PodRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(pod: Pod): Promise<void> {
    const c = columnsOf(pod)
    await changesOf(this.db, podStatements.podInsert, [
      c.id,
      c.account_id,
      c.name,
      c.status,
      c.host_id,
      c.version,
      c.created_at,
      c.terminated_at,
      c.doc,
    ])
  }

  async findById(id: string): Promise<Pod | undefined> {
    const [row] = await rowsOf<{ doc: string }>(this.db, podStatements.podById, [id])
    return row && (JSON.parse(row.doc) as Pod)
  }

  async list(filter: PodFilter): Promise<Pod[]> {
    let query = this.db.selectFrom('pods').select('doc')
    if (filter.accountId !== undefined) query = query.where('account_id', '=', filter.accountId)
    if (filter.statuses !== undefined) query = query.where('status', 'in', filter.statuses)
    if (filter.name !== undefined) query = query.where('name', '=', filter.name)
    const rows = await query.orderBy('created_at').orderBy('id').execute()
    return rows.map((row) => JSON.parse(row.doc) as Pod)
  }

  async update(pod: Pod): Promise<boolean> {
    const c = columnsOf(pod)
    const changed = await changesOf(this.db, podStatements.podUpdate, [
      c.account_id,
      c.name,
      c.status,
      c.host_id,
      c.version,
      c.created_at,
      c.terminated_at,
      c.doc,
      pod.id,
      pod.version - 1,
    ])
    return changed === 1
  }

  async purgeTerminated(before: string): Promise<string[]> {
    const rows = await this.db
      .deleteFrom('pods')
      .where('status', '=', 'TERMINATED')
      .where('terminated_at', '<', before)
      .returning('id')
      .execute()
    if (rows.length > 0) {
      await this.db
        .deleteFrom('pod_events')
        .where(
          'pod_id',
          'in',
          rows.map((r) => r.id),
        )
        .execute()
    }
    return rows.map((r) => r.id)
  }
}

/** The most system log lines one insert writes. */
const EVENT_BATCH = 64

export class KyselyPodEventRepo implements PodEventRepo {
  /**
   * Lines are group-committed (shared/write-batcher.ts): each pod's start writes three or four,
   * and on SQLite a commit of its own costs several times the line (bench/README.md). The
   * lines of one batch are inserted in the order they were appended, so one pod's keep theirs.
   */
  private readonly appends: WriteBatcher<[string, string, string], void>

  constructor(private readonly db: Kysely<Database>) {
    this.appends = new WriteBatcher({
      writeOne: async (event) => {
        await changesOf(this.db, podStatements.eventAppend, event)
      },
      writeBatch: async (events) => {
        await changesOf(this.db, eventAppendMany(events.length), events.flat())
        return events.map(() => undefined)
      },
      maxBatch: EVENT_BATCH,
    })
  }

  append(podId: string, ts: string, line: string): Promise<void> {
    return this.appends.write([podId, ts, line])
  }

  async list(
    podId: string,
    query: { afterSeq?: number; tail?: number; since?: string },
  ): Promise<PodLogLine[]> {
    let select = this.db
      .selectFrom('pod_events')
      .select(['seq', 'ts', 'line'])
      .where('pod_id', '=', podId)
    if (query.afterSeq !== undefined) select = select.where('seq', '>', query.afterSeq)
    if (query.since !== undefined) select = select.where('ts', '>=', query.since)
    const rows =
      query.tail !== undefined
        ? (await select.orderBy('seq', 'desc').limit(query.tail).execute()).reverse()
        : await select.orderBy('seq').execute()
    return rows.map((r) => ({ seq: Number(r.seq), ts: r.ts, line: r.line }))
  }
}

/** Any constant works; it only has to be the same for every replica of this application. */
const CAPACITY_LOCK_KEY = 7_341_001

function unitOf(db: Kysely<Database>): CapacityUnit {
  const allocations = new KyselyAllocationRepo(db)
  return {
    pods: new KyselyPodRepo(db),
    allocations,
    holdings: () => allocations.list(),
    quotaUse: (accountId) => readQuotaUse(db, accountId),
    accountPools: (accountId) => readAccountPools(db, accountId),
  }
}

async function lockCapacity(db: Kysely<Database>, store: Store): Promise<void> {
  // SQLite has one connection and Kysely runs one transaction at a time on it, so the
  // transaction itself is exclusive. PostgreSQL needs a lock every replica takes.
  if (store.capabilities.advisoryLocks)
    await sql`select pg_advisory_xact_lock(${CAPACITY_LOCK_KEY})`.execute(db)
}

/**
 * The store as pods need it. Given the fleet's hosts, capacity units place from an index of
 * the allocations kept in memory (allocation-ledger.ts); without, from every allocation read
 * afresh.
 */
/**
 * @param hosts the hosts placement chooses from (as they offer themselves): with them, capacity
 *   units keep an index of the allocations over these hosts
 */
export function podStoreOf(
  store: Store,
  hosts?: readonly Host[] | (() => readonly Host[]),
): PodStore {
  const events = new KyselyPodEventRepo(store.db)
  if (!hosts) {
    return {
      ...unitOf(store.db),
      events,
      exclusive: (work) =>
        store.db.transaction().execute(async (tx) => {
          await lockCapacity(tx, store)
          return work(unitOf(tx))
        }),
    }
  }
  const ledger = new AllocationLedger(store.db, hosts, store.capabilities.sharedByReplicas)
  const pods = new KyselyPodRepo(store.db)
  return {
    pods,
    allocations: ledger.repo(),
    holdings: () => new KyselyAllocationRepo(store.db).list(),
    quotaUse: (accountId) => readQuotaUse(store.db, accountId),
    accountPools: (accountId) => readAccountPools(store.db, accountId),
    events,
    exclusive: (work) =>
      ledger.exclusive(
        (tx) => lockCapacity(tx, store),
        (tx, allocations) =>
          work({
            pods: new KyselyPodRepo(tx),
            allocations,
            holdings: async () => allocations.index,
            quotaUse: (accountId) => readQuotaUse(tx, accountId),
            accountPools: (accountId) => readAccountPools(tx, accountId),
          }),
      ),
  }
}
