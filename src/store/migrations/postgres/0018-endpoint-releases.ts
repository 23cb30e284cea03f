/**
 * Releases of serverless endpoints (docs/serverless-endpoints.md, "Releases"): one row per
 * endpoint version with the fields that changed. Endpoints made before this migration get one
 * release for the version they are at, with no diff (what changed before is not known).
 */
export const statements = [
  `create table endpoint_releases (
    id text primary key,
    endpoint_id text not null references endpoints(id) on delete cascade,
    version integer not null,
    created_at timestamptz not null,
    diff jsonb not null
  )`,
  `create unique index endpoint_releases_version on endpoint_releases(endpoint_id, version)`,
  `insert into endpoint_releases (id, endpoint_id, version, created_at, diff)
    select 'rel_' || id, id, (doc->>'version')::integer, (doc->>'updatedAt')::timestamptz, '[]'::jsonb
    from endpoints`,
]
