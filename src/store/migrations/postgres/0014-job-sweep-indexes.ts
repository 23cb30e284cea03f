/**
 * Leaner indexes on `jobs` (bench/README.md, step 22). `jobs_lease (status, lease_expires_at)` and
 * `jobs_deadline (status, deadline_at)` held an entry for every job, moved on each take and each
 * completion, yet only running jobs are ever looked up through them (the sweeps of expired
 * leases and passed deadlines). One partial index of the running jobs replaces both: a new job
 * adds no entry to it, a take adds one, a completion removes one. `jobs_retain` likewise only
 * indexes finished jobs (the only ones with a `retain_until`). The sweeps name the running
 * status as a literal (`status = 'IN_PROGRESS'`) so that the planner can use the partial index.
 */
export const statements = [
  `drop index jobs_lease`,
  `drop index jobs_deadline`,
  `drop index jobs_retain`,
  `create index jobs_running on jobs(lease_expires_at) where status = 'IN_PROGRESS'`,
  `create index jobs_retain on jobs(retain_until) where retain_until is not null`,
]
