/**
 * Quotas per account (docs/billing.md, "Quotas"), set by the admin. A null limit is no quota;
 * an account without a row has none at all.
 */
export const statements = [
  `create table account_quotas (
    account_id text primary key,
    gpus integer,
    pods integer,
    workers integer,
    volume_gb integer,
    updated_at text not null
  )`,
]
