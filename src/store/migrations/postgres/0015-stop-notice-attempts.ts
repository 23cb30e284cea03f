/**
 * A stop notice names the attempt it stops (docs/serverless-queue.md, "Stop notices"). A lease
 * that ran out left a notice for (worker, job); when the same worker took the same job again,
 * its next job-stop poll handed it the old notice and it aborted the run it now rightly held.
 * Notices written before this migration have no attempt (0): they stop any earlier attempt.
 */
export const statements = [`alter table job_stops add column attempt integer not null default 0`]
