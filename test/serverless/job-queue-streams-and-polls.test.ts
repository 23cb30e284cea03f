import { randomUUID } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { newJob } from '../../src/domain/serverless/job.js'
import { KyselyJobQueue } from '../../src/queue/kysely-job-queue.js'
import {
  defaultPolicy,
  EP,
  LEASE,
  openJobQueue,
  type JobQueueFixture,
} from '../support/job-queue-fixtures.js'
import { testStores } from '../support/stores.js'

/**
 * What a running job tells its readers through the job queue (stream chunks, each delivered
 * once, and progress updates), and the long polls of workers waiting for jobs or stop notices
 * and of clients waiting for a job to change. Taking jobs: job-queue-take.test.ts; the rest of
 * a job's life: job-queue-lifecycle.test.ts.
 */
describe.each(testStores())('job queue on $name', ({ open }) => {
  // Each test's own store, clock and queue (test/support/job-queue-fixtures.ts).
  let { store, clock, queue, submit } = {} as JobQueueFixture
  beforeEach(async () => {
    ;({ store, clock, queue, submit } = await openJobQueue(open))
  })
  afterEach(() => store.close())

  it('delivers stream chunks once, in order, and lets a reader keep its own position', async () => {
    const job = await submit()
    await queue.take(EP, 'w1', { max: 1, leaseMs: LEASE })
    expect(await queue.readStream(EP, job.id)).toEqual({
      status: 'IN_PROGRESS',
      chunks: [],
      position: 0,
    })
    expect(await queue.appendStream(EP, job.id, 'w1', ['a', { b: 2 }])).toEqual({ applied: true })
    expect(await queue.appendStream(EP, job.id, 'w2', ['x'])).toEqual({
      applied: false,
      reason: 'not-owner',
    })
    expect(await queue.appendStream(EP, job.id, 'w1', [3])).toEqual({ applied: true })
    const first = await queue.readStream(EP, job.id)
    expect(first?.chunks).toEqual([
      { seq: 1, output: 'a' },
      { seq: 2, output: { b: 2 } },
      { seq: 3, output: 3 },
    ])
    expect((await queue.readStream(EP, job.id))?.chunks).toEqual([])
    await queue.appendStream(EP, job.id, 'w1', [null, 'e'])
    await queue.complete(EP, job.id, 'w1', { output: [] })
    expect(await queue.readStream(EP, job.id)).toEqual({
      status: 'COMPLETED',
      chunks: [
        { seq: 4, output: null },
        { seq: 5, output: 'e' },
      ],
      position: 5,
    })
    // With its own position a reader re-reads freely, marking nothing.
    expect((await queue.readStream(EP, job.id, 3))?.chunks.map((c) => c.seq)).toEqual([4, 5])
    expect((await queue.readStream(EP, job.id, 0))?.position).toBe(5)
    expect(await queue.readStream(EP, 'nope')).toBeUndefined()
    expect((await queue.appendStream(EP, job.id, 'w1', ['late'])).applied).toBe(false)
  })

  it('appends a numbered chunk once: a repeat in the same attempt is a duplicate', async () => {
    const job = await submit()
    await queue.take(EP, 'w1', { max: 1, leaseMs: LEASE })
    expect(await queue.appendStream(EP, job.id, 'w1', ['a'], 0)).toEqual({ applied: true })
    expect(await queue.appendStream(EP, job.id, 'w1', ['a'], 0)).toEqual({
      applied: false,
      reason: 'duplicate',
    })
    expect(await queue.appendStream(EP, job.id, 'w1', ['b'], 1)).toEqual({ applied: true })
    // A chunk the worker gave up on leaves a gap: the next index is still taken.
    expect(await queue.appendStream(EP, job.id, 'w1', ['d'], 3)).toEqual({ applied: true })
    expect((await queue.appendStream(EP, job.id, 'w1', ['b'], 1)).applied).toBe(false)
    expect((await queue.appendStream(EP, job.id, 'w1', ['d'], 3)).applied).toBe(false)
    // Unnumbered chunks (runpod-python's) are appended every time, as before.
    await queue.appendStream(EP, job.id, 'w1', ['x'])
    await queue.appendStream(EP, job.id, 'w1', ['x'])
    expect(await queue.appendStream(EP, job.id, 'w2', ['a'], 9)).toEqual({
      applied: false,
      reason: 'not-owner',
    })
    expect((await queue.readStream(EP, job.id))?.chunks.map((c) => c.output)).toEqual([
      'a',
      'b',
      'd',
      'x',
      'x',
    ])
    // A new attempt (the lease ran out, the job was taken again) counts from 0 again.
    clock.advance(LEASE + 1)
    expect((await queue.requeueExpiredLeases(clock.now())).requeued).toEqual([job.id])
    await queue.take(EP, 'w1', { max: 1, leaseMs: LEASE })
    expect(await queue.appendStream(EP, job.id, 'w1', ['again'], 0)).toEqual({ applied: true })
    expect((await queue.appendStream(EP, job.id, 'w1', ['again'], 0)).applied).toBe(false)
    expect((await queue.readStream(EP, job.id))?.chunks.map((c) => c.output)).toEqual(['again'])
    await queue.complete(EP, job.id, 'w1', { output: [] })
    expect(await queue.appendStream(EP, job.id, 'w1', ['late'], 1)).toEqual({
      applied: false,
      reason: 'not-in-progress',
    })
  })

  it('delivers each chunk to exactly one of concurrent cursor-less readers', async () => {
    const job = await submit()
    await queue.take(EP, 'w1', { max: 1, leaseMs: LEASE })
    await queue.appendStream(
      EP,
      job.id,
      'w1',
      Array.from({ length: 20 }, (_, i) => i),
    )
    const reads = await Promise.all(Array.from({ length: 8 }, () => queue.readStream(EP, job.id)))
    const seen = reads.flatMap((r) => r!.chunks.map((c) => c.output))
    expect(seen.sort((a, b) => (a as number) - (b as number))).toEqual(
      Array.from({ length: 20 }, (_, i) => i),
    )
  })

  it('records progress updates without finishing the job', async () => {
    const job = await submit()
    await queue.take(EP, 'w1', { max: 1, leaseMs: LEASE })
    expect(await queue.progress(EP, job.id, 'w1', { pct: 50 })).toEqual({ applied: true })
    expect(await queue.get(EP, job.id)).toMatchObject({
      status: 'IN_PROGRESS',
      output: { pct: 50 },
    })
    expect(await queue.progress(EP, job.id, 'w9', { pct: 60 })).toEqual({
      applied: false,
      reason: 'not-owner',
    })
  })

  describe('long polls', () => {
    const taker = { workerId: 'worker-1', leaseMs: LEASE, max: 1 }

    it('hands a job submitted while a worker waits straight to it, and times out otherwise', async () => {
      let started = Date.now()
      expect(await queue.waitToTake(EP, taker, 150)).toBe(false)
      expect(Date.now() - started).toBeGreaterThanOrEqual(140)
      started = Date.now()
      const waiting = queue.waitToTake(EP, taker, 10_000)
      const [handed, submitted] = await Promise.all([
        waiting,
        new Promise((resolve) => setTimeout(resolve, 20)).then(() => submit()),
      ])
      expect(Date.now() - started).toBeLessThan(2_000)
      // The worker's running job, as a take leaves it: nothing is left to take.
      expect(handed).toMatchObject({
        id: submitted.id,
        status: 'IN_PROGRESS',
        workerId: 'worker-1',
        attempts: 1,
        startedAt: clock.now().toISOString(),
        leaseExpiresAt: new Date(clock.now().getTime() + LEASE).toISOString(),
        deadlineAt: new Date(clock.now().getTime() + defaultPolicy.executionTimeout).toISOString(),
        s3Config: submitted.s3Config,
        webhook: submitted.webhook,
      })
      expect(await queue.get(EP, submitted.id)).toMatchObject({
        status: 'IN_PROGRESS',
        workerId: 'worker-1',
        attempts: 1,
      })
      expect(await queue.take(EP, 'worker-2', { max: 10, leaseMs: LEASE })).toEqual([])
      // Its completion and its lease work as for a taken job.
      expect(await queue.heartbeat(EP, 'worker-1', [submitted.id], LEASE)).toEqual([submitted.id])
      expect(await queue.complete(EP, submitted.id, 'worker-1', { output: 1 })).toMatchObject({
        applied: true,
        job: { status: 'COMPLETED', output: 1 },
      })
    })

    it('answers true, without a hand-off, when work is already queued', async () => {
      const queued = await submit()
      expect(await queue.waitToTake(EP, taker, 10_000)).toBe(true)
      expect(await queue.get(EP, queued.id)).toMatchObject({ status: 'IN_QUEUE' })
    })

    it('hands jobs to waiting workers longest-waiting first, one each', async () => {
      const first = queue.waitToTake(EP, { workerId: 'w-first', leaseMs: LEASE, max: 1 }, 10_000)
      await new Promise((resolve) => setTimeout(resolve, 30))
      const second = queue.waitToTake(EP, { workerId: 'w-second', leaseMs: LEASE, max: 1 }, 10_000)
      await new Promise((resolve) => setTimeout(resolve, 30))
      const [a, b, c] = [await submit(), await submit(), await submit()]
      expect(await first).toMatchObject({ id: a.id, workerId: 'w-first' })
      expect(await second).toMatchObject({ id: b.id, workerId: 'w-second' })
      // Nobody waits any more: the third is queued.
      expect(await queue.get(EP, c.id)).toMatchObject({ status: 'IN_QUEUE' })
    })

    it('wakes a batch taker instead of handing it one job, so that it takes them all', async () => {
      const waiting = queue.waitToTake(EP, { workerId: 'w-batch', leaseMs: LEASE, max: 10 }, 10_000)
      await new Promise((resolve) => setTimeout(resolve, 30))
      const job = await submit()
      expect(await waiting).toBe(true)
      expect(await queue.get(EP, job.id)).toMatchObject({ status: 'IN_QUEUE' })
    })

    it('hands a job to a batch taker that holds none, as to a worker of one job', async () => {
      const waiting = queue.waitToTake(
        EP,
        { workerId: 'w-idle-batch', leaseMs: LEASE, max: 10, holdsNothing: true },
        10_000,
      )
      await new Promise((resolve) => setTimeout(resolve, 30))
      const job = await submit()
      expect(await waiting).toMatchObject({ id: job.id, workerId: 'w-idle-batch' })
      expect(await queue.get(EP, job.id)).toMatchObject({ status: 'IN_PROGRESS' })
    })

    it('hands nothing to a worker that stopped waiting or hung up', async () => {
      expect(await queue.waitToTake(EP, { workerId: 'w-gone', leaseMs: LEASE, max: 1 }, 50)).toBe(
        false,
      )
      const hangUp = new AbortController()
      const waiting = queue.waitToTake(
        EP,
        { workerId: 'w-hung-up', leaseMs: LEASE, max: 1 },
        10_000,
        hangUp.signal,
      )
      await new Promise((resolve) => setTimeout(resolve, 30))
      hangUp.abort()
      expect(await waiting).toBe(false)
      const job = await submit()
      expect(await queue.get(EP, job.id)).toMatchObject({ status: 'IN_QUEUE' })
      expect((await queue.take(EP, 'w-next', { max: 1, leaseMs: LEASE })).map((j) => j.id)).toEqual(
        [job.id],
      )
    })

    it('sees another replica’s submission through its poll, as work to take', async () => {
      const other = new KyselyJobQueue({ db: store.db, dialect: store.dialect, clock })
      const waiting = queue.waitToTake(EP, taker, 10_000)
      setTimeout(() => {
        void other.submit(
          newJob({
            id: randomUUID(),
            endpointId: EP,
            accountId: 'acct_1',
            input: {},
            policy: defaultPolicy,
            sync: false,
            createdAt: clock.now(),
          }),
        )
      }, 20)
      const started = Date.now()
      expect(await waiting).toBe(true)
      expect(Date.now() - started).toBeLessThan(2_000)
    })

    it('wakes a waiter on a job when it changes, and times out otherwise', async () => {
      const job = await submit()
      expect(await queue.waitForChange(EP, job.id, 100)).toBe(false)
      const started = Date.now()
      const waiting = queue.waitForChange(EP, job.id, 10_000)
      setTimeout(() => void queue.take(EP, 'w1', { max: 1, leaseMs: LEASE }), 20)
      expect(await waiting).toBe(true)
      expect(Date.now() - started).toBeLessThan(2_000)
      // A change the caller has not seen yet answers at once.
      expect(await queue.waitForChange(EP, job.id, 10_000, 1)).toBe(true)
      const version = (await queue.get(EP, job.id))!.version
      const finishing = queue.waitForChange(EP, job.id, 10_000, version)
      setTimeout(() => void queue.complete(EP, job.id, 'w1', { output: 'done' }), 20)
      expect(await finishing).toBe(true)
      expect((await queue.get(EP, job.id))?.status).toBe('COMPLETED')
      expect(await queue.waitForChange(EP, 'gone', 10_000)).toBe(true)
    })

    it('wakes a worker waiting for stop notices', async () => {
      const job = await submit()
      await queue.take(EP, 'w1', { max: 1, leaseMs: LEASE })
      expect(await queue.waitForStops(EP, 'w1', 100)).toBe(false)
      const waiting = queue.waitForStops(EP, 'w1', 10_000)
      setTimeout(() => void queue.cancel(EP, job.id), 20)
      expect(await waiting).toBe(true)
      expect(await queue.takeStops(EP, 'w1')).toEqual([{ jobId: job.id, reason: 'cancelled' }])
    })
  })
})
