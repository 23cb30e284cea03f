/**
 * Several server replicas on one database (docs/production.md):
 * - `cluster_leases`: the leader lease; the replica whose lease has not expired runs the
 *   reconcile loops (src/control/leader-election.ts). Times are epoch milliseconds of the
 *   replicas' clocks.
 * - `job_rate_counts`: each replica's count of job API requests per endpoint and operation in
 *   the current 10 s window and its requests in flight, written about every second, so each
 *   replica limits against the cluster's total (src/store/shared-job-limits.ts).
 * - `worker_presence`: when each worker last called any replica and what it runs, so a worker
 *   is IDLE or RUNNING the same on every replica (src/store/shared-worker-presence.ts).
 */
export const statements = [
  `create table cluster_leases (
    name text primary key,
    holder text not null,
    acquired_at_ms integer not null,
    expires_at_ms integer not null
  )`,
  `create table job_rate_counts (
    endpoint_id text not null,
    operation text not null,
    replica_id text not null,
    window_start_ms integer not null,
    count integer not null,
    in_flight integer not null,
    updated_at_ms integer not null,
    primary key (endpoint_id, operation, replica_id)
  )`,
  `create index job_rate_counts_updated on job_rate_counts(updated_at_ms)`,
  `create table worker_presence (
    endpoint_id text not null,
    worker_id text not null,
    last_seen_ms integer not null,
    job_ids text not null,
    unhealthy text,
    recycle integer not null,
    primary key (endpoint_id, worker_id)
  )`,
  `create index worker_presence_last_seen on worker_presence(last_seen_ms)`,
]
