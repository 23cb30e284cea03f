import { createServer } from 'node:net'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { WEBHOOK_CLAIM_MARGIN_MS, WebhookDispatcher } from '../../src/control/webhook-dispatcher.js'
import { jobBody } from '../../src/domain/serverless/job-body.js'
import type { Job } from '../../src/domain/serverless/job.js'
import {
  WEBHOOK_ERRORS,
  WEBHOOK_RECORD_RETENTION_MS,
  type WebhookDelivery,
} from '../../src/domain/serverless/webhook-delivery.js'
import type { JobQueueDatabase } from '../../src/queue/job-tables.js'
import { KyselyJobQueue } from '../../src/queue/kysely-job-queue.js'
import { KyselyWebhookDeliveries } from '../../src/queue/kysely-webhook-deliveries.js'
import { ManualClock } from '../../src/shared/clock.js'
import type { Database } from '../../src/store/database-schema.js'
import type { Store } from '../../src/store/open-store.js'
import { testStores } from '../support/stores.js'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js'
import { testJob } from '../support/jobs.js'
import { TestResolver } from '../support/test-resolver.js'
import { egressGuardFor } from '../../src/wiring/serverless-wiring.js'

// The queue's copy of the delivery tables must agree with the store's, both ways.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
const _schemasAgree: [
  Same<JobQueueDatabase['webhook_deliveries'], Database['webhook_deliveries']>,
  Same<JobQueueDatabase['webhook_attempts'], Database['webhook_attempts']>,
] = [true, true]

const EP = 'endpoint000001'
const ACCOUNT = 'acct_1'
const RETRY_MS = 10_000
const TIMEOUT_MS = 300
const silent = { info: () => {}, warn: () => {}, error: () => {} }
/** The receivers of these tests listen on loopback: the operator's allow-list lets it through. */
const egressOf = (clock: ManualClock) =>
  egressGuardFor(
    { host: '127.0.0.1', publicIp: '127.0.0.1', webhooks: { allowInternal: ['127.0.0.1'] } },
    { listeners: () => [], resolveHost: new TestResolver().resolve, clock },
  )

/** A loopback port nobody listens on. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

describe.each(testStores())('webhook deliveries on $name', ({ open }) => {
  let store: Store
  let clock: ManualClock
  let queue: KyselyJobQueue
  let deliveries: KyselyWebhookDeliveries
  let receiver: WebhookReceiver
  let nudges: number

  const dispatcherFor = (timeoutMs = TIMEOUT_MS) =>
    new WebhookDispatcher({
      deliveries,
      egress: egressOf(clock),
      clock,
      logger: silent,
      retryDelayMs: RETRY_MS,
      timeoutMs,
    })

  beforeEach(async () => {
    store = await open()
    clock = new ManualClock('2026-03-01T00:00:00.000Z')
    nudges = 0
    queue = new KyselyJobQueue({
      db: store.db,
      dialect: store.dialect,
      clock,
      pollIntervalMs: 50,
      onWebhookQueued: () => {
        nudges += 1
      },
    })
    deliveries = new KyselyWebhookDeliveries({ db: store.db, dialect: store.dialect })
    receiver = await startWebhookReceiver()
  })
  afterEach(async () => {
    await receiver.close()
    await store.close()
  })

  /** A queued job with a webhook to the receiver, to `webhook`, or (null) without one. */
  async function submit(webhook: string | null = receiver.url): Promise<Job> {
    const job = testJob({
      endpointId: EP,
      accountId: ACCOUNT,
      input: { n: 1 },
      createdAt: clock.now(),
      ...(webhook === null ? {} : { webhook }),
    })
    await queue.submit(job)
    return job
  }

  /** Submit, take and complete a job; returns its view as /status would show it. */
  async function finished(webhook?: string) {
    const job = await submit(webhook)
    await queue.take(EP, 'w1', { max: 1, leaseMs: 30_000 })
    clock.advance(1_500)
    const done = await queue.complete(EP, job.id, 'w1', { output: { text: 'hi' } })
    if (!done.applied) throw new Error('not completed')
    return done.job
  }

  const recorded = async (jobId: string): Promise<WebhookDelivery> => {
    const found = await deliveries.forJob(ACCOUNT, EP, jobId)
    expect(found).toHaveLength(1)
    return found[0]!
  }

  it('records a pending delivery with the terminal transition and sends it: success first try', async () => {
    const job = await finished()
    expect(nudges).toBe(1)
    const pending = await recorded(job.id)
    expect(pending).toMatchObject({
      jobId: job.id,
      endpointId: EP,
      url: receiver.url,
      jobStatus: 'COMPLETED',
      status: 'pending',
      attempts: [],
      nextAttemptAt: '2026-03-01T00:00:01.500Z',
    })

    expect(await dispatcherFor().dispatch()).toBe(1)
    expect(receiver.received).toHaveLength(1)
    const [hit] = receiver.received
    expect(hit!.method).toBe('POST')
    expect(hit!.headers['content-type']).toBe('application/json')
    // The same JSON as /status returns for the job.
    expect(JSON.parse(hit!.body)).toEqual(jobBody(job, clock.now()))
    expect(JSON.parse(hit!.body)).toMatchObject({
      id: job.id,
      status: 'COMPLETED',
      output: { text: 'hi' },
      delayTime: 0,
      executionTime: 1_500,
      workerId: 'w1',
    })

    const delivered = await recorded(job.id)
    expect(delivered).toMatchObject({
      status: 'delivered',
      finishedAt: '2026-03-01T00:00:01.500Z',
      attempts: [
        { attempt: 1, at: '2026-03-01T00:00:01.500Z', httpStatus: 200, outcome: 'delivered' },
      ],
    })
    expect(delivered).not.toHaveProperty('nextAttemptAt')
    expect(await dispatcherFor().dispatch()).toBe(0)
  })

  it('retries twice, 10 s apart, and is delivered on the third attempt', async () => {
    const job = await finished()
    receiver.script(500, 503)
    const dispatcher = dispatcherFor()
    expect(await dispatcher.dispatch()).toBe(1)
    expect(await recorded(job.id)).toMatchObject({
      status: 'pending',
      nextAttemptAt: '2026-03-01T00:00:11.500Z',
      attempts: [{ attempt: 1, httpStatus: 500, outcome: 'failed' }],
    })
    // Not due before the delay has passed.
    clock.advance(RETRY_MS - 1)
    expect(await dispatcher.dispatch()).toBe(0)
    clock.advance(1)
    expect(await dispatcher.dispatch()).toBe(1)
    clock.advance(RETRY_MS)
    expect(await dispatcher.dispatch()).toBe(1)
    expect(receiver.received).toHaveLength(3)
    expect(new Set(receiver.received.map((r) => r.body)).size).toBe(1)
    const delivery = await recorded(job.id)
    expect(delivery).toMatchObject({ status: 'delivered', finishedAt: '2026-03-01T00:00:21.500Z' })
    expect(delivery.attempts).toEqual([
      expect.objectContaining({ attempt: 1, at: '2026-03-01T00:00:01.500Z', httpStatus: 500 }),
      expect.objectContaining({ attempt: 2, at: '2026-03-01T00:00:11.500Z', httpStatus: 503 }),
      expect.objectContaining({
        attempt: 3,
        at: '2026-03-01T00:00:21.500Z',
        httpStatus: 200,
        outcome: 'delivered',
      }),
    ])
  })

  it('gives up after 3 attempts (no answer in time, a non-200 2xx, a 500) and records it failed', async () => {
    const job = await finished()
    receiver.script('hang', 201, 500)
    const dispatcher = dispatcherFor()
    for (let i = 0; i < 3; i++) {
      expect(await dispatcher.dispatch()).toBe(1)
      clock.advance(RETRY_MS)
    }
    clock.advance(RETRY_MS * 10)
    expect(await dispatcher.dispatch()).toBe(0)
    expect(receiver.received).toHaveLength(3)
    const delivery = await recorded(job.id)
    expect(delivery.status).toBe('failed')
    expect(delivery.finishedAt).toBe('2026-03-01T00:00:21.500Z')
    expect(delivery.attempts).toEqual([
      expect.objectContaining({ attempt: 1, error: WEBHOOK_ERRORS.noAnswer, outcome: 'failed' }),
      expect.objectContaining({ attempt: 2, httpStatus: 201, outcome: 'failed' }),
      expect.objectContaining({ attempt: 3, httpStatus: 500, outcome: 'failed' }),
    ])
    expect(delivery.attempts[0]!.durationMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 20)
    expect(delivery.attempts[0]).not.toHaveProperty('httpStatus')
    receiver.releaseHeld()
  })

  it('records a connection error, or a URL that is not HTTP, as the class of the attempt error', async () => {
    const refused = await finished(`http://127.0.0.1:${await closedPort()}/hook`)
    const dataUrl = await finished('data:,hello')
    await dispatcherFor().dispatch()
    const delivery = await recorded(refused.id)
    expect(delivery.status).toBe('pending')
    // Only the class is kept: the account reading it must not tell a closed port from another.
    expect(delivery.attempts[0]!.error).toBe(WEBHOOK_ERRORS.noAnswer)
    expect((await recorded(dataUrl.id)).attempts[0]).toMatchObject({
      error: WEBHOOK_ERRORS.refused,
      outcome: 'failed',
    })
  })

  it('never delays the job: it is terminal before, and whatever, the receiver answers', async () => {
    receiver.script('hang')
    const job = await finished()
    const dispatcher = dispatcherFor()
    const sending = dispatcher.dispatch()
    await receiver.waitFor(1)
    // The receiver holds the request; the job is COMPLETED all along.
    expect((await queue.get(EP, job.id))!.status).toBe('COMPLETED')
    expect((await recorded(job.id)).status).toBe('pending')
    await sending
    receiver.releaseHeld()
  })

  it('notifies every terminal status (FAILED, CANCELLED, TIMED_OUT) and nothing else', async () => {
    const failed = await submit()
    await queue.take(EP, 'w1', { max: 1, leaseMs: 30_000 })
    await queue.complete(EP, failed.id, 'w1', { error: 'boom' })

    const cancelledQueued = await submit()
    await queue.cancel(EP, cancelledQueued.id)

    const leaseTimedOut = await submit()
    const timedOut = await submit()
    await queue.take(EP, 'w2', { max: 2, leaseMs: 30_000 })
    clock.advance(600_000)
    // One is swept by the lease check (lease and deadline both passed), one by the deadline.
    await queue.heartbeat(EP, 'w2', [timedOut.id], 3_600_000)
    expect((await queue.requeueExpiredLeases(clock.now())).ended).toEqual([
      expect.objectContaining({ id: leaseTimedOut.id, endpointId: EP, status: 'TIMED_OUT' }),
    ])
    expect((await queue.expire(clock.now())).ended).toEqual([
      expect.objectContaining({ id: timedOut.id, endpointId: EP, status: 'TIMED_OUT' }),
    ])

    const quiet = await submit(null)
    await queue.take(EP, 'w3', { max: 1, leaseMs: 30_000 })
    await queue.complete(EP, quiet.id, 'w3', { output: 1 })
    const stillQueued = await submit()
    await queue.purgeQueued(EP)

    const statusOf = async (job: Job) => (await recorded(job.id)).jobStatus
    expect(await statusOf(failed)).toBe('FAILED')
    expect(await statusOf(cancelledQueued)).toBe('CANCELLED')
    expect(await statusOf(leaseTimedOut)).toBe('TIMED_OUT')
    expect(await statusOf(timedOut)).toBe('TIMED_OUT')
    expect(await deliveries.forJob(ACCOUNT, EP, quiet.id)).toEqual([])
    expect(await deliveries.forJob(ACCOUNT, EP, stillQueued.id)).toEqual([])
    expect(nudges).toBe(4)

    expect(await dispatcherFor().dispatch()).toBe(4)
    const bodies = receiver.received.map((r) => JSON.parse(r.body) as Record<string, unknown>)
    expect(bodies.find((b) => b.id === failed.id)).toMatchObject({
      status: 'FAILED',
      error: 'boom',
    })
    expect(bodies.find((b) => b.id === cancelledQueued.id)).toMatchObject({ status: 'CANCELLED' })
    expect(bodies.find((b) => b.id === timedOut.id)).toMatchObject({ status: 'TIMED_OUT' })
  })

  it('a retried job that ends again is notified again', async () => {
    const job = await submit()
    await queue.take(EP, 'w1', { max: 1, leaseMs: 30_000 })
    await queue.complete(EP, job.id, 'w1', { error: 'first' })
    await queue.retry(EP, job.id)
    await queue.take(EP, 'w1', { max: 1, leaseMs: 30_000 })
    await queue.complete(EP, job.id, 'w1', { output: 'second' })
    const found = await deliveries.forJob(ACCOUNT, EP, job.id)
    expect(found.map((d) => d.jobStatus)).toEqual(['FAILED', 'COMPLETED'])
  })

  it('survives a restart: a pending delivery is sent by a new dispatcher', async () => {
    const job = await finished()
    // The server stops before its dispatcher ran; another process starts over the same store.
    const restartedQueue = new KyselyJobQueue({ db: store.db, dialect: store.dialect, clock })
    const restarted = new WebhookDispatcher({
      deliveries: new KyselyWebhookDeliveries({ db: store.db, dialect: store.dialect }),
      egress: egressOf(clock),
      clock,
      logger: silent,
      retryDelayMs: RETRY_MS,
      timeoutMs: TIMEOUT_MS,
    })
    expect(await restarted.dispatch()).toBe(1)
    expect(JSON.parse(receiver.received[0]!.body)).toMatchObject({ id: job.id })
    expect((await recorded(job.id)).status).toBe('delivered')
    expect((await restartedQueue.get(EP, job.id))!.status).toBe('COMPLETED')
  })

  it('survives a crash mid-attempt: the claim runs out and the attempt is made again', async () => {
    const job = await finished()
    // A dispatcher claims the delivery and dies before it records anything.
    expect(
      await deliveries.claimDue(clock.now(), 10, TIMEOUT_MS + WEBHOOK_CLAIM_MARGIN_MS),
    ).toHaveLength(1)
    const next = dispatcherFor()
    expect(await next.dispatch()).toBe(0)
    clock.advance(TIMEOUT_MS + WEBHOOK_CLAIM_MARGIN_MS)
    expect(await next.dispatch()).toBe(1)
    expect((await recorded(job.id)).attempts).toEqual([
      expect.objectContaining({ attempt: 1, httpStatus: 200 }),
    ])
  })

  it('a stopping dispatcher gives its claims back, so the next start sends at once', async () => {
    receiver.script('hang')
    const job = await finished()
    const dispatcher = dispatcherFor()
    dispatcher.start()
    await receiver.waitFor(1)
    await dispatcher.stop()
    const after = await recorded(job.id)
    expect(after).toMatchObject({ status: 'pending', attempts: [] })
    expect(await dispatcherFor().dispatch()).toBe(1)
    expect((await recorded(job.id)).status).toBe('delivered')
  })

  it('still sends a delivery whose job was deleted by its ttl or retention', async () => {
    const job = await finished()
    clock.advance(31 * 60_000)
    expect((await queue.expire(clock.now())).deleted).toEqual([job.id])
    expect(await queue.get(EP, job.id)).toBeUndefined()
    expect(await dispatcherFor().dispatch()).toBe(1)
    expect(JSON.parse(receiver.received[0]!.body)).toMatchObject({
      id: job.id,
      status: 'COMPLETED',
      output: { text: 'hi' },
    })
  })

  it('shows a job’s deliveries only to its account, and forgets finished ones after a day', async () => {
    const job = await finished()
    expect(await deliveries.forJob('acct_other', EP, job.id)).toEqual([])
    expect(await deliveries.forJob(ACCOUNT, 'endpoint000002', job.id)).toEqual([])
    await dispatcherFor().dispatch()
    const pendingJob = await finished(`http://127.0.0.1:${await closedPort()}/hook`)
    expect(await deliveries.purgeFinished(clock.now())).toBe(1)
    expect(await deliveries.forJob(ACCOUNT, EP, job.id)).toEqual([])
    // Pending deliveries are never purged.
    clock.advance(WEBHOOK_RECORD_RETENTION_MS * 2)
    expect(await deliveries.purgeFinished(clock.now())).toBe(0)
    expect(await deliveries.forJob(ACCOUNT, EP, pendingJob.id)).toHaveLength(1)
  })

  it('sends many deliveries concurrently, each once', async () => {
    const jobs = []
    for (let i = 0; i < 20; i++) jobs.push(await finished())
    // Every receiver answers here: a timeout would only measure how loaded the machine is.
    const a = dispatcherFor(10_000)
    const b = dispatcherFor(10_000)
    const sent = await Promise.all([a.dispatch(), b.dispatch(), a.dispatch()])
    expect(sent.reduce((x, y) => x + y, 0)).toBe(20)
    expect(receiver.received).toHaveLength(20)
    const ids = receiver.received.map((r) => (JSON.parse(r.body) as { id: string }).id)
    expect(new Set(ids)).toEqual(new Set(jobs.map((j) => j.id)))
  })
})
