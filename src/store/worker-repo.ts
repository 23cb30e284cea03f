import type { Kysely, Selectable } from 'kysely'
import type { PodLogLine } from '../domain/pods/ports.js'
import type { ManagedWorker, WorkerPhase, WorkerRepo } from '../domain/serverless/worker.js'
import type { Database, WorkersTable } from './database-schema.js'

const isoOrNull = (value: string | null) => (value === null ? null : new Date(value).toISOString())

function toWorker(row: Selectable<WorkersTable>): ManagedWorker {
  return {
    id: row.id,
    endpointId: row.endpoint_id,
    accountId: row.account_id,
    version: Number(row.version),
    keyGeneration: Number(row.key_generation),
    phase: row.phase as WorkerPhase,
    reason: row.reason,
    hostId: row.host_id,
    dataCenterId: row.data_center_id,
    gpuTypeId: row.gpu_type_id,
    cpuFlavorId: row.cpu_flavor_id,
    gpuCount: Number(row.gpu_count),
    gpuIndices: JSON.parse(row.gpu_indices) as number[],
    vcpus: Number(row.vcpus),
    memoryGb: Number(row.memory_gb),
    image: row.image,
    createdAt: new Date(row.created_at).toISOString(),
    startedAt: isoOrNull(row.started_at),
    phaseChangedAt: new Date(row.phase_changed_at).toISOString(),
  }
}

function toRow(worker: ManagedWorker): WorkersTable {
  return {
    id: worker.id,
    endpoint_id: worker.endpointId,
    account_id: worker.accountId,
    version: worker.version,
    key_generation: worker.keyGeneration,
    phase: worker.phase,
    reason: worker.reason,
    host_id: worker.hostId,
    data_center_id: worker.dataCenterId,
    gpu_type_id: worker.gpuTypeId,
    cpu_flavor_id: worker.cpuFlavorId,
    gpu_count: worker.gpuCount,
    gpu_indices: JSON.stringify(worker.gpuIndices),
    vcpus: worker.vcpus,
    memory_gb: worker.memoryGb,
    image: worker.image,
    created_at: worker.createdAt,
    started_at: worker.startedAt,
    phase_changed_at: worker.phaseChangedAt,
  }
}

export class KyselyWorkerRepo implements WorkerRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(worker: ManagedWorker): Promise<void> {
    await this.db.insertInto('workers').values(toRow(worker)).execute()
  }

  async update(worker: ManagedWorker): Promise<void> {
    const { id: _id, ...fields } = toRow(worker)
    await this.db.updateTable('workers').set(fields).where('id', '=', worker.id).execute()
  }

  async delete(id: string): Promise<void> {
    await this.db.deleteFrom('workers').where('id', '=', id).execute()
    // Its system log (pod_events, keyed by the worker id) and its kept output go with it.
    await this.db.deleteFrom('pod_events').where('pod_id', '=', id).execute()
    await this.dropKeptLog(id)
  }

  async get(id: string): Promise<ManagedWorker | undefined> {
    const row = await this.db
      .selectFrom('workers')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst()
    return row && toWorker(row)
  }

  async listByEndpoint(endpointId: string): Promise<ManagedWorker[]> {
    const rows = await this.db
      .selectFrom('workers')
      .selectAll()
      .where('endpoint_id', '=', endpointId)
      .orderBy('created_at')
      .orderBy('id')
      .execute()
    return rows.map(toWorker)
  }

  async listAll(): Promise<ManagedWorker[]> {
    const rows = await this.db
      .selectFrom('workers')
      .selectAll()
      .orderBy('created_at')
      .orderBy('id')
      .execute()
    return rows.map(toWorker)
  }

  async keepLog(workerId: string, lines: PodLogLine[]): Promise<void> {
    const text = JSON.stringify(lines.map(({ seq, ts, line }) => ({ seq, ts, line })))
    await this.db
      .insertInto('worker_kept_logs')
      .values({ worker_id: workerId, lines: text })
      .onConflict((oc) => oc.column('worker_id').doUpdateSet({ lines: text }))
      .execute()
  }

  async keptLog(workerId: string): Promise<PodLogLine[] | undefined> {
    const row = await this.db
      .selectFrom('worker_kept_logs')
      .select('lines')
      .where('worker_id', '=', workerId)
      .executeTakeFirst()
    return row && (JSON.parse(row.lines) as PodLogLine[])
  }

  async dropKeptLog(workerId: string): Promise<void> {
    await this.db.deleteFrom('worker_kept_logs').where('worker_id', '=', workerId).execute()
  }
}
