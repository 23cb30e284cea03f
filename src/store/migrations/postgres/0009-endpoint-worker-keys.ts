/**
 * Per-endpoint worker keys (docs/job-api.md, "Worker keys"): the key is derived from the
 * encryption key and this generation, never stored; rotation adds one. A column of its own, not
 * a field of `doc`, so that an endpoint update (which rewrites `doc`) can never undo a rotation.
 */
export const statements = [
  `alter table endpoints add column worker_key_generation integer not null default 1`,
]
