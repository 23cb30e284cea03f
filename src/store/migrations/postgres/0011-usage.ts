/** Usage: see the SQLite migration of the same number. */
export const statements = [
  `create table usage_records (
    account_id text not null references accounts(id) on delete cascade,
    resource_kind text not null,
    resource_id text not null,
    category text not null,
    bucket_start timestamptz not null,
    amount_nano bigint not null,
    primary key (account_id, resource_kind, resource_id, category, bucket_start)
  )`,
  `create index usage_records_account_bucket on usage_records(account_id, bucket_start)`,
  `create table usage_meters (
    resource_kind text not null,
    resource_id text not null,
    account_id text not null references accounts(id) on delete cascade,
    metered_until timestamptz not null,
    rates text not null,
    carries text not null,
    detail text,
    primary key (resource_kind, resource_id)
  )`,
]
