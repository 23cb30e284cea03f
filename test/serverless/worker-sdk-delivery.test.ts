import { Writable } from 'node:stream'
import { pino, type Logger } from 'pino'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import {
  serve,
  STOP_CONFIRM_MS,
  type JobContext,
  type ServeOptions,
  type WorkerHandle,
  type WorkerLogger,
} from '../../src/sdk/worker/index.js'
import { ManualClock } from '../../src/shared/clock.js'
import { startAnswerProxy, type AnswerProxy } from '../support/answer-proxy.js'
import { TEST_ADMIN_KEY } from '../support/platform.js'
import {
  restartableStores,
  startRestartablePlatform,
  type RestartablePlatform,
} from '../support/restartable-platform.js'

/**
 * The worker SDK keeps what a job produced (result, stream chunks, progress updates) until the
 * platform has answered for it (docs/worker-sdk.md, "Delivery"): across a real outage (the
 * platform stopped, its port closed, then started again on the same store and port), across
 * lost answers and refusals, and when a take hands the worker a job it already runs.
 */

type Json = Record<string, unknown>
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Handlers that run until stopped (at most 20 s), recording which worker ran when: to show that
 * a job never runs on two workers at once.
 */
function recordedRuns() {
  const runs: Array<{ worker: string; startedAt: number; stoppedAt?: number }> = []
  const handler = (worker: string) => async (_job: unknown, context: JobContext) => {
    const run: (typeof runs)[number] = { worker, startedAt: Date.now() }
    runs.push(run)
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 20_000)
      context.signal.addEventListener('abort', () => {
        clearTimeout(timer)
        resolve()
      })
    })
    run.stoppedAt = Date.now()
    return { worker }
  }
  return { runs, handler }
}

async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined && value !== false) return value
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`)
    await sleep(20)
  }
}

function gate() {
  let open!: () => void
  const opened = new Promise<void>((resolve) => {
    open = resolve
  })
  return { open, opened }
}

interface LogLine {
  level: 'info' | 'warn' | 'error'
  message: string
  fields: Record<string, unknown> | undefined
}

function collectingLogger(lines: LogLine[]): WorkerLogger {
  const add = (level: LogLine['level']) => (message: string, fields?: Record<string, unknown>) =>
    lines.push({ level, message, fields })
  return { info: add('info'), warn: add('warn'), error: add('error') }
}

/**
 * The server's log: the URLs of the requests it received (the worker routes, with their
 * queries), the ids of the jobs its sweeps re-queued and, where asked for, every message.
 */
function serverLog(seen: { urls: string[]; requeued: string[]; messages?: string[] }): Logger {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) {
        if (line === '') continue
        const entry = JSON.parse(line) as {
          msg?: string
          req?: { url?: string }
          requeued?: string[]
        }
        if (entry.msg !== undefined) seen.messages?.push(entry.msg)
        if (entry.msg === 'incoming request' && entry.req?.url) seen.urls.push(entry.req.url)
        if (entry.msg === 'job sweep') seen.requeued.push(...(entry.requeued ?? []))
      }
      done()
    },
  })
  // At `debug`: the per-job routes (take, done, ...) write their request log only then.
  return pino({ level: 'debug' }, sink)
}

describe.each(restartableStores())('podyard/worker delivery on %s', (store) => {
  let platform: RestartablePlatform
  const urls: string[] = []
  const workers: WorkerHandle[] = []
  const cleanups: Array<() => Promise<void>> = []

  const createEndpoint = async (on = platform): Promise<string> => {
    const response = await on.call('/v2/serverless', {
      method: 'POST',
      json: { name: 'delivery', image: 'worker:1', gpu: { pools: ['ADA_24'] } },
    })
    expect(response.status).toBe(201)
    return ((await response.json()) as { id: string }).id
  }
  const submit = async (endpointId: string, input: Json = {}, on = platform) => {
    const response = await on.call(`/v2/${endpointId}/run`, { method: 'POST', json: { input } })
    expect(response.status).toBe(200)
    return ((await response.json()) as { id: string }).id
  }
  const status = async (endpointId: string, jobId: string, on = platform) =>
    (await (await on.call(`/v2/${endpointId}/status/${jobId}`)).json()) as Json
  const finished = (endpointId: string, jobId: string, on = platform, timeoutMs = 15_000) =>
    eventually(
      `job ${jobId} finished`,
      async () => {
        const job = await status(endpointId, jobId, on)
        return job.status === 'COMPLETED' || job.status === 'FAILED' ? job : undefined
      },
      timeoutMs,
    )
  const start = (
    endpointId: string,
    handler: Parameters<typeof serve>[0],
    options: ServeOptions = {},
    base = platform.url,
  ) => {
    const worker = serve(handler, {
      endpointUrl: `${base}/v2/${endpointId}`,
      apiKey: TEST_ADMIN_KEY,
      logger: null,
      pingIntervalMs: 200,
      ...options,
    })
    workers.push(worker)
    return worker
  }
  const calls = (endpointId: string, route: string, from = 0) =>
    urls.slice(from).filter((url) => url.startsWith(`/v2/${endpointId}/${route}/`))

  beforeAll(async () => {
    platform = await startRestartablePlatform(
      store,
      {},
      { logger: serverLog({ urls, requeued: [] }) },
    )
  })
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.stop({ gracePeriodMs: 0 })))
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
    await platform.start()
  })
  afterAll(async () => {
    await platform?.close()
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
    // platform is back, until its first sweep has run: the sweep comes before the worker can
    // report.
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
    await eventually('the first sweep renewed the lease', () =>
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

  /**
   * Worker A runs a job through a proxy, is cut off by `cut`, and B (direct) must not start the
   * job before A has given its run up.
   */
  async function fencedAfter(
    pingIntervalMs: number,
    cut: (proxy: AnswerProxy) => Promise<void>,
    before?: (proxy: AnswerProxy) => void,
  ): Promise<void> {
    const short = await startRestartablePlatform(store, { workers: { jobLeaseMs: 5_000 } })
    cleanups.push(() => short.close())
    const proxy = await startAnswerProxy(() => short.url)
    cleanups.push(() => proxy.close())
    before?.(proxy)
    const id = await createEndpoint(short)
    const { runs, handler } = recordedRuns()
    start(id, handler('A'), { pingIntervalMs }, proxy.url)
    const jobId = await submit(id, {}, short)
    await eventually('A runs the job', () => runs.length === 1)
    await cut(proxy)
    start(id, handler('B'), { pingIntervalMs: 500 }, short.url)
    await eventually('B runs the job', () => runs.length === 2, 20_000)
    expect(runs.map((r) => r.worker)).toEqual(['A', 'B'])
    expect(runs[0]!.stoppedAt).toBeDefined()
    expect(runs[0]!.stoppedAt!).toBeLessThanOrEqual(runs[1]!.startedAt)
    await short.call(`/v2/${id}/cancel/${jobId}`, { method: 'POST' })
  }

  it('gives up a run whose lease it cannot renew for a whole lease, before the job can run elsewhere', async () => {
    // Cut off, long polls and all: A can neither renew its lease nor hear a stop notice.
    await fencedAfter(500, (proxy) => proxy.close())
  })

  it('gives up a run whose take was its only answer: no heartbeat was ever answered', async () => {
    // Every heartbeat hangs from the start, so the take's answer alone says when the lease ends.
    await fencedAfter(
      500,
      async (proxy) => proxy.close(),
      (proxy) => {
        proxy.rule = (request) => (request.url.includes('/ping/') ? 'hang' : 'forward')
      },
    )
  })

  it('keeps a job handed out at the end of a long poll longer than the lease', async () => {
    // The take waits 20 s on an empty queue; the lease (5 s) starts when the job is handed out,
    // not when the take was sent, so the run is not given up before its first heartbeat (3 s).
    const short = await startRestartablePlatform(store, { workers: { jobLeaseMs: 5_000 } })
    cleanups.push(() => short.close())
    const id = await createEndpoint(short)
    let abandoned = false
    start(
      id,
      async (_job, context) => {
        context.signal.addEventListener('abort', () => {
          abandoned = true
        })
        await sleep(2_000)
        return { ok: true }
      },
      { pingIntervalMs: 3_000 },
      short.url,
    )
    await sleep(7_000)
    const jobId = await submit(id, {}, short)
    expect(await finished(id, jobId, short)).toMatchObject({
      status: 'COMPLETED',
      output: { ok: true },
    })
    expect(abandoned).toBe(false)
  })

  it('gives up a run on time while its heartbeat hangs unanswered (a black-holed network)', async () => {
    // A heartbeat waits up to twice the ping interval (6 s) for its answer: longer than the
    // 4 s from a renewal to the moment the run must be given up.
    await fencedAfter(3_000, async (proxy) => {
      proxy.rule = () => 'hang'
    })
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

  it('job-stream: a numbered chunk sent again is appended once; unnumbered posts as before', async () => {
    const id = await createEndpoint()
    const jobId = await submit(id)
    const take = await platform.call(`/v2/${id}/job-take/w1?wait=0`, {
      key: null,
      headers: { authorization: TEST_ADMIN_KEY },
    })
    expect(take.status).toBe(200)
    // As runpod-python posts (no chunk_index) and as the SDK does (with it).
    const post = (query: string, output: unknown) =>
      platform.call(`/v2/${id}/job-stream/w1/${jobId}?isStream=false${query}`, {
        method: 'POST',
        key: null,
        body: JSON.stringify({ output }),
        headers: {
          authorization: TEST_ADMIN_KEY,
          'content-type': 'application/x-www-form-urlencoded',
        },
      })
    const answers = []
    for (const [query, output] of [
      ['', 'plain'],
      ['', 'plain'],
      ['&chunk_index=0', 'first'],
      ['&chunk_index=0', 'first'],
      ['&chunk_index=1', 'second'],
    ] as const) {
      const response = await post(query, output)
      expect(response.status).toBe(200)
      answers.push(await response.json())
    }
    expect(answers).toEqual([
      { status: 'ok' },
      { status: 'ok' },
      { status: 'ok' },
      { status: 'ignored', reason: 'duplicate' },
      { status: 'ok' },
    ])
    for (const bad of ['-1', 'x', '1.5']) {
      const response = await post(`&chunk_index=${bad}`, 'bad')
      expect(response.status).toBe(400)
      expect(((await response.json()) as { detail: string }).detail).toMatch(/chunk_index/)
    }
    const read = (await (await platform.call(`/v2/${id}/stream/${jobId}`)).json()) as {
      stream: Array<{ output: unknown }>
    }
    expect(read.stream.map((chunk) => chunk.output)).toEqual(['plain', 'plain', 'first', 'second'])
  })

  it('drops a result answered 401 (the worker key was rotated) after one try', async () => {
    const id = await createEndpoint()
    const key = (await (await platform.call(`/v2/serverless/${id}/worker-key`)).json()) as {
      workerKey: string
    }
    const lines: LogLine[] = []
    const release = gate()
    const worker = start(
      id,
      async () => {
        await release.opened
        return 'unreported'
      },
      { apiKey: key.workerKey, logger: collectingLogger(lines) },
    )
    const jobId = await submit(id)
    await eventually('job taken', () => worker.activeJobs === 1)
    const rotated = await platform.call(`/v2/serverless/${id}/worker-key/rotate`, {
      method: 'POST',
    })
    expect(rotated.status).toBe(200)
    release.open()
    await eventually('result dropped', () => worker.activeJobs === 0, 5_000)
    // A retry would follow within 250 ms (the first backoff step).
    await sleep(750)
    expect(calls(id, 'job-done')).toHaveLength(1)
    expect(lines).toContainEqual(
      expect.objectContaining({ level: 'error', fields: expect.objectContaining({ jobId }) }),
    )
    expect(await status(id, jobId)).toMatchObject({ status: 'IN_PROGRESS' })
  })

  describe('a job handed back to the worker that holds it (its lease ran out)', () => {
    // The platform's clock decides the leases; no heartbeat during a test (pingIntervalMs 60 s).
    const clock = new ManualClock(new Date())
    const requeued: string[] = []
    let timed: RestartablePlatform
    let proxy: AnswerProxy
    beforeAll(async () => {
      timed = await startRestartablePlatform(
        store,
        {},
        { clock, logger: serverLog({ urls: [], requeued }) },
      )
      proxy = await startAnswerProxy(() => timed.url)
    })
    afterEach(() => {
      proxy.rule = () => 'forward'
    })
    afterAll(async () => {
      await proxy?.close()
      await timed?.close()
    })

    /**
     * A worker of two slots running one job, which it holds until `release` opens; `rule` is
     * the proxy's between the worker and the platform from the start (the proxy decides when a
     * request comes, and long polls come early).
     */
    const running = async (
      result: () => unknown = () => 'once',
      rule: AnswerProxy['rule'] = () => 'forward',
    ) => {
      proxy.rule = rule
      const id = await createEndpoint(timed)
      const lines: LogLine[] = []
      const state = { runs: 0, aborted: false }
      const release = gate()
      const worker = start(
        id,
        async (_job, context) => {
          state.runs += 1
          const aborted = new Promise<never>((_resolve, reject) => {
            context.signal.addEventListener('abort', () => {
              state.aborted = true
              reject(context.signal.reason as Error)
            })
          })
          await Promise.race([release.opened, aborted])
          return result()
        },
        { concurrency: 2, pingIntervalMs: 60_000, logger: collectingLogger(lines) },
        proxy.url,
      )
      const jobId = await submit(id, {}, timed)
      await eventually('job taken', () => worker.activeJobs === 1)
      return { id, jobId, lines, state, release, worker }
    }
    /**
     * The lease (60 s) runs out: the sweeper re-queues the job and sends the worker a stop
     * notice for it; the worker's next take hands the job back to it. A take the worker starts
     * just after the clock moved renews the lease from the new time (takes with
     * job_in_progress=1 do), so the clock moves again until the sweep has re-queued the job.
     */
    const leaseRunsOut = async (id: string, jobId: string) => {
      const deadline = Date.now() + 20_000
      while (!requeued.includes(jobId)) {
        if (Date.now() > deadline) throw new Error(`job ${jobId} was not re-queued`)
        clock.advance(61_000)
        const tried = Date.now() + 3_000
        while (!requeued.includes(jobId) && Date.now() < tried) await sleep(20)
      }
      await eventually(
        'job taken again',
        async () => (await status(id, jobId, timed)).status === 'IN_PROGRESS',
      )
    }
    /**
     * The stop notice the lease's end left is stale once the job is the worker's again: podyard
     * drops it when the worker polls job-stop after the take, and the worker ignores it when it
     * comes before (STOP_CONFIRM_MS, then a heartbeat). Either way it is over after this.
     */
    const staleNoticeSettled = () => sleep(2 * STOP_CONFIRM_MS)
    const logged = (lines: LogLine[], pattern: RegExp, jobId: string) =>
      lines.some((line) => pattern.test(line.message) && line.fields?.jobId === jobId)

    it('is not started again, its run is not aborted, and it completes once', async () => {
      const { id, jobId, lines, state, release } = await running()
      await leaseRunsOut(id, jobId)
      await staleNoticeSettled()
      expect(state).toEqual({ runs: 1, aborted: false })
      expect(logged(lines, /handed again/, jobId)).toBe(true)
      release.open()
      expect(await finished(id, jobId, timed)).toMatchObject({
        status: 'COMPLETED',
        output: 'once',
      })
      expect(state).toEqual({ runs: 1, aborted: false })
    })

    it('keeps running when the stale stop notice comes after the take (a heartbeat confirms)', async () => {
      const { id, jobId, state, release } = await running(undefined, ({ url }) =>
        url.includes('/job-stop/') ? { delayAnswerMs: 1_500 } : 'forward',
      )
      await leaseRunsOut(id, jobId)
      await staleNoticeSettled()
      expect(state).toEqual({ runs: 1, aborted: false })
      release.open()
      expect(await finished(id, jobId, timed)).toMatchObject({ status: 'COMPLETED' })
      expect(state.runs).toBe(1)
    })

    it('keeps running when the stale stop notice comes just before the take', async () => {
      const { id, jobId, state, release } = await running(undefined, ({ url }) =>
        url.includes('/job-take') ? { delayAnswerMs: 400 } : 'forward',
      )
      await leaseRunsOut(id, jobId)
      await staleNoticeSettled()
      expect(state).toEqual({ runs: 1, aborted: false })
      release.open()
      expect(await finished(id, jobId, timed)).toMatchObject({ status: 'COMPLETED' })
      expect(state.runs).toBe(1)
    })

    it('delivers a result that was waiting for delivery to the new attempt', async () => {
      let refusing = true
      const { id, jobId, lines, state, release } = await running(
        () => 'kept',
        ({ method, url }) =>
          refusing && method === 'POST' && url.includes('/job-done')
            ? { status: 503, body: 'unavailable' }
            : 'forward',
      )
      release.open()
      await eventually('result refused', () => logged(lines, /failed: retrying/, jobId))
      await leaseRunsOut(id, jobId)
      await eventually('handed again', () => logged(lines, /handed again/, jobId))
      expect(lines.find((line) => /handed again/.test(line.message))?.fields).toMatchObject({
        run: 'result waiting for delivery',
      })
      refusing = false
      expect(await finished(id, jobId, timed)).toMatchObject({
        status: 'COMPLETED',
        output: 'kept',
      })
      expect(state).toEqual({ runs: 1, aborted: false })
    })

    it('still stops a job handed back when the platform then cancels it', async () => {
      const { id, jobId, state, worker } = await running()
      await leaseRunsOut(id, jobId)
      await staleNoticeSettled()
      const cancelled = await timed.call(`/v2/${id}/cancel/${jobId}`, { method: 'POST' })
      expect(cancelled.status).toBe(200)
      await eventually('handler aborted', () => state.aborted)
      await eventually('slot freed', () => worker.activeJobs === 0)
      expect(await status(id, jobId, timed)).toMatchObject({ status: 'CANCELLED' })
    })

    it('stops a cancelled job at once-ish while the worker takes more (a free slot)', async () => {
      const { id, jobId, state, worker } = await running()
      const cancelled = await timed.call(`/v2/${id}/cancel/${jobId}`, { method: 'POST' })
      expect(cancelled.status).toBe(200)
      await eventually('handler aborted', () => state.aborted, 5_000)
      await eventually('slot freed', () => worker.activeJobs === 0)
      expect(state.runs).toBe(1)
    })
  })

  describe('through a proxy that loses or refuses answers', () => {
    let proxy: AnswerProxy
    beforeAll(async () => {
      proxy = await startAnswerProxy(() => platform.url)
    })
    afterEach(() => {
      proxy.rule = () => 'forward'
    })
    afterAll(async () => {
      await proxy?.close()
    })

    it('appends a stream chunk once when its answer was lost (chunk_index)', async () => {
      const id = await createEndpoint()
      let streamPosts = 0
      proxy.rule = ({ method, url }) => {
        if (method !== 'POST' || !url.includes('/job-stream/')) return 'forward'
        streamPosts += 1
        return streamPosts === 3 ? 'drop-answer' : 'forward'
      }
      start(
        id,
        function* () {
          for (let i = 0; i < 5; i++) yield i
        },
        {},
        proxy.url,
      )
      const jobId = await submit(id)
      expect(await finished(id, jobId)).toMatchObject({ status: 'COMPLETED' })
      const read = (await (await platform.call(`/v2/${id}/stream/${jobId}`)).json()) as {
        stream: Array<{ output: unknown }>
      }
      expect(read.stream.map((chunk) => chunk.output)).toEqual([0, 1, 2, 3, 4])
      expect(streamPosts).toBe(6)
      expect(calls(id, 'job-stream').filter((url) => url.includes('chunk_index=2'))).toHaveLength(2)
    })

    it('retries a job-done-batch whose answer was lost: the retry comes back ignored, once', async () => {
      const id = await createEndpoint()
      let batches = 0
      proxy.rule = ({ method, url }) => {
        if (method !== 'POST' || !url.includes('/job-done-batch/')) return 'forward'
        batches += 1
        return batches === 1 ? 'drop-answer' : 'forward'
      }
      const lines: LogLine[] = []
      const release = gate()
      let runs = 0
      const worker = start(
        id,
        async () => {
          runs += 1
          await release.opened
          return 'batched'
        },
        { concurrency: 2, logger: collectingLogger(lines) },
        proxy.url,
      )
      const jobIds = [await submit(id), await submit(id)]
      await eventually('both running', () => runs === 2)
      release.open()
      for (const jobId of jobIds) {
        expect(await finished(id, jobId)).toMatchObject({ status: 'COMPLETED', output: 'batched' })
      }
      await eventually('both delivered', () => worker.activeJobs === 0)
      // The lost batch had applied both: each retry (batched again or not) came back ignored.
      for (const jobId of jobIds) {
        expect(lines).toContainEqual({
          level: 'info',
          message: 'job-done ignored by the platform',
          fields: { jobId, reason: 'not-in-progress' },
        })
      }
      expect(batches).toBeGreaterThanOrEqual(1)
      expect(lines.filter((line) => line.level === 'error')).toEqual([])
    })

    it('retries a result refused with 503, renewing its lease meanwhile; honours Retry-After on 429', async () => {
      const id = await createEndpoint()
      const refusals: number[] = []
      let refusing = true
      proxy.rule = ({ method, url }) => {
        if (method !== 'POST' || !url.includes('/job-done/')) return 'forward'
        if (!refusing) return 'forward'
        refusals.push(Date.now())
        return refusals.length === 1
          ? { status: 429, headers: { 'retry-after': '2' }, body: 'slow down' }
          : { status: 503, body: 'unavailable' }
      }
      const worker = start(id, async () => 'eventually', {}, proxy.url)
      const jobId = await submit(id)
      await eventually('refused three times', () => refusals.length >= 3)
      // Retry-After: 2 was honoured (backoff alone would have retried after at most 250 ms).
      expect(refusals[1]! - refusals[0]!).toBeGreaterThanOrEqual(1_900)
      const mark = urls.length
      await eventually('pinged with the pending job', () =>
        calls(id, 'ping', mark).some((url) => url.includes(`job_id=${jobId}`)),
      )
      expect(worker.activeJobs).toBe(1)
      refusing = false
      expect(await finished(id, jobId)).toMatchObject({ status: 'COMPLETED', output: 'eventually' })
    })
  })
})
