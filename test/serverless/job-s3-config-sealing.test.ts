import { randomBytes, randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { SecretBox } from '../../src/domain/registries/secret-box.js'
import { newJob, type S3Config } from '../../src/domain/serverless/job.js'
import { KyselyJobQueue } from '../../src/queue/kysely-job-queue.js'
import { ManualClock } from '../../src/shared/clock.js'
import type { Store } from '../../src/store/open-store.js'
import { testStores } from '../support/stores.js'

const EP = 'endpoint000001'
const SECRET = 'aws-secret-access-key-never-stored-0123'
const s3Config: S3Config = {
  accessId: 'AKIAEXAMPLE',
  accessSecret: SECRET,
  bucketName: 'results',
  endpointUrl: 'https://s3.example.com',
}

/** A job's s3Config holds the caller's storage secret: sealed at rest (docs/security.md). */
describe.each(testStores())('s3Config at rest on $name', ({ open }) => {
  let store: Store
  const clock = new ManualClock('2026-03-01T00:00:00.000Z')
  const box = new SecretBox(randomBytes(32))

  beforeEach(async () => {
    store = await open()
  })
  afterEach(() => store.close())

  const submit = async (queue: KyselyJobQueue) => {
    const job = newJob({
      id: randomUUID(),
      endpointId: EP,
      accountId: 'acct_1',
      input: { n: 1 },
      policy: { executionTimeout: 600_000, ttl: 86_400_000, lowPriority: false },
      sync: false,
      createdAt: clock.now(),
      s3Config,
    })
    await queue.submit(job)
    return job
  }

  const storedS3Config = async (id: string): Promise<string> => {
    const row = await sql<{ stored: string }>`
      select cast(s3_config as text) as stored from jobs where id = ${id}
    `.execute(store.db)
    return row.rows[0]!.stored
  }

  it('is sealed in the database and opened for the worker that takes the job', async () => {
    const queue = new KyselyJobQueue({ db: store.db, dialect: store.dialect, clock, secrets: box })
    const job = await submit(queue)
    const stored = await storedS3Config(job.id)
    expect(stored).not.toContain(SECRET)
    expect(stored).not.toContain('AKIAEXAMPLE')
    expect(stored).toMatch(/^"v1:/)
    const [taken] = await queue.take(EP, 'worker-1', { max: 1, leaseMs: 30_000 })
    expect(taken?.s3Config).toEqual(s3Config)
    expect(await queue.get(EP, job.id)).not.toHaveProperty('s3Config')
  })

  it('still reads a row stored in the clear before sealing', async () => {
    const before = new KyselyJobQueue({ db: store.db, dialect: store.dialect, clock })
    const job = await submit(before)
    expect(await storedS3Config(job.id)).toContain(SECRET)
    const queue = new KyselyJobQueue({ db: store.db, dialect: store.dialect, clock, secrets: box })
    const [taken] = await queue.take(EP, 'worker-1', { max: 1, leaseMs: 30_000 })
    expect(taken?.s3Config).toEqual(s3Config)
  })
})
