export const statements = [
  `create table pods (
    id text primary key,
    account_id text not null references accounts(id) on delete cascade,
    name text not null,
    status text not null,
    host_id text,
    version integer not null,
    created_at text not null,
    terminated_at text,
    doc text not null
  )`,
  `create index pods_account on pods(account_id, created_at)`,
  `create index pods_status on pods(status)`,
  `create table pod_events (
    seq integer primary key autoincrement,
    pod_id text not null,
    ts text not null,
    line text not null
  )`,
  `create index pod_events_pod on pod_events(pod_id, seq)`,
]
