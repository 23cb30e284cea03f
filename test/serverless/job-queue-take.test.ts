import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { JobSweeper } from '../../src/control/job-sweeper.js'
import { MAX_JOB_ATTEMPTS } from '../../src/domain/serverless/job.js'
import type { ManagedWorker } from '../../src/domain/serverless/worker.js'
import { KyselyJobQueue } from '../../src/queue/kysely-job-queue.js'
import { KyselyWorkerRepo } from '../../src/store/worker-repo.js'
import { EP, LEASE, openJobQueue, type JobQueueFixture } from '../support/job-queue-fixtures.js'
import { addTestAccount, testStores } from '../support/stores.js'

/**
 * The job queue hands out jobs (oldest first, never one to two workers, across replicas too)
 * and takes them back: when a lease runs out, when a worker is lost or runs out of memory, and
 * from workers the store knows as retired. The rest of the queue: job-queue-lifecycle.test.ts
 * and job-queue-streams-and-polls.test.ts.
 */
describe.each(testStores())('job queue on $name', ({ open }) => {
  // Each test's own store, clock and queue (test/support/job-queue-fixtures.ts).
  let { store, clock, queue, submit } = {} as JobQueueFixture
  beforeEach(async () => {
    ;({ store, clock, queue, submit } = await openJobQueue(open))
  })
  afterEach(() => store.close())

  it('stores a job and shows it without its s3Config', async () => {
    const job = await submit({ input: { prompt: 'hi' }, policy: { lowPriority: true } })
    const view = await queue.get(EP, job.id)
    expect(view).toMatchObject({
      id: job.id,
      status: 'IN_QUEUE',
      input: { prompt: 'hi' },
      webhook: 'http://127.0.0.1:9/hook',
      policy: { lowPriority: true, ttl: 86_400_000, executionTimeout: 600_000 },
      createdAt: '2026-03-01T00:00:00.000Z',
      expiresAt: '2026-03-02T00:00:00.000Z',
      attempts: 0,
      retries: 0,
      sync: false,
    })
    expect(view).not.toHaveProperty('s3Config')
    expect(JSON.stringify(view)).not.toContain('s3cret')
    expect(await queue.get('otherendpoint1', job.id)).toBeUndefined()
  })

  it('gives out the oldest jobs first, with the s3Config for the worker', async () => {
    const ids: string[] = []
    for (let i = 0; i < 5; i++) {
      ids.push((await submit({ input: { i } })).id)
      if (i % 2 === 0) clock.advance(1)
    }
    const first = await queue.take(EP, 'w1', { max: 3, leaseMs: LEASE })
    expect(first.map((j) => j.id)).toEqual(ids.slice(0, 3))
    expect(first[0]).toMatchObject({
      status: 'IN_PROGRESS',
      workerId: 'w1',
      attempts: 1,
      s3Config: { accessSecret: 's3cret' },
    })
    const rest = await queue.take(EP, 'w2', { max: 10, leaseMs: LEASE })
    expect(rest.map((j) => j.id)).toEqual(ids.slice(3))
    expect(await queue.take(EP, 'w3', { max: 10, leaseMs: LEASE })).toEqual([])
  })

  it('never gives one job to two workers', async () => {
    const ids = new Set<string>()
    for (let i = 0; i < 10; i++) ids.add((await submit()).id)
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => queue.take(EP, `w${i}`, { max: 1, leaseMs: LEASE })),
    )
    const taken = results.flat().map((j) => j.id)
    expect(taken).toHaveLength(10)
    expect(new Set(taken)).toEqual(ids)
  })

  it('never gives one job to two workers across queues (replicas) either', async () => {
    const other = new KyselyJobQueue({ db: store.db, dialect: store.dialect, clock })
    for (let i = 0; i < 30; i++) await submit()
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        (i % 2 ? queue : other).take(EP, `w${i}`, { max: 4, leaseMs: LEASE }),
      ),
    )
    const taken = results.flat().map((j) => j.id)
    expect(taken).toHaveLength(30)
    expect(new Set(taken).size).toBe(30)
  })

  it('requeues a job whose lease expired; the old worker is stopped and its result ignored', async () => {
    const job = await submit()
    await queue.take(EP, 'w1', { max: 1, leaseMs: LEASE })
    clock.advance(LEASE - 1)
    expect(await queue.requeueExpiredLeases(clock.now())).toEqual({
      requeued: [],
      ended: [],
      lost: [],
    })
    clock.advance(1)
    expect(await queue.requeueExpiredLeases(clock.now())).toEqual({
      requeued: [job.id],
      ended: [],
      // The attempt cut short, as it ran: for its spans.
      lost: [expect.objectContaining({ id: job.id, endpointId: EP, workerId: 'w1', attempts: 1 })],
    })
    expect(await queue.get(EP, job.id)).toMatchObject({ status: 'IN_QUEUE', attempts: 1 })
    expect(await queue.takeStops(EP, 'w1')).toEqual([{ jobId: job.id, reason: 'lease-lost' }])
    const [again] = await queue.take(EP, 'w2', { max: 1, leaseMs: LEASE })
    expect(again).toMatchObject({ id: job.id, workerId: 'w2', attempts: 2 })
    expect(await queue.complete(EP, job.id, 'w1', { output: 'late' })).toEqual({
      applied: false,
      reason: 'not-owner',
    })
    expect(await queue.heartbeat(EP, 'w1', [job.id], LEASE)).toEqual([])
    const done = await queue.complete(EP, job.id, 'w2', { output: 'ok' })
    expect(done).toMatchObject({ applied: true, job: { status: 'COMPLETED', output: 'ok' } })
    expect(await queue.complete(EP, job.id, 'w2', { output: 'twice' })).toEqual({
      applied: false,
      reason: 'not-in-progress',
    })
    expect((await queue.get(EP, job.id))?.output).toBe('ok')
  })

  it('tells the metrics how each job a sweep ends ended, under its endpoint', async () => {
    const other = 'endpoint000002'
    await submit({ policy: { executionTimeout: 5_000 } })
    await submit({ endpointId: other, policy: { executionTimeout: 5_000 } })
    await queue.take(EP, 'w1', { max: 1, leaseMs: LEASE })
    await queue.take(other, 'w2', { max: 1, leaseMs: LEASE })
    clock.advance(6_000)
    const ended: string[] = []
    const sweeper = new JobSweeper({
      queue,
      clock,
      logger: { info: () => {}, error: () => {} },
      leaseMs: LEASE,
      events: { ended: (endpointId, status) => ended.push(`${endpointId} ${status}`) },
    })
    await sweeper.sweep()
    expect(ended.sort()).toEqual([`${EP} TIMED_OUT`, `${other} TIMED_OUT`])

    // A job whose workers keep losing its lease fails at its last attempt: FAILED, not TIMED_OUT.
    ended.length = 0
    const lost = await submit({ endpointId: other })
    for (let attempt = 1; attempt <= MAX_JOB_ATTEMPTS; attempt++) {
      await queue.take(other, `lost-${attempt}`, { max: 1, leaseMs: LEASE })
      clock.advance(LEASE)
      await sweeper.sweep()
    }
    expect(await queue.get(other, lost.id)).toMatchObject({ status: 'FAILED' })
    expect(ended).toEqual([`${other} FAILED`])
  })

  it("requeues a lost worker's jobs at once, whatever their leases, and fences the worker off", async () => {
    const running = await submit()
    const late = await submit({ policy: { executionTimeout: 5_000 } })
    const other = await submit()
    await queue.take(EP, 'lost', { max: 2, leaseMs: LEASE })
    await queue.take(EP, 'alive', { max: 1, leaseMs: LEASE })
    clock.advance(5_000)
    // Well within their leases: a sweep would leave them.
    expect(await queue.requeueExpiredLeases(clock.now())).toEqual({
      requeued: [],
      ended: [],
      lost: [],
    })
    expect(await queue.requeueWorkerJobs(EP, 'lost')).toEqual({
      requeued: [running.id],
      ended: [expect.objectContaining({ id: late.id, endpointId: EP, status: 'TIMED_OUT' })],
      lost: [expect.objectContaining({ id: running.id, workerId: 'lost', attempts: 1 })],
    })
    expect(await queue.get(EP, running.id)).toMatchObject({ status: 'IN_QUEUE', attempts: 1 })
    expect(await queue.get(EP, late.id)).toMatchObject({ status: 'TIMED_OUT' })
    expect(await queue.get(EP, other.id)).toMatchObject({ status: 'IN_PROGRESS' })
    expect(await queue.takeStops(EP, 'lost')).toEqual(
      expect.arrayContaining([
        { jobId: running.id, reason: 'lease-lost' },
        { jobId: late.id, reason: 'timed-out' },
      ]),
    )
    // Nothing the lost worker sends counts any more: no heartbeat renews, no result lands.
    expect(await queue.heartbeat(EP, 'lost', [running.id], LEASE)).toEqual([])
    expect(await queue.complete(EP, running.id, 'lost', { output: 'late' })).toEqual({
      applied: false,
      reason: 'not-in-progress',
    })
    const [again] = await queue.take(EP, 'alive', { max: 1, leaseMs: LEASE })
    expect(again).toMatchObject({ id: running.id, attempts: 2 })
    expect(await queue.complete(EP, running.id, 'lost', { output: 'late' })).toEqual({
      applied: false,
      reason: 'not-owner',
    })
    expect(await queue.complete(EP, running.id, 'alive', { output: 'ok' })).toMatchObject({
      applied: true,
    })
    expect(await queue.requeueWorkerJobs(EP, 'lost')).toEqual({ requeued: [], ended: [], lost: [] })
  })

  /** A managed worker's record, READY, of an account of its own (the store's foreign key). */
  async function addManagedWorker(id: string, phase: ManagedWorker['phase'] = 'READY') {
    const at = clock.now().toISOString()
    const worker: ManagedWorker = {
      id,
      endpointId: EP,
      accountId: await addTestAccount(store),
      version: 1,
      keyGeneration: 0,
      phase,
      reason: null,
      hostId: 'gpu-node-2',
      dataCenterId: 'EU-RO-1',
      gpuTypeId: null,
      cpuFlavorId: 'cpu3c',
      gpuCount: 0,
      gpuIndices: [],
      vcpus: 2,
      memoryGb: 4,
      image: 'worker:1',
      createdAt: at,
      startedAt: at,
      phaseChangedAt: at,
    }
    await new KyselyWorkerRepo(store.db).insert(worker)
    return worker
  }

  it('stores a lost worker UNHEALTHY in the transaction that requeues its jobs', async () => {
    await addManagedWorker('lostworker0001')
    const job = await submit()
    expect(await queue.take(EP, 'lostworker0001', { max: 1, leaseMs: LEASE })).toMatchObject([
      { id: job.id },
    ])
    const reason = 'host gpu-node-2 lost at 2026-03-01T00:00:00.000Z (engine gone)'
    expect(
      await queue.requeueWorkerJobs(EP, 'lostworker0001', {
        phase: 'UNHEALTHY',
        reason,
        changedAt: '2026-03-01T00:00:01.000Z',
      }),
    ).toEqual({
      requeued: [job.id],
      ended: [],
      lost: [expect.objectContaining({ id: job.id, workerId: 'lostworker0001', attempts: 1 })],
    })
    expect(await new KyselyWorkerRepo(store.db).get('lostworker0001')).toMatchObject({
      phase: 'UNHEALTHY',
      reason,
      phaseChangedAt: '2026-03-01T00:00:01.000Z',
    })
    // It still calls, as a worker on a lost host may: it never gets its job back.
    expect(await queue.take(EP, 'lostworker0001', { max: 10, leaseMs: LEASE })).toEqual([])
    expect(await queue.take(EP, 'w2', { max: 1, leaseMs: LEASE })).toMatchObject([
      { id: job.id, workerId: 'w2', attempts: 2 },
    ])
  })

  it('refuses every take of a worker the store knows as UNHEALTHY or STOPPED, and hands it nothing', async () => {
    await addManagedWorker('unhealthywork1', 'UNHEALTHY')
    await addManagedWorker('stoppedworker1', 'STOPPED')
    await addManagedWorker('readyworker001')
    const job = await submit()
    for (const retired of ['unhealthywork1', 'stoppedworker1']) {
      expect(await queue.take(EP, retired, { max: 10, leaseMs: LEASE })).toEqual([])
    }
    // Its long poll waits as on an empty queue (no spin), however much is queued.
    const taker = { workerId: 'unhealthywork1', leaseMs: LEASE, max: 1 }
    expect(await queue.waitToTake(EP, taker, 150)).toBe(false)
    expect(await queue.take(EP, 'readyworker001', { max: 1, leaseMs: LEASE })).toMatchObject([
      { id: job.id, workerId: 'readyworker001' },
    ])
    // Nor is a job submitted while it waits on the empty queue handed to it (the submission may
    // end its wait, as for any waiter; its take then finds nothing).
    const waiting = queue.waitToTake(EP, taker, 300)
    await new Promise((resolve) => setTimeout(resolve, 50))
    const submitted = await submit()
    expect(typeof (await waiting)).toBe('boolean')
    expect(await queue.get(EP, submitted.id)).toMatchObject({ status: 'IN_QUEUE' })
    expect(await queue.take(EP, 'unhealthywork1', { max: 10, leaseMs: LEASE })).toEqual([])
    // One the store does not know (it connects by itself) takes as before.
    expect(await queue.take(EP, 'selfmanaged001', { max: 1, leaseMs: LEASE })).toMatchObject([
      { id: submitted.id, workerId: 'selfmanaged001' },
    ])
  })

  it('fails the jobs of a worker that ran out of memory at once, with why, and fences the worker off', async () => {
    const running = await submit()
    const late = await submit({ policy: { executionTimeout: 5_000 } })
    const other = await submit()
    await queue.take(EP, 'oom', { max: 2, leaseMs: LEASE })
    await queue.take(EP, 'alive', { max: 1, leaseMs: LEASE })
    clock.advance(5_000)
    const error = 'out of memory: the worker used its 16 GB'
    // On its first attempt: another attempt would run out of memory too.
    expect(await queue.failWorkerJobs(EP, 'oom', error)).toEqual({
      requeued: [],
      ended: expect.arrayContaining([
        expect.objectContaining({ id: running.id, endpointId: EP, status: 'FAILED' }),
        expect.objectContaining({ id: late.id, endpointId: EP, status: 'TIMED_OUT' }),
      ]),
      lost: [],
    })
    expect(await queue.get(EP, running.id)).toMatchObject({ status: 'FAILED', error, attempts: 1 })
    expect(await queue.get(EP, late.id)).toMatchObject({ status: 'TIMED_OUT' })
    expect(await queue.get(EP, other.id)).toMatchObject({ status: 'IN_PROGRESS' })
    expect(await queue.complete(EP, running.id, 'oom', { output: 'late' })).toMatchObject({
      applied: false,
    })
    expect(await queue.failWorkerJobs(EP, 'oom', error)).toEqual({
      requeued: [],
      ended: [],
      lost: [],
    })
  })
})
