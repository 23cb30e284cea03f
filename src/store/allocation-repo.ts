import type { Kysely, Selectable } from 'kysely'
import type { Allocation, AllocationOwnerKind } from '../domain/catalog/capacity.js'
import type { AllocationRepo } from '../domain/catalog/ports.js'
import type { AllocationsTable, Database } from './database-schema.js'

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
    await this.db
      .insertInto('allocations')
      .values({
        id: allocation.id,
        host_id: allocation.hostId,
        owner_kind: allocation.ownerKind,
        owner_id: allocation.ownerId,
        gpu_count: allocation.gpuCount,
        // A JSON string fits both columns: SQLite text and PostgreSQL jsonb (cast on insert).
        gpu_indices: JSON.stringify(allocation.gpuIndices),
        vcpus: allocation.vcpus,
        memory_gb: allocation.memoryGb,
        disk_gb: allocation.diskGb,
        created_at: allocation.createdAt,
      })
      .execute()
  }

  async remove(ownerKind: AllocationOwnerKind, ownerId: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('allocations')
      .where('owner_kind', '=', ownerKind)
      .where('owner_id', '=', ownerId)
      .executeTakeFirst()
    return Number(result.numDeletedRows) > 0
  }

  async findByOwner(
    ownerKind: AllocationOwnerKind,
    ownerId: string,
  ): Promise<Allocation | undefined> {
    const row = await this.db
      .selectFrom('allocations')
      .selectAll()
      .where('owner_kind', '=', ownerKind)
      .where('owner_id', '=', ownerId)
      .executeTakeFirst()
    return row && toAllocation(row)
  }
}
