import type { Kysely, Selectable } from 'kysely'
import type { Allocation, AllocationOwnerKind } from '../domain/catalog/capacity.js'
import type { AllocationRepo } from '../domain/catalog/ports.js'
import type { AllocationsTable, Database } from './database-schema.js'
import { podStatements } from './pod-statements.js'
import { changesOf, rowsOf } from './raw-sql.js'

const toAllocation = (row: Selectable<AllocationsTable>): Allocation => ({
  id: row.id,
  hostId: row.host_id,
  ownerKind: row.owner_kind as AllocationOwnerKind,
  ownerId: row.owner_id,
  gpuCount: row.gpu_count,
  gpuIndices: JSON.parse(row.gpu_indices) as number[],
  vcpus: row.vcpus,
  memoryGb: row.memory_gb,
  diskGb: row.disk_gb,
  createdAt: row.created_at,
})

export class KyselyAllocationRepo implements AllocationRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async list(): Promise<Allocation[]> {
    const rows = await this.db
      .selectFrom('allocations')
      .selectAll()
      .orderBy('created_at')
      .orderBy('id')
      .execute()
    return rows.map(toAllocation)
  }

  async listByHost(hostId: string): Promise<Allocation[]> {
    const rows = await this.db
      .selectFrom('allocations')
      .selectAll()
      .where('host_id', '=', hostId)
      .orderBy('created_at')
      .orderBy('id')
      .execute()
    return rows.map(toAllocation)
  }

  async insert(allocation: Allocation): Promise<void> {
    await changesOf(this.db, podStatements.allocationInsert, [
      allocation.id,
      allocation.hostId,
      allocation.ownerKind,
      allocation.ownerId,
      allocation.gpuCount,
      // A JSON string fits both columns: SQLite text and PostgreSQL jsonb (cast on insert).
      JSON.stringify(allocation.gpuIndices),
      allocation.vcpus,
      allocation.memoryGb,
      allocation.diskGb,
      allocation.createdAt,
    ])
  }

  async remove(ownerKind: AllocationOwnerKind, ownerId: string): Promise<boolean> {
    const statement = podStatements.allocationDelete
    return (await changesOf(this.db, statement, [ownerKind, ownerId])) > 0
  }

  async findByOwner(
    ownerKind: AllocationOwnerKind,
    ownerId: string,
  ): Promise<Allocation | undefined> {
    const statement = podStatements.allocationByOwner
    const [row] = await rowsOf<Selectable<AllocationsTable>>(this.db, statement, [
      ownerKind,
      ownerId,
    ])
    return row && toAllocation(row)
  }
}
