/**
 * Workers that crash in a loop (docs/serverless-workers.md, "Crash loops"):
 * - `worker_start_backoffs`: per endpoint, the workers that failed in a row since the last
 *   healthy start, the last failure, and when the next worker may start. Written by the
 *   autoscaler when a worker fails or starts healthy, read by every replica for `/health`.
 * - `worker_kept_logs`: the last lines of a failed worker's output (JSON `[{seq, ts, line}]`),
 *   kept when its workload is removed, while it is listed UNHEALTHY.
 */
export const statements = [
  `create table worker_start_backoffs (
    endpoint_id text primary key references endpoints(id) on delete cascade,
    failures integer not null,
    last_worker_id text not null,
    last_reason text not null,
    last_failed_at text not null,
    next_start_at text not null
  )`,
  `create table worker_kept_logs (
    worker_id text primary key references workers(id) on delete cascade,
    lines text not null
  )`,
]
