/**
 * The trace context of the request that queued a job (docs/production.md, "Tracing"): its
 * span as a W3C traceparent and its request id, so that the job's spans join that request's
 * trace on whichever replica takes or finishes it, and the worker is handed it. Null when the
 * server traced nothing.
 */
export const statements = [
  `alter table jobs add column trace_parent text`,
  `alter table jobs add column request_id text`,
]
