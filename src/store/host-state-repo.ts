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

/** Rows of one upsert: well under SQLite's limit of bound parameters (9 per row). */
const PROBES_PER_STATEMENT = 500

export class KyselyHostStateRepo implements HostStateRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async list(): Promise<HostStateRecord[]> {
    const rows = await this.db.selectFrom('host_states').selectAll().orderBy('host_id').execute()
    return rows.map(toRecord)
  }

  async saveProbes(records: ReadonlyArray<Omit<HostStateRecord, 'schedule'>>): Promise<void> {
    if (records.length === 0) return
    // Many hosts at once (a fleet's first probe writes every one): rows in few statements.
    await this.db.transaction().execute(async (tx) => {
      for (let from = 0; from < records.length; from += PROBES_PER_STATEMENT) {
        await tx
          .insertInto('host_states')
          .values(
            records.slice(from, from + PROBES_PER_STATEMENT).map((record) => ({
              host_id: record.hostId,
              state: record.state,
              reason: record.reason,
              since: record.since,
              checked_at: record.checkedAt,
              facts: record.facts === null ? null : JSON.stringify(record.facts),
              warnings: JSON.stringify(record.warnings),
              schedule: 'ACTIVE',
              schedule_changed_at: null,
            })),
          )
          .onConflict((oc) =>
            oc.column('host_id').doUpdateSet((eb) => ({
              state: eb.ref('excluded.state'),
              reason: eb.ref('excluded.reason'),
              since: eb.ref('excluded.since'),
              checked_at: eb.ref('excluded.checked_at'),
              facts: eb.ref('excluded.facts'),
              warnings: eb.ref('excluded.warnings'),
            })),
          )
          .execute()
      }
    })
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
