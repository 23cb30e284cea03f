export const statements = [
  `create table accounts (
    id text primary key,
    name text not null,
    role text not null,
    created_at timestamptz not null
  )`,
  `create table users (
    id text primary key,
    account_id text not null references accounts(id) on delete cascade,
    email text not null unique,
    created_at timestamptz not null
  )`,
  `create table api_keys (
    id text primary key,
    account_id text not null references accounts(id) on delete cascade,
    name text not null,
    key_hash text not null unique,
    key_prefix text not null,
    permission text not null,
    endpoint_ids jsonb not null,
    created_at timestamptz not null,
    expires_at timestamptz,
    revoked_at timestamptz,
    last_used_at timestamptz
  )`,
  `create index api_keys_account on api_keys(account_id)`,
  `create table allocations (
    id text primary key,
    host_id text not null,
    owner_kind text not null,
    owner_id text not null,
    gpu_count integer not null,
    gpu_indices jsonb not null,
    vcpus integer not null,
    memory_gb integer not null,
    disk_gb integer not null,
    created_at timestamptz not null,
    unique (owner_kind, owner_id)
  )`,
  `create index allocations_host on allocations(host_id)`,
]
