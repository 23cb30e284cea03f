/** Credits: see the SQLite migration of the same number. */
export const statements = [
  `create table credit_ledger (
    id text primary key,
    account_id text not null references accounts(id) on delete cascade,
    amount_nano bigint not null,
    kind text not null,
    note text not null,
    created_by text,
    created_at timestamptz not null
  )`,
  `create index credit_ledger_account on credit_ledger(account_id, created_at)`,
  `alter table accounts add column balance_nano bigint not null default 0`,
  `alter table accounts add column spend_limit_per_hour double precision not null default 80`,
]
