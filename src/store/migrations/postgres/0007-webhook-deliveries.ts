/**
 * Webhook deliveries of finished jobs (docs/job-api.md "Webhooks"). A delivery is written in the
 * same transaction as its job's terminal transition and carries its own copy of the payload, so
 * it is still sent after the job is deleted (ttl, retention) or the server restarts. No foreign
 * key to `jobs` for that reason. `payload` is text, not jsonb: it is POSTed byte for byte as the
 * `/status` body was serialised (jsonb would reorder its keys).
 */
export const statements = [
  `create table webhook_deliveries (
    seq bigserial primary key,
    job_id text not null,
    endpoint_id text not null,
    account_id text not null,
    url text not null,
    job_status text not null,
    payload text not null,
    status text not null,
    attempts integer not null default 0,
    next_attempt_at timestamptz,
    created_at timestamptz not null,
    finished_at timestamptz
  )`,
  `create index webhook_deliveries_due on webhook_deliveries(status, next_attempt_at)`,
  `create index webhook_deliveries_job on webhook_deliveries(endpoint_id, job_id)`,
  `create index webhook_deliveries_finished on webhook_deliveries(finished_at)`,
  `create table webhook_attempts (
    delivery_seq bigint not null references webhook_deliveries(seq) on delete cascade,
    attempt integer not null,
    started_at timestamptz not null,
    duration_ms integer not null,
    http_status integer,
    error text,
    outcome text not null,
    primary key (delivery_seq, attempt)
  )`,
]
