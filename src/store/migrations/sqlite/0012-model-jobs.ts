/**
 * Public model jobs (docs/public-endpoints.md): who called each job of a platform-owned model
 * endpoint, the most it may cost, and its settlement (cost charged, stored image, when the
 * image's URL expires). Kept after the job itself is deleted by its retention.
 */
export const statements = [
  `create table model_jobs (
    job_id text primary key,
    model_id text not null,
    endpoint_id text not null,
    account_id text not null references accounts(id) on delete cascade,
    max_price_nano integer not null,
    cost_nano integer,
    object_key text,
    created_at text not null,
    settled_at text,
    object_expires_at text
  )`,
  `create index model_jobs_account on model_jobs(account_id, created_at)`,
  `create index model_jobs_object_expiry on model_jobs(object_expires_at)`,
]
