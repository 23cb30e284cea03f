/**
 * Account secrets (docs/security.md, "Where secrets live"): referenced from env values as
 * `{{ RUNPOD_SECRET_<name> }}`, the value sealed with the platform's encryption key. A name is
 * unique within its account.
 */
export const statements = [
  `create table account_secrets (
    id text primary key,
    account_id text not null,
    name text not null,
    description text,
    value_sealed text not null,
    created_at text not null,
    unique (account_id, name)
  )`,
]
