/**
 * Credits: a ledger of every change of an account's balance (credits added by an admin now,
 * charges by the meter later), the balance kept beside it in the same transaction, and the
 * account's spend limit per hour. Money is integer nano-USD (1e-9 USD): a per-second charge
 * of a cheap pod is still a whole number, and sums are exact.
 */
export const statements = [
  `create table credit_ledger (
    id text primary key,
    account_id text not null references accounts(id) on delete cascade,
    amount_nano integer not null,
    kind text not null,
    note text not null,
    created_by text,
    created_at text not null
  )`,
  `create index credit_ledger_account on credit_ledger(account_id, created_at)`,
  `alter table accounts add column balance_nano integer not null default 0`,
  `alter table accounts add column spend_limit_per_hour real not null default 80`,
]
