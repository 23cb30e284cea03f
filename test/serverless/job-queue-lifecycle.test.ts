import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { EP, LEASE, openJobQueue, type JobQueueFixture } from '../support/job-queue-fixtures.js'
import { testStores } from '../support/stores.js'

/**
 * A taken job's life in the job queue until it is gone: stop notices for the attempts that are
 * over, leases renewed and kept, execution timeouts, ttls and kept results, cancel, retry and
 * purge, and the counts and stats its states add up to for /health, /requests and the
 * autoscaler. Taking jobs: job-queue-take.test.ts; streams and long polls:
 * job-queue-streams-and-polls.test.ts.
 */
describe.each(testStores())('job queue on $name', ({ open }) => {
  // Each test's own store, clock and queue (test/support/job-queue-fixtures.ts).
  let { store, clock, queue, submit } = {} as JobQueueFixture
  beforeEach(async () => {
    ;({ store, clock, queue, submit } = await openJobQueue(open))
  })
  afterEach(() => store.close())

  it('retires a stop notice of an earlier attempt when the same worker takes the job again', async () => {
    const job = await submit()
    await queue.take(EP, 'w1', { max: 1, leaseMs: LEASE })
    clock.advance(LEASE)
    await queue.requeueExpiredLeases(clock.now())
    // The same worker takes the job again before it polled job-stop: the lease-lost notice was
    // for attempt 1, and must not stop attempt 2.
    const [again] = await queue.take(EP, 'w1', { max: 1, leaseMs: LEASE })
    expect(again).toMatchObject({ id: job.id, workerId: 'w1', attempts: 2 })
    expect(await queue.takeStops(EP, 'w1')).toEqual([])
    expect(await queue.complete(EP, job.id, 'w1', { output: 'once' })).toMatchObject({
      applied: true,
    })
  })

  it('still stops the earlier attempt when another worker took the job, and a later one of its own', async () => {
    const job = await submit()
    await queue.take(EP, 'w1', { max: 1, leaseMs: LEASE })
    clock.advance(LEASE)
    await queue.requeueExpiredLeases(clock.now())
    await queue.take(EP, 'w2', { max: 1, leaseMs: LEASE })
    expect(await queue.takeStops(EP, 'w1')).toEqual([{ jobId: job.id, reason: 'lease-lost' }])
    // w2 loses it too; w1 takes it a third time, and is then cancelled: that notice is current.
    clock.advance(LEASE)
    await queue.requeueExpiredLeases(clock.now())
    expect(await queue.takeStops(EP, 'w2')).toEqual([{ jobId: job.id, reason: 'lease-lost' }])
    await queue.take(EP, 'w1', { max: 1, leaseMs: LEASE })
    await queue.cancel(EP, job.id)
    expect(await queue.takeStops(EP, 'w1')).toEqual([{ jobId: job.id, reason: 'cancelled' }])
  })

  it('tells a worker again to stop a job it still names after the job left it', async () => {
    const cancelled = await submit()
    const late = await submit({ policy: { executionTimeout: 5_000 } })
    const kept = await submit()
    const finished = await submit()
    await queue.take(EP, 'w1', { max: 4, leaseMs: LEASE })
    await queue.cancel(EP, cancelled.id)
    await queue.complete(EP, finished.id, 'w1', { output: 1 })
    clock.advance(5_000)
    await queue.expire(clock.now())
    // The worker collected its notices, but its task had not started: it still names the jobs.
    expect((await queue.takeStops(EP, 'w1')).map((n) => n.jobId).sort()).toEqual(
      [cancelled.id, late.id].sort(),
    )
    const named = [cancelled.id, late.id, kept.id, finished.id, 'gone-job']
    expect(await queue.remindStops(EP, 'w1', named)).toBe(3)
    // Not twice while one is waiting.
    expect(await queue.remindStops(EP, 'w1', named)).toBe(0)
    expect(await queue.takeStops(EP, 'w1')).toEqual([
      { jobId: cancelled.id, reason: 'cancelled' },
      { jobId: late.id, reason: 'timed-out' },
      { jobId: 'gone-job', reason: 'expired' },
    ])
  })

  it('renews every running lease that ends sooner to a given instant, and no other', async () => {
    const ran = await submit()
    const later = await submit()
    const queued = await submit()
    await queue.take(EP, 'w1', { max: 1, leaseMs: LEASE })
    clock.advance(LEASE * 2)
    await queue.take(EP, 'w2', { max: 1, leaseMs: LEASE * 10 })
    const until = new Date(clock.now().getTime() + LEASE)
    expect(await queue.renewRunningLeases(until)).toBe(1)
    expect(await queue.get(EP, ran.id)).toMatchObject({ leaseExpiresAt: until.toISOString() })
    expect((await queue.get(EP, later.id))?.leaseExpiresAt).toBe(
      new Date(clock.now().getTime() + LEASE * 10).toISOString(),
    )
    expect(await queue.get(EP, queued.id)).toMatchObject({ status: 'IN_QUEUE' })
    expect(await queue.requeueExpiredLeases(clock.now())).toEqual({
      requeued: [],
      ended: [],
      lost: [],
    })
  })

  it('keeps the lease while the worker heart-beats', async () => {
    const job = await submit()
    await queue.take(EP, 'w1', { max: 1, leaseMs: LEASE })
    for (let i = 0; i < 5; i++) {
      clock.advance(LEASE - 1_000)
      expect(await queue.heartbeat(EP, 'w1', [job.id, 'unknown'], LEASE)).toEqual([job.id])
      expect(await queue.requeueExpiredLeases(clock.now())).toEqual({
        requeued: [],
        ended: [],
        lost: [],
      })
    }
    expect(await queue.get(EP, job.id)).toMatchObject({ status: 'IN_PROGRESS', workerId: 'w1' })
  })

  it('times a job out after its execution timeout and tells its worker', async () => {
    const job = await submit({ policy: { executionTimeout: 5_000 } })
    clock.advance(60_000) // queue time does not count against the execution timeout
    await queue.take(EP, 'w1', { max: 1, leaseMs: LEASE })
    clock.advance(4_999)
    expect((await queue.expire(clock.now())).ended).toEqual([])
    clock.advance(1)
    expect(await queue.expire(clock.now())).toEqual({
      ended: [expect.objectContaining({ id: job.id, endpointId: EP, status: 'TIMED_OUT' })],
      deleted: [],
      expired: [],
    })
    expect(await queue.get(EP, job.id)).toMatchObject({
      status: 'TIMED_OUT',
      completedAt: '2026-03-01T00:01:05.000Z',
    })
    expect(await queue.takeStops(EP, 'w1')).toEqual([{ jobId: job.id, reason: 'timed-out' }])
    expect(await queue.takeStops(EP, 'w1')).toEqual([])
    expect((await queue.complete(EP, job.id, 'w1', { output: 1 })).applied).toBe(false)
  })

  it('times out rather than requeues a job whose lease and deadline both passed', async () => {
    const job = await submit({ policy: { executionTimeout: 5_000 } })
    await queue.take(EP, 'w1', { max: 1, leaseMs: LEASE })
    clock.advance(LEASE)
    expect(await queue.requeueExpiredLeases(clock.now())).toEqual({
      requeued: [],
      ended: [expect.objectContaining({ id: job.id, endpointId: EP, status: 'TIMED_OUT' })],
      lost: [],
    })
    expect((await queue.get(EP, job.id))?.status).toBe('TIMED_OUT')
  })

  it('deletes a job when its ttl passes, in any state, and stops its worker', async () => {
    const running = await submit({ policy: { ttl: 20_000 } })
    clock.advance(1)
    const queued = await submit({ policy: { ttl: 10_000 } })
    const [taken] = await queue.take(EP, 'w1', { max: 1, leaseMs: LEASE })
    expect(taken?.id).toBe(running.id)
    clock.set('2026-03-01T00:00:10.001Z')
    expect(await queue.get(EP, queued.id)).toBeDefined() // until a sweep
    const first = await queue.expire(clock.now())
    expect(first.deleted).toEqual([queued.id])
    // What it was when its ttl passed, for its spans.
    expect(first.expired).toEqual([
      {
        id: queued.id,
        endpointId: EP,
        status: 'IN_QUEUE',
        attempts: 0,
        createdAt: queued.createdAt,
      },
    ])
    expect(await queue.get(EP, queued.id)).toBeUndefined()
    clock.set('2026-03-01T00:00:20.000Z')
    expect(await queue.expire(clock.now())).toEqual({
      ended: [],
      deleted: [running.id],
      expired: [
        expect.objectContaining({
          id: running.id,
          status: 'IN_PROGRESS',
          attempts: 1,
          workerId: 'w1',
          startedAt: expect.any(String),
        }),
      ],
    })
    expect(await queue.get(EP, running.id)).toBeUndefined()
    expect(await queue.readStream(EP, running.id)).toBeUndefined()
    expect(await queue.takeStops(EP, 'w1')).toEqual([{ jobId: running.id, reason: 'expired' }])
    expect(await queue.complete(EP, running.id, 'w1', {})).toEqual({
      applied: false,
      reason: 'not-found',
    })
  })

  it('skips jobs whose ttl passed while queued', async () => {
    await submit({ policy: { ttl: 10_000 } })
    clock.advance(10_000)
    expect(await queue.take(EP, 'w1', { max: 1, leaseMs: LEASE })).toEqual([])
  })

  it('keeps results 30 minutes after /run and 1 minute after /runsync', async () => {
    const run = await submit()
    const sync = await submit({ sync: true })
    expect(sync.id).toMatch(/^sync-/)
    await queue.take(EP, 'w1', { max: 2, leaseMs: LEASE })
    await queue.complete(EP, run.id, 'w1', { output: 1 })
    await queue.complete(EP, sync.id, 'w1', { error: 'boom' })
    expect(await queue.get(EP, sync.id)).toMatchObject({ status: 'FAILED', error: 'boom' })
    clock.advance(59_999)
    expect((await queue.expire(clock.now())).deleted).toEqual([])
    clock.advance(1)
    // Deleted finished: not `expired` (its spans ended when it finished).
    expect(await queue.expire(clock.now())).toEqual({ ended: [], deleted: [sync.id], expired: [] })
    expect(await queue.get(EP, sync.id)).toBeUndefined()
    clock.advance(30 * 60_000 - 60_000)
    expect((await queue.expire(clock.now())).deleted).toEqual([run.id])
    expect(await queue.get(EP, run.id)).toBeUndefined()
  })

  it('cancels a queued job and a running job', async () => {
    const first = await submit()
    clock.advance(1)
    const second = await submit()
    await queue.take(EP, 'w1', { max: 1, leaseMs: LEASE })
    expect((await queue.cancel(EP, first.id))?.status).toBe('CANCELLED')
    expect((await queue.cancel(EP, second.id))?.status).toBe('CANCELLED')
    expect(await queue.takeStops(EP, 'w1')).toEqual([{ jobId: first.id, reason: 'cancelled' }])
    expect(await queue.take(EP, 'w2', { max: 5, leaseMs: LEASE })).toEqual([])
    expect(await queue.complete(EP, first.id, 'w1', { output: 1 })).toEqual({
      applied: false,
      reason: 'not-in-progress',
    })
    // Cancelling a finished job changes nothing.
    expect((await queue.cancel(EP, first.id))?.status).toBe('CANCELLED')
    expect(await queue.cancel(EP, 'nope')).toBeUndefined()
    expect(await queue.cancel('otherendpoint1', second.id)).toBeUndefined()
  })

  it('retries a failed job with the same id and input, output cleared and counted', async () => {
    const job = await submit({ input: { keep: 'me' } })
    await queue.take(EP, 'w1', { max: 1, leaseMs: LEASE })
    await queue.appendStream(EP, job.id, 'w1', ['a'])
    await queue.complete(EP, job.id, 'w1', { output: { partial: 1 }, error: 'boom' })
    expect(await queue.counts(EP)).toMatchObject({ failed: 1, retried: 0 })
    const result = await queue.retry(EP, job.id)
    expect(result).toMatchObject({
      retried: true,
      job: { id: job.id, status: 'IN_QUEUE', input: { keep: 'me' }, retries: 1 },
    })
    const view = await queue.get(EP, job.id)
    expect(view?.output).toBeUndefined()
    expect(view?.error).toBeUndefined()
    expect(view?.workerId).toBeUndefined()
    expect((await queue.readStream(EP, job.id))?.chunks).toEqual([])
    expect(await queue.retry(EP, job.id)).toEqual({
      retried: false,
      reason: 'not-retryable',
      status: 'IN_QUEUE',
    })
    expect(await queue.retry(EP, 'nope')).toEqual({ retried: false, reason: 'not-found' })
    const [again] = await queue.take(EP, 'w2', { max: 1, leaseMs: LEASE })
    expect(again).toMatchObject({ id: job.id, input: { keep: 'me' }, retries: 1 })
    expect(await queue.counts(EP)).toMatchObject({ inProgress: 1, retried: 1 })
  })

  it('retries a timed-out job but not a completed or cancelled one', async () => {
    const late = await submit({ policy: { executionTimeout: 5_000 } })
    const done = await submit()
    const cancelled = await submit()
    await queue.take(EP, 'w1', { max: 2, leaseMs: LEASE })
    await queue.complete(EP, done.id, 'w1', { output: 1 })
    await queue.cancel(EP, cancelled.id)
    clock.advance(5_000)
    await queue.expire(clock.now())
    expect((await queue.retry(EP, late.id)).retried).toBe(true)
    expect(await queue.retry(EP, done.id)).toMatchObject({ retried: false, status: 'COMPLETED' })
    expect(await queue.retry(EP, cancelled.id)).toMatchObject({
      retried: false,
      status: 'CANCELLED',
    })
  })

  it('purges only queued jobs of the endpoint', async () => {
    await submit()
    await submit()
    await queue.take(EP, 'w1', { max: 1, leaseMs: LEASE })
    await submit()
    const elsewhere = await submit({ endpointId: 'otherendpoint1' })
    expect(await queue.purgeQueued(EP)).toBe(2)
    expect(await queue.counts(EP)).toMatchObject({ inQueue: 0, inProgress: 1 })
    expect(await queue.get('otherendpoint1', elsewhere.id)).toBeDefined()
    expect(await queue.purgeQueued(EP)).toBe(0)
  })

  it('counts jobs for /health and lists them newest first for /requests', async () => {
    const ids: string[] = []
    for (let i = 0; i < 6; i++) {
      ids.push((await submit()).id)
      clock.advance(1)
    }
    const taken = await queue.take(EP, 'w1', { max: 4, leaseMs: LEASE })
    await queue.complete(EP, taken[0]!.id, 'w1', { output: 1 })
    await queue.complete(EP, taken[1]!.id, 'w1', { error: 'x' })
    await queue.retry(EP, taken[1]!.id)
    await queue.complete(EP, taken[2]!.id, 'w1', { error: 'y' })
    expect(await queue.counts(EP)).toEqual({
      completed: 1,
      failed: 1,
      inProgress: 1,
      inQueue: 3,
      retried: 1,
    })
    expect(await queue.counts('otherendpoint1')).toEqual({
      completed: 0,
      failed: 0,
      inProgress: 0,
      inQueue: 0,
      retried: 0,
    })
    const page1 = await queue.list(EP, { page: 1, pageSize: 4 })
    expect(page1).toMatchObject({ page: 1, pageSize: 4, total: 6 })
    expect(page1.jobs.map((j) => j.id)).toEqual([...ids].reverse().slice(0, 4))
    expect(page1.jobs[0]).not.toHaveProperty('s3Config')
    const page2 = await queue.list(EP, { page: 2, pageSize: 4 })
    expect(page2.jobs.map((j) => j.id)).toEqual([ids[1], ids[0]])
  })

  it('tells the autoscaler the running jobs of each worker, whatever it last reported', async () => {
    for (let i = 0; i < 5; i++) await submit()
    await submit({ policy: { lowPriority: true } })
    await submit({ endpointId: 'otherendpoint1' })
    await queue.take(EP, 'w1', { max: 2, leaseMs: LEASE })
    const [done] = await queue.take(EP, 'w2', { max: 2, leaseMs: LEASE })
    await queue.take('otherendpoint1', 'w3', { max: 1, leaseMs: LEASE })
    await queue.complete(EP, done!.id, 'w2', { output: 1 })
    const stats = await queue.scalingStats(EP)
    expect(stats).toMatchObject({ queued: 1, inProgress: 3 })
    expect(stats.heldByWorker).toEqual(
      new Map([
        ['w1', 2],
        ['w2', 1],
      ]),
    )
    // A released worker's jobs stay its own until the sweep puts them back in the queue.
    await queue.releaseWorker(EP, 'w1')
    clock.advance(1)
    await queue.requeueExpiredLeases(clock.now())
    expect((await queue.scalingStats(EP)).heldByWorker).toEqual(new Map([['w2', 1]]))
  })
})
