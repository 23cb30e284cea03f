import { randomUUID } from 'node:crypto'
import { newJob } from '../../src/domain/serverless/job.js'
import type { Job } from '../../src/domain/serverless/job.js'

/**
 * A new IN_QUEUE job for queue tests: a random id, account `acct_1`, an empty input, the
 * default policy (600 s execution timeout, 24 h ttl), submitted by `/run` now; any field may
 * be given instead.
 */
export function testJob(
  fields: Partial<Parameters<typeof newJob>[0]> & { endpointId: string },
): Job {
  return newJob({
    id: randomUUID(),
    accountId: 'acct_1',
    input: {},
    policy: { executionTimeout: 600_000, ttl: 86_400_000, lowPriority: false },
    sync: false,
    createdAt: new Date(),
    ...fields,
  })
}
