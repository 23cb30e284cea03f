import { beforeAll, describe, expect, it } from 'vitest'
import { startAnswerProxy } from '../support/answer-proxy.js'
import {
  restartableStores,
  startRestartablePlatform,
  type RestartablePlatform,
} from '../support/restartable-platform.js'
import {
  collectingLogger,
  deliverySuite,
  eventually,
  gate,
  serverLog,
  sleep,
  type LogLine,
} from '../support/worker-sdk-delivery-fixtures.js'

/**
 * The worker SDK keeps what a job produced (result, stream chunks, progress updates) until the
 * platform has answered for it (docs/worker-sdk.md, "Delivery"), here across a real outage: the
 * platform stopped, its port closed, then started again on the same store and port. The other
 * parts: worker-sdk-delivery-answers.test.ts (lost, refused and late answers) and
 * worker-sdk-delivery-handed-back.test.ts (a take hands the worker a job it already runs).
 */

describe.each(restartableStores())('podyard/worker delivery on %s', (store) => {
  const suite = deliverySuite(store)
  const { urls, cleanups, createEndpoint, submit, status, finished, start, calls } = suite
  let platform: RestartablePlatform
  beforeAll(() => {
    platform = suite.platform()
  })

  it('keeps a result finished during a 6 s outage and delivers it once the server is back', async () => {
    const id = await createEndpoint()
    let runs = 0
    const release = gate()
    const worker = start(id, async (job) => {
      runs += 1
      await release.opened
      return { done: job.input }
    })
    const jobId = await submit(id, { n: 1 })
    await eventually('job taken', () => worker.activeJobs === 1)
    await platform.stop()
    release.open()
    await sleep(6_000)
    // Still pending: in the heartbeat list, and holding its slot.
    expect(worker.activeJobs).toBe(1)
    await platform.start()
    const job = await finished(id, jobId)
    expect(job).toMatchObject({ status: 'COMPLETED', output: { done: { n: 1 } } })
    expect(runs).toBe(1)
    await eventually('slot freed', () => worker.activeJobs === 0)
  })

  it('delivers a result finished during an outage longer than the job lease (the restarted server renews leases first)', async () => {
    const seen = { urls: [] as string[], requeued: [] as string[], messages: [] as string[] }
    const short = await startRestartablePlatform(
      store,
      { workers: { jobLeaseMs: 5_000 } },
      { logger: serverLog(seen) },
    )
    cleanups.push(() => short.close())
    // The worker reaches the platform through a proxy that keeps refusing (503) after the
    // platform is back, until it has renewed the running leases, as the leader does before its
    // loops run: the renewal comes before the worker can report.
    const proxy = await startAnswerProxy(() => short.url)
    cleanups.push(() => proxy.close())
    const id = await createEndpoint(short)
    let runs = 0
    const release = gate()
    start(
      id,
      async (job) => {
        runs += 1
        await release.opened
        return { done: job.input }
      },
      { pingIntervalMs: 1_000 },
      proxy.url,
    )
    const jobId = await submit(id, { n: 2 }, short)
    await eventually(
      'job taken',
      async () => (await status(id, jobId, short)).status === 'IN_PROGRESS',
    )
    await short.stop()
    release.open()
    // Away for longer than the lease: the lease in the store has run out.
    await sleep(7_000)
    proxy.rule = () => ({ status: 503, body: 'still starting' })
    await short.start()
    await eventually('the leases renewed at start', () =>
      seen.messages.some((message) => message.startsWith('renewed the running jobs')),
    )
    proxy.rule = () => 'forward'
    const job = await finished(id, jobId, short)
    expect(job).toMatchObject({ status: 'COMPLETED', output: { done: { n: 2 } } })
    expect(runs).toBe(1)
    const [row] = await short
      .current!.store.db.selectFrom('jobs')
      .select('attempts')
      .where('id', '=', jobId)
      .execute()
    expect(Number(row!.attempts)).toBe(1)
    expect(seen.requeued).not.toContain(jobId)
  })

  it('retries a failed job-done-batch: results finished together during an outage', async () => {
    const id = await createEndpoint()
    const started = new Set<string>()
    let runs = 0
    const release = gate()
    const worker = start(
      id,
      async (job) => {
        runs += 1
        started.add(job.id)
        await release.opened
        return (job.input as { n: number }).n * 2
      },
      { concurrency: 3 },
    )
    const jobIds = [
      await submit(id, { n: 1 }),
      await submit(id, { n: 2 }),
      await submit(id, { n: 3 }),
    ]
    await eventually('three jobs running', () => started.size === 3)
    await platform.stop()
    release.open()
    // The batch is refused at once and retried; a worker that gave it up would free the slots.
    await sleep(1_500)
    expect(worker.activeJobs).toBe(3)
    await platform.start()
    for (const [i, jobId] of jobIds.entries()) {
      expect(await finished(id, jobId)).toMatchObject({ status: 'COMPLETED', output: (i + 1) * 2 })
    }
    expect(runs).toBe(3)
  })

  it('streams 150 chunks across a 10 s outage: every chunk once, in order', async () => {
    const id = await createEndpoint()
    let yielded = 0
    start(id, async function* () {
      for (let i = 0; i < 150; i++) {
        yielded = i + 1
        yield { i }
        await sleep(30)
      }
    })
    const jobId = await submit(id)
    await eventually('40 chunks posted', () => calls(id, 'job-stream').length >= 40)
    await platform.stop()
    const posted = calls(id, 'job-stream').length
    await sleep(10_000)
    // Back-pressure: the generator waits at the first chunk it could not deliver.
    expect(yielded).toBeLessThanOrEqual(posted + 1)
    await platform.start()
    expect(await finished(id, jobId, platform, 20_000)).toMatchObject({ status: 'COMPLETED' })
    const read = (await (await platform.call(`/v2/${id}/stream/${jobId}`)).json()) as {
      stream: Array<{ output: unknown }>
    }
    expect(read.stream.map((chunk) => chunk.output)).toEqual(
      Array.from({ length: 150 }, (_, i) => ({ i })),
    )
  })

  it('delivers progress updates across an outage, the newest replacing older ones, before the result', async () => {
    const id = await createEndpoint()
    const lines: LogLine[] = []
    const afterFirst = gate()
    const afterLatest = gate()
    let latestDelivered = false
    start(
      id,
      async (_job, context) => {
        await context.progress('p1')
        await afterFirst.opened
        void context.progress('p2')
        await context.progress('p3')
        latestDelivered = true
        await afterLatest.opened
        void context.progress('p4')
        void context.progress('p5')
        return 'done'
      },
      { logger: collectingLogger(lines) },
    )
    const jobId = await submit(id)
    await eventually('p1 shown', async () => (await status(id, jobId)).output === 'p1')
    await platform.stop()
    afterFirst.open()
    // The port is closed: p2's and p3's posts are refused at once and wait, retried.
    await sleep(1_500)
    expect(latestDelivered).toBe(false)
    const mark = urls.length
    await platform.start()
    await eventually('p3 delivered', () => latestDelivered)
    expect(await status(id, jobId)).toMatchObject({ status: 'IN_PROGRESS', output: 'p3' })
    // p2 was replaced by p3 while it waited: one post after the restart.
    expect(calls(id, 'job-done', mark)).toHaveLength(1)
    await platform.stop()
    afterLatest.open()
    await sleep(1_000)
    const beforeResult = urls.length
    await platform.start()
    expect(await finished(id, jobId)).toMatchObject({ status: 'COMPLETED', output: 'done' })
    // p4 replaced by p5, then the result: had the result gone first, p5 would have been ignored.
    expect(calls(id, 'job-done', beforeResult)).toHaveLength(2)
    expect(lines.filter((line) => /ignored/.test(line.message))).toEqual([])
  })

  it('keeps a result through a graceful stop during an outage, within the grace period', async () => {
    const id = await createEndpoint()
    const release = gate()
    const slow = start(id, async () => {
      await release.opened
      return 'kept'
    })
    const jobId = await submit(id)
    await eventually('job taken', () => slow.activeJobs === 1)
    await platform.stop()
    release.open()
    let stopped = false
    const stopping = slow.stop({ gracePeriodMs: 15_000 }).then(() => {
      stopped = true
    })
    // A stop that did not wait for the result would have ended long before (its post is
    // refused at once).
    await sleep(1_500)
    expect(stopped).toBe(false)
    await platform.start()
    await stopping
    expect(await status(id, jobId)).toMatchObject({ status: 'COMPLETED', output: 'kept' })
  })
})
