/**
 * Instant clusters (docs/clusters.md): the whole cluster as a JSON document beside the columns
 * queries filter on. A deleted cluster keeps its row (deleted_at) so that its pods' usage can
 * still be billed to it; its pods record their membership in their own documents.
 */
export const statements = [
  `create table clusters (
    id text primary key,
    account_id text not null references accounts(id) on delete cascade,
    name text not null,
    created_at timestamptz not null,
    deleted_at timestamptz,
    doc jsonb not null
  )`,
  `create index clusters_account on clusters(account_id, created_at)`,
]
