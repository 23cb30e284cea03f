export const statements = [
  `create table network_volumes (
    id text primary key,
    account_id text not null references accounts(id) on delete cascade,
    name text not null,
    size_gb integer not null,
    data_center_id text not null,
    type text not null,
    created_at timestamptz not null,
    updated_at timestamptz not null
  )`,
  `create index network_volumes_account on network_volumes(account_id, created_at)`,
  `create table network_volume_sizes (
    seq bigserial primary key,
    volume_id text not null,
    size_gb integer not null,
    changed_at timestamptz not null
  )`,
  `create index network_volume_sizes_volume on network_volume_sizes(volume_id, seq)`,
  `create table registries (
    id text primary key,
    account_id text not null references accounts(id) on delete cascade,
    name text not null,
    username text not null,
    password_sealed text not null,
    created_at timestamptz not null
  )`,
  `create index registries_account on registries(account_id, created_at)`,
  `create table templates (
    id text primary key,
    account_id text not null references accounts(id) on delete cascade,
    name text not null,
    visibility text not null,
    created_at timestamptz not null,
    doc jsonb not null,
    unique (account_id, name)
  )`,
  `create index templates_visibility on templates(visibility)`,
  `create table settings (
    key text primary key,
    value text not null
  )`,
]
