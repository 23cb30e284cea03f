import { Statement } from './raw-sql.js'

/** The pods' hottest statements: a create, a lifecycle step, a read by id (raw-sql.ts). */
export const podStatements = {
  podById: new Statement('select doc from pods where id = ?'),
  podInsert: new Statement(
    'insert into pods (id, account_id, name, status, host_id, version, created_at, terminated_at, doc) ' +
      'values (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  ),
  podUpdate: new Statement(
    'update pods set account_id = ?, name = ?, status = ?, host_id = ?, version = ?, ' +
      'created_at = ?, terminated_at = ?, doc = ? where id = ? and version = ?',
  ),
  eventAppend: new Statement('insert into pod_events (pod_id, ts, line) values (?, ?, ?)'),
  allocationInsert: new Statement(
    'insert into allocations (id, host_id, owner_kind, owner_id, gpu_count, gpu_indices, ' +
      'vcpus, memory_gb, disk_gb, created_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  ),
  allocationDelete: new Statement('delete from allocations where owner_kind = ? and owner_id = ?'),
  allocationByOwner: new Statement(
    'select * from allocations where owner_kind = ? and owner_id = ?',
  ),
  allocationEpoch: new Statement('select epoch from allocation_epoch where id = 1'),
  allocationChangesSince: new Statement(
    'select epoch, owner_kind, owner_id from allocation_changes where epoch > ? and epoch <= ? ' +
      'order by epoch',
  ),
} as const

const eventAppends = new Map<number, Statement>()

/** `n` system log lines in one insert, each `pod_id, ts, line` in turn (group commit). */
export function eventAppendMany(n: number): Statement {
  let statement = eventAppends.get(n)
  if (statement === undefined) {
    const rows = Array.from({ length: n }, () => '(?, ?, ?)').join(', ')
    statement = new Statement(`insert into pod_events (pod_id, ts, line) values ${rows}`)
    eventAppends.set(n, statement)
  }
  return statement
}
