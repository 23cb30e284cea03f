/**
 * Serverless endpoint definitions (docs/serverless-endpoints.md): the whole endpoint is the
 * `doc` JSON; the columns beside it are what queries filter on.
 */
export const statements = [
  `create table endpoints (
    id text primary key,
    account_id text not null references accounts(id) on delete cascade,
    name text not null,
    template_id text,
    created_at timestamptz not null,
    doc jsonb not null
  )`,
  `create index endpoints_account on endpoints(account_id, created_at)`,
  `create index endpoints_template on endpoints(template_id)`,
]
