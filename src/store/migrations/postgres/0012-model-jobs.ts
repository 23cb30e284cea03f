/** Public model jobs: see the SQLite migration of the same number. */
export const statements = [
  `create table model_jobs (
    job_id text primary key,
    model_id text not null,
    endpoint_id text not null,
    account_id text not null references accounts(id) on delete cascade,
    max_price_nano bigint not null,
    cost_nano bigint,
    object_key text,
    created_at timestamptz not null,
    settled_at timestamptz,
    object_expires_at timestamptz
  )`,
  `create index model_jobs_account on model_jobs(account_id, created_at)`,
  `create index model_jobs_object_expiry on model_jobs(object_expires_at)`,
]
