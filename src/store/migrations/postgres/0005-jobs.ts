/**
 * The serverless job queue (docs/serverless-queue.md). `seq` orders the queue among jobs
 * submitted in the same millisecond; `id` is the job id clients see.
 */
export const statements = [
  `create table jobs (
    seq bigserial primary key,
    id text not null unique,
    endpoint_id text not null,
    account_id text not null,
    status text not null,
    sync integer not null,
    low_priority integer not null,
    execution_timeout_ms bigint not null,
    ttl_ms bigint not null,
    input jsonb not null,
    webhook text,
    s3_config jsonb,
    output jsonb,
    error text,
    worker_id text,
    attempts integer not null default 0,
    retries integer not null default 0,
    version integer not null default 1,
    stream_seq bigint not null default 0,
    stream_delivered bigint not null default 0,
    created_at timestamptz not null,
    started_at timestamptz,
    completed_at timestamptz,
    expires_at timestamptz not null,
    lease_expires_at timestamptz,
    deadline_at timestamptz,
    retain_until timestamptz
  )`,
  `create index jobs_queue on jobs(endpoint_id, status, created_at, seq)`,
  `create index jobs_lease on jobs(status, lease_expires_at)`,
  `create index jobs_deadline on jobs(status, deadline_at)`,
  `create index jobs_expires on jobs(expires_at)`,
  `create index jobs_retain on jobs(retain_until)`,
  `create table job_stream (
    job_id text not null,
    seq bigint not null,
    output jsonb not null,
    primary key (job_id, seq)
  )`,
  `create table job_stops (
    seq bigserial primary key,
    endpoint_id text not null,
    worker_id text not null,
    job_id text not null,
    reason text not null,
    created_at timestamptz not null
  )`,
  `create index job_stops_worker on job_stops(endpoint_id, worker_id)`,
]
