/**
 * The serverless job queue (docs/serverless-queue.md). `seq` orders the queue among jobs
 * submitted in the same millisecond; `id` is the job id clients see.
 */
export const statements = [
  `create table jobs (
    seq integer primary key autoincrement,
    id text not null unique,
    endpoint_id text not null,
    account_id text not null,
    status text not null,
    sync integer not null,
    low_priority integer not null,
    execution_timeout_ms integer not null,
    ttl_ms integer not null,
    input text not null,
    webhook text,
    s3_config text,
    output text,
    error text,
    worker_id text,
    attempts integer not null default 0,
    retries integer not null default 0,
    version integer not null default 1,
    stream_seq integer not null default 0,
    stream_delivered integer not null default 0,
    created_at text not null,
    started_at text,
    completed_at text,
    expires_at text not null,
    lease_expires_at text,
    deadline_at text,
    retain_until text
  )`,
  `create index jobs_queue on jobs(endpoint_id, status, created_at, seq)`,
  `create index jobs_lease on jobs(status, lease_expires_at)`,
  `create index jobs_deadline on jobs(status, deadline_at)`,
  `create index jobs_expires on jobs(expires_at)`,
  `create index jobs_retain on jobs(retain_until)`,
  `create table job_stream (
    job_id text not null,
    seq integer not null,
    output text not null,
    primary key (job_id, seq)
  )`,
  `create table job_stops (
    seq integer primary key autoincrement,
    endpoint_id text not null,
    worker_id text not null,
    job_id text not null,
    reason text not null,
    created_at text not null
  )`,
  `create index job_stops_worker on job_stops(endpoint_id, worker_id)`,
]
