import { randomUUID } from 'node:crypto'
import { newJob, type Job, type JobPolicy } from '../../src/domain/serverless/job.js'
import { KyselyJobQueue } from '../../src/queue/kysely-job-queue.js'
import { ManualClock } from '../../src/shared/clock.js'
import type { Store } from '../../src/store/open-store.js'

/** The endpoint the job queue tests submit to, unless a test names another. */
export const EP = 'endpoint000001'
/** The lease the job queue tests' workers take jobs with. */
export const LEASE = 30_000
export const defaultPolicy: JobPolicy = {
  executionTimeout: 600_000,
  ttl: 86_400_000,
  lowPriority: false,
}

/** The fields a job queue test may set on a job it submits; the others are fixed. */
export interface SubmitFields {
  input?: unknown
  policy?: Partial<JobPolicy>
  sync?: boolean
  endpointId?: string
}

/** A job queue on a fresh store, its clock and a way to submit jobs to it. */
export interface JobQueueFixture {
  store: Store
  clock: ManualClock
  queue: KyselyJobQueue
  /**
   * Submits a job of account `acct_1` (to EP, input `{ n: 1 }`, the default policy, async)
   * with a webhook and an s3Config whose secret is `s3cret`, created now on the clock.
   */
  submit(fields?: SubmitFields): Promise<Job>
}

/**
 * A queue on the store `open` gives (each test's own), its clock at 2026-03-01T00:00:00Z and
 * its long polls checking every 50 ms: the job queue tests' setup, one per test.
 */
export async function openJobQueue(open: () => Promise<Store>): Promise<JobQueueFixture> {
  const store = await open()
  const clock = new ManualClock('2026-03-01T00:00:00.000Z')
  const queue = new KyselyJobQueue({
    db: store.db,
    dialect: store.dialect,
    clock,
    pollIntervalMs: 50,
  })
  async function submit(fields: SubmitFields = {}): Promise<Job> {
    const sync = fields.sync ?? false
    const job = newJob({
      id: `${sync ? 'sync-' : ''}${randomUUID()}`,
      endpointId: fields.endpointId ?? EP,
      accountId: 'acct_1',
      input: fields.input ?? { n: 1 },
      policy: { ...defaultPolicy, ...fields.policy },
      sync,
      createdAt: clock.now(),
      webhook: 'http://127.0.0.1:9/hook',
      s3Config: {
        accessId: 'a',
        accessSecret: 's3cret',
        bucketName: 'b',
        endpointUrl: 'http://s3',
      },
    })
    await queue.submit(job)
    return job
  }
  return { store, clock, queue, submit }
}
