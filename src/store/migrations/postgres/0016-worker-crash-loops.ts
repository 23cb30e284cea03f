/** Crash-loop backoffs and the kept logs of failed workers: see the SQLite migration. */
export const statements = [
  `create table worker_start_backoffs (
    endpoint_id text primary key references endpoints(id) on delete cascade,
    failures integer not null,
    last_worker_id text not null,
    last_reason text not null,
    last_failed_at timestamptz not null,
    next_start_at timestamptz not null
  )`,
  `create table worker_kept_logs (
    worker_id text primary key references workers(id) on delete cascade,
    lines text not null
  )`,
]
