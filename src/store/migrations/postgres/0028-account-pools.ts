/**
 * The pools each account is bound to (docs/fleet.md, "Pools"), set by the admin: a host
 * labelled pool=X takes only the pods and workers of accounts bound to X.
 */
export const statements = [
  `create table account_pools (
    account_id text not null,
    pool text not null,
    created_at text not null,
    primary key (account_id, pool)
  )`,
]
