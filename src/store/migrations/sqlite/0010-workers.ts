/** Managed serverless workers (docs/serverless-workers.md). */
export const statements = [
  `create table workers (
    id text primary key,
    endpoint_id text not null,
    account_id text not null references accounts(id) on delete cascade,
    version integer not null,
    key_generation integer not null,
    phase text not null,
    reason text,
    host_id text,
    data_center_id text,
    gpu_type_id text,
    cpu_flavor_id text,
    gpu_count integer not null,
    gpu_indices text not null,
    vcpus integer not null,
    memory_gb integer not null,
    image text not null,
    created_at text not null,
    started_at text,
    phase_changed_at text not null
  )`,
  `create index workers_endpoint on workers(endpoint_id, created_at)`,
]
