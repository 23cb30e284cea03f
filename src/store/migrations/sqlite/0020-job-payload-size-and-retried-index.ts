/**
 * What the job API's cheaper paths need. `payload_size`: the characters of a job's
 * input, s3Config and webhook as stored, written with the job, so that a take can keep to its
 * budget (docs/job-api.md, "Take budget") reading only this column of the jobs it may hand out.
 * Jobs stored before this migration count as 0. `jobs_retried`: the few retried jobs of an
 * endpoint, so that `/health` counts them from the index alone (with `jobs_queue`, which
 * covers the counts per status); the queue names `retries > 0` as a literal so that the
 * planner can use it.
 */
export const statements = [
  `alter table jobs add column payload_size integer not null default 0`,
  `create index jobs_retried on jobs(endpoint_id, retries) where retries > 0`,
]
