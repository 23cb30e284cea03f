/** Leader lease, shared job API counters and worker presence: see the SQLite migration. */
export const statements = [
  `create table cluster_leases (
    name text primary key,
    holder text not null,
    acquired_at_ms bigint not null,
    expires_at_ms bigint not null
  )`,
  `create table job_rate_counts (
    endpoint_id text not null,
    operation text not null,
    replica_id text not null,
    window_start_ms bigint not null,
    count integer not null,
    in_flight integer not null,
    updated_at_ms bigint not null,
    primary key (endpoint_id, operation, replica_id)
  )`,
  `create index job_rate_counts_updated on job_rate_counts(updated_at_ms)`,
  `create table worker_presence (
    endpoint_id text not null,
    worker_id text not null,
    last_seen_ms bigint not null,
    job_ids text not null,
    unhealthy text,
    recycle integer not null,
    primary key (endpoint_id, worker_id)
  )`,
  `create index worker_presence_last_seen on worker_presence(last_seen_ms)`,
]
