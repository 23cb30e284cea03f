import type { Kysely } from 'kysely'
import type {
  HostFacts,
  HostHealth,
  HostSchedule,
  HostStateRecord,
} from '../domain/hosts/host-state.js'
import type { HostStateRepo } from '../domain/hosts/ports.js'
import type { Database, HostStatesTable } from './database-schema.js'

function toRecord(row: HostStatesTable): HostStateRecord {
  return {
    hostId: row.host_id,
    state: row.state as HostHealth,
    reason: row.reason,
    since: row.since,
    checkedAt: row.checked_at,
    facts: row.facts === null ? null : (JSON.parse(row.facts) as HostFacts),
    warnings: JSON.parse(row.warnings) as string[],
    schedule: row.schedule as HostSchedule,
  }
}

export class KyselyHostStateRepo implements HostStateRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async list(): Promise<HostStateRecord[]> {
    const rows = await this.db.selectFrom('host_states').selectAll().orderBy('host_id').execute()
    return rows.map(toRecord)
  }

  async saveProbe(record: Omit<HostStateRecord, 'schedule'>): Promise<void> {
    const probed = {
      state: record.state,
      reason: record.reason,
      since: record.since,
      checked_at: record.checkedAt,
      facts: record.facts === null ? null : JSON.stringify(record.facts),
      warnings: JSON.stringify(record.warnings),
    }
    await this.db
      .insertInto('host_states')
      .values({
        host_id: record.hostId,
        ...probed,
        schedule: 'ACTIVE',
        schedule_changed_at: null,
      })
      .onConflict((oc) => oc.column('host_id').doUpdateSet(probed))
      .execute()
  }

  async setSchedule(hostId: string, schedule: HostSchedule, at: string): Promise<void> {
    await this.db
      .insertInto('host_states')
      .values({
        host_id: hostId,
        state: 'UNKNOWN',
        reason: null,
        since: at,
        checked_at: null,
        facts: null,
        warnings: '[]',
        schedule,
        schedule_changed_at: at,
      })
      .onConflict((oc) => oc.column('host_id').doUpdateSet({ schedule, schedule_changed_at: at }))
      .execute()
  }
}
