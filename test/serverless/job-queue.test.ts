import { randomUUID } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { JobSweeper } from '../../src/control/job-sweeper.js'
import {
  MAX_JOB_ATTEMPTS,
  newJob,
  type Job,
  type JobPolicy,
} from '../../src/domain/serverless/job.js'
import type { ManagedWorker } from '../../src/domain/serverless/worker.js'
import { KyselyJobQueue } from '../../src/queue/kysely-job-queue.js'
import { ManualClock } from '../../src/shared/clock.js'
import type { Store } from '../../src/store/open-store.js'
import { KyselyWorkerRepo } from '../../src/store/worker-repo.js'
import { addTestAccount, testStores } from '../support/stores.js'

const EP = 'endpoint000001'
const LEASE = 30_000
const defaultPolicy: JobPolicy = { executionTimeout: 600_000, ttl: 86_400_000, lowPriority: false }

describe.each(testStores())('job queue on $name', ({ open }) => {
  let store: Store
  let clock: ManualClock
  let queue: KyselyJobQueue

  beforeEach(async () => {
    store = await open()
    clock = new ManualClock('2026-03-01T00:00:00.000Z')
    queue = new KyselyJobQueue({ db: store.db, dialect: store.dialect, clock, pollIntervalMs: 50 })
  })
  afterEach(() => store.close())

  async function submit(
    fields: {
      input?: unknown
      policy?: Partial<JobPolicy>
      sync?: boolean
      endpointId?: string
    } = {},
  ): Promise<Job> {
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
