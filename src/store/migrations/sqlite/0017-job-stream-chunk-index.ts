/**
 * Idempotent stream chunks (docs/job-api.md, "Worker protocol"): a worker that sends a chunk
 * again because its answer was lost numbers it with `chunk_index`, its index within the run.
 * `stream_attempt` is the attempt (`attempts`) those indexes count in, and `stream_next_index`
 * the index after the last chunk appended in it; a chunk below it is a repeat. A new attempt
 * (the job re-queued and taken again) starts counting afresh, so the take leaves them alone.
 */
export const statements = [
  `alter table jobs add column stream_attempt integer not null default 0`,
  `alter table jobs add column stream_next_index integer not null default 0`,
]
