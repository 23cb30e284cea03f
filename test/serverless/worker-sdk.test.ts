import { Writable } from 'node:stream'
import { pino } from 'pino'
import runpodSdk from 'runpod-sdk'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { serve, type ServeOptions, type WorkerHandle } from '../../src/sdk/worker/index.js'
import { startTestPlatform, TEST_ADMIN_KEY, type TestPlatform } from '../support/platform.js'

type Json = Record<string, unknown>
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Resolves once `check` holds, polling; fails the test after `timeoutMs`. */
async function eventually<T>(
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 5_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined && value !== false) return value
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await sleep(20)
  }
}

/** A promise with its resolve, to hold handlers until the test lets them go. */
function gate<T = void>() {
  let open!: (value: T) => void
  const opened = new Promise<T>((resolve) => {
    open = resolve
  })
  return { open, opened }
}

describe('podyard/worker: TypeScript workers over HTTP, runpod-sdk as the client', () => {
  let platform: TestPlatform
  const requestUrls: string[] = []
  const workers: WorkerHandle[] = []

  const createEndpoint = async (): Promise<string> => {
    const response = await platform.call('/v2/serverless', {
      method: 'POST',
      json: { name: 'sdk', image: 'worker:1', gpu: { pools: ['ADA_24'] } },
    })
    expect(response.status).toBe(201)
    return ((await response.json()) as { id: string }).id
  }
  const sdkFor = (endpointId: string) =>
    runpodSdk(TEST_ADMIN_KEY, { baseUrl: `${platform.url}/v2` }).endpoint(endpointId)!
  const status = async (endpointId: string, jobId: string) =>
    (await (await platform.call(`/v2/${endpointId}/status/${jobId}`)).json()) as Json
  const start = (
    endpointId: string,
    handler: Parameters<typeof serve>[0],
    options: ServeOptions = {},
  ) => {
    const worker = serve(handler, {
      endpointUrl: `${platform.url}/v2/${endpointId}`,
      apiKey: TEST_ADMIN_KEY,
      logger: null,
      ...options,
    })
    workers.push(worker)
    return worker
  }
  /** The paths (with query) of the worker calls the server received for an endpoint. */
  const workerCalls = (endpointId: string, route: string) =>
    requestUrls.filter((url) => url.startsWith(`/v2/${endpointId}/${route}/`))

  beforeAll(async () => {
    // The server's request log tells which worker routes (and queries) the SDK used.
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n')) {
          if (line.includes('"incoming request"')) {
            const url = (JSON.parse(line) as { req?: { url?: string } }).req?.url
            if (url) requestUrls.push(url)
          }
        }
        done()
      },
    })
    // At `debug`: the per-job routes (take, done, ...) write their request log only then.
    platform = await startTestPlatform({}, { logger: pino({ level: 'debug' }, sink) })
    // runpod-sdk's runSync logs every poll.
    vi.spyOn(console, 'log').mockImplementation(() => {})
  })
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.stop({ gracePeriodMs: 0 })))
  })
  afterAll(async () => {
    vi.restoreAllMocks()
    await platform.close()
  })

  it('runs an async handler: runSync and run + status through runpod-sdk', async () => {
    const id = await createEndpoint()
    const sdk = sdkFor(id)
    const seen: Json[] = []
    const worker = start(id, async (job, context) => {
      seen.push({ id: job.id, input: job.input, contextId: context.id })
      return { echo: job.input, by: context.workerId }
    })
    const result = (await sdk.runSync({ input: { n: 1 } }, 10_000)) as Json
    expect(result).toMatchObject({
      status: 'COMPLETED',
      output: { echo: { n: 1 }, by: worker.workerId },
      workerId: worker.workerId,
    })
    expect(result.id).toMatch(/^sync-/)

    const run = (await sdk.run({ input: { n: 2 } })) as Json
    const done = (await sdk.statusSync(run.id as string, 10_000)) as Json
    expect(done).toMatchObject({ status: 'COMPLETED', output: { echo: { n: 2 } } })
    expect(seen).toEqual([
      { id: result.id, input: { n: 1 }, contextId: result.id },
      { id: run.id, input: { n: 2 }, contextId: run.id },
    ])
    // Concurrency 1: plain job-take, with job_in_progress=0 while idle.
    expect(workerCalls(id, 'job-take')[0]).toMatch(
      new RegExp(`^/v2/${id}/job-take/${worker.workerId}\\?job_in_progress=0$`),
    )
    expect(workerCalls(id, 'job-take-batch')).toEqual([])
  })

  it('streams the yields of an async generator, read by sdk.stream; final output is []', async () => {
    const id = await createEndpoint()
    const sdk = sdkFor(id)
    const release = gate()
    start(id, async function* (job) {
      yield 'a'
      await release.opened
      yield { b: (job.input as { b: number }).b }
      yield 'c'
    })
    const run = (await sdk.run({ input: { b: 7 } })) as Json
    const jobId = run.id as string
    const collected = (async () => {
      const out: unknown[] = []
      for await (const chunk of sdk.stream(jobId)) out.push(chunk)
      return out
    })()
    await eventually(async () => (await status(id, jobId)).status === 'IN_PROGRESS')
    release.open()
    expect(await collected).toEqual([{ output: 'a' }, { output: { b: 7 } }, { output: 'c' }])
    const final = await eventually(async () => {
      const job = await status(id, jobId)
      return job.status === 'COMPLETED' ? job : undefined
    })
    expect(final.output).toEqual([])
    // runpod-python's quirk: chunks are posted isStream=false, the final post isStream=true.
    // Chunks carry their index within the run, so that one sent again is appended once.
    expect(workerCalls(id, 'job-stream')).toEqual(
      [0, 1, 2].map((index) =>
        expect.stringMatching(
          new RegExp(`/job-stream/[^/]+/${jobId}\\?isStream=false&chunk_index=${index}$`),
        ),
      ),
    )
    expect(workerCalls(id, 'job-done')).toEqual([
      expect.stringMatching(new RegExp(`/job-done/[^/]+/${jobId}\\?isStream=true$`)),
    ])
  })

  it('returns the aggregate of the chunks as the output with returnAggregateOutput', async () => {
    const id = await createEndpoint()
    const sdk = sdkFor(id)
    start(
      id,
      function* () {
        yield 1
        yield [2]
        yield { three: 3 }
      },
      { returnAggregateOutput: true },
    )
    const result = (await sdk.runSync({ input: {} }, 10_000)) as Json
    expect(result).toMatchObject({ status: 'COMPLETED', output: [1, [2], { three: 3 }] })
  })

  it('shows progress updates in /status as IN_PROGRESS with the output', async () => {
    const id = await createEndpoint()
    const sdk = sdkFor(id)
    const release = gate()
    start(id, async (_job, context) => {
      await context.progress({ step: 1, of: 2 })
      await release.opened
      return 'finished'
    })
    const run = (await sdk.run({ input: {} })) as Json
    const jobId = run.id as string
    const during = await eventually(async () => {
      const job = (await sdk.status(jobId)) as Json
      return job.output !== undefined ? job : undefined
    })
    expect(during).toMatchObject({ status: 'IN_PROGRESS', output: { step: 1, of: 2 } })
    release.open()
    expect(await sdk.statusSync(jobId, 10_000)).toMatchObject({
      status: 'COMPLETED',
      output: 'finished',
    })
  })

  it('fails the job with runpod-python-shaped error strings: thrown, returned, yielded', async () => {
    const id = await createEndpoint()
    const sdk = sdkFor(id)
    const worker = start(id, async function (job) {
      const input = job.input as { mode: string }
      if (input.mode === 'throw') throw new TypeError('bad input')
      if (input.mode === 'return') return { error: 'returned error', partial: 1 }
      return (async function* () {
        yield 'ok'
        throw new Error('stream broke')
      })()
    })
    const thrown = (await sdk.runSync({ input: { mode: 'throw' } }, 10_000)) as Json
    expect(thrown.status).toBe('FAILED')
    expect(JSON.parse(thrown.error as string)).toMatchObject({
      error_type: 'TypeError',
      error_message: 'bad input',
      error_traceback: expect.stringContaining('bad input'),
      worker_id: worker.workerId,
      runpod_version: expect.stringMatching(/^podyard-worker\//),
    })
    const returned = (await sdk.runSync({ input: { mode: 'return' } }, 10_000)) as Json
    expect(returned).toMatchObject({
      status: 'FAILED',
      error: 'returned error',
      output: { partial: 1 },
    })
    const streamed = (await sdk.runSync({ input: { mode: 'stream' } }, 10_000)) as Json
    expect(streamed.status).toBe('FAILED')
    expect(streamed.error).toMatch(/^handler: stream broke \ntraceback: /)
  })

  it('runs several jobs at once with concurrency, taking them with job-take-batch', async () => {
    const id = await createEndpoint()
    const sdk = sdkFor(id)
    const runs = await Promise.all(
      [1, 2, 3, 4, 5].map(async (n) => (await sdk.run({ input: { n } })) as Json),
    )
    const release = gate()
    let active = 0
    let peak = 0
    const worker = start(
      id,
      async (job) => {
        active += 1
        peak = Math.max(peak, active)
        await release.opened
        active -= 1
        return (job.input as { n: number }).n * 10
      },
      { concurrency: 4 },
    )
    await eventually(() => active === 4)
    expect(worker.activeJobs).toBe(4)
    const health = (await sdk.health()) as { jobs: Json }
    expect(health.jobs).toMatchObject({ inProgress: 4, inQueue: 1 })
    release.open()
    for (const [i, run] of runs.entries()) {
      expect(await sdk.statusSync(run.id as string, 10_000)).toMatchObject({
        status: 'COMPLETED',
        output: (i + 1) * 10,
      })
    }
    expect(peak).toBe(4)
    const batches = workerCalls(id, 'job-take-batch')
    expect(batches[0]).toBe(
      `/v2/${id}/job-take-batch/${worker.workerId}?batch_size=4&job_in_progress=0`,
    )
    // The fifth job was taken while others ran: job_in_progress=1 (one free slot: job-take).
    expect(
      [...batches, ...workerCalls(id, 'job-take')].some((url) => url.endsWith('job_in_progress=1')),
    ).toBe(true)
    // The four results ready at once went out in one job-done-batch post.
    expect(workerCalls(id, 'job-done-batch')).toEqual([
      `/v2/${id}/job-done-batch/${worker.workerId}`,
    ])
  })

  it("takes as many jobs as runpod-python's concurrency_modifier says, asked before each take", async () => {
    const id = await createEndpoint()
    const sdk = sdkFor(id)
    const runs = await Promise.all(
      [1, 2, 3].map(async (n) => (await sdk.run({ input: { n } })) as Json),
    )
    const release = gate()
    let active = 0
    const asked: number[] = []
    const worker = start(
      id,
      async (job) => {
        active += 1
        await release.opened
        active -= 1
        return (job.input as { n: number }).n
      },
      {
        concurrency: (current) => {
          asked.push(current)
          return current < 3 ? current + 1 : 3
        },
      },
    )
    await eventually(() => active === 3)
    expect(worker.activeJobs).toBe(3)
    // It starts at 1; the first take already asks with 1 and gets 2.
    expect(asked.slice(0, 2)).toEqual([1, 2])
    expect(workerCalls(id, 'job-take-batch')[0]).toBe(
      `/v2/${id}/job-take-batch/${worker.workerId}?batch_size=2&job_in_progress=0`,
    )
    release.open()
    for (const run of runs) {
      expect(await sdk.statusSync(run.id as string, 10_000)).toMatchObject({ status: 'COMPLETED' })
    }
  })

  it('reads its concurrency from PODYARD_WORKER_CONCURRENCY, and refuses a bad one', async () => {
    const id = await createEndpoint()
    const sdk = sdkFor(id)
    const runs = await Promise.all(
      [1, 2].map(async (n) => (await sdk.run({ input: { n } })) as Json),
    )
    const release = gate()
    let active = 0
    const worker = start(
      id,
      async () => {
        active += 1
        await release.opened
        active -= 1
        return 'ok'
      },
      { env: { PODYARD_WORKER_CONCURRENCY: '2' } },
    )
    await eventually(() => active === 2)
    expect(workerCalls(id, 'job-take-batch')[0]).toBe(
      `/v2/${id}/job-take-batch/${worker.workerId}?batch_size=2&job_in_progress=0`,
    )
    release.open()
    for (const run of runs) {
      expect(await sdk.statusSync(run.id as string, 10_000)).toMatchObject({ status: 'COMPLETED' })
    }
    expect(() => start(id, () => 'x', { env: { PODYARD_WORKER_CONCURRENCY: 'two' } })).toThrow(
      'PODYARD_WORKER_CONCURRENCY must be a positive integer, not two',
    )
  })

  it('job-done-batch: the results of several jobs in one post; malformed batches are 400', async () => {
    const id = await createEndpoint()
    const sdk = sdkFor(id)
    const [a, b] = [(await sdk.run({ input: {} })) as Json, (await sdk.run({ input: {} })) as Json]
    const take = await platform.call(`/v2/${id}/job-take-batch/w1?batch_size=2`, {
      headers: { authorization: TEST_ADMIN_KEY },
    })
    expect(take.status).toBe(200)
    const post = (body: string) =>
      platform.call(`/v2/${id}/job-done-batch/w1`, {
        method: 'POST',
        body,
        headers: {
          authorization: TEST_ADMIN_KEY,
          'content-type': 'application/x-www-form-urlencoded',
        },
      })
    const done = await post(
      JSON.stringify([
        { id: a.id, output: 'A' },
        { id: b.id, error: '{"error_message": "boom"}' },
        { id: 'nope', output: 1 },
      ]),
    )
    expect(done.status).toBe(200)
    expect(await done.json()).toEqual({
      results: [
        { id: a.id, status: 'ok' },
        { id: b.id, status: 'ok' },
        { id: 'nope', status: 'ignored', reason: 'not-found' },
      ],
    })
    expect(await status(id, a.id as string)).toMatchObject({ status: 'COMPLETED', output: 'A' })
    expect(await status(id, b.id as string)).toMatchObject({ status: 'FAILED' })
    for (const bad of ['{}', '[{"output": 1}]', `[{"id": "x"}, {"id": "x"}]`, 'not json']) {
      expect((await post(bad)).status).toBe(400)
    }
  })

  it('aborts the handler signal when the job is cancelled (job-stop) and posts nothing', async () => {
    const id = await createEndpoint()
    const sdk = sdkFor(id)
    const aborted = gate<unknown>()
    const worker = start(id, (_job, context) => {
      return new Promise((_resolve, reject) => {
        context.signal.addEventListener('abort', () => {
          aborted.open(context.signal.reason)
          reject(context.signal.reason as Error)
        })
      })
    })
    const run = (await sdk.run({ input: {} })) as Json
    const jobId = run.id as string
    await eventually(async () => (await status(id, jobId)).status === 'IN_PROGRESS')
    expect(((await sdk.cancel(jobId)) as Json).status).toBe('CANCELLED')
    const reason = await aborted.opened
    expect(reason).toMatchObject({ name: 'AbortError' })
    await eventually(() => worker.activeJobs === 0)
    expect(workerCalls(id, 'job-stop').length).toBeGreaterThan(0)
    expect(workerCalls(id, 'job-done')).toEqual([])
    expect(await status(id, jobId)).toMatchObject({ status: 'CANCELLED' })
  })

  it('heart-beats with the jobs in flight', async () => {
    const id = await createEndpoint()
    const sdk = sdkFor(id)
    const release = gate()
    const worker = start(
      id,
      async () => {
        await release.opened
        return 'ok'
      },
      { pingIntervalMs: 50 },
    )
    const run = (await sdk.run({ input: {} })) as Json
    await eventually(() =>
      workerCalls(id, 'ping').some((url) => url.includes(`job_id=${run.id as string}`)),
    )
    release.open()
    const ping = workerCalls(id, 'ping').find((url) => url.includes('job_id='))!
    expect(ping).toMatch(
      new RegExp(
        `^/v2/${id}/ping/${worker.workerId}\\?job_id=[^&]+&runpod_version=podyard-worker%2F`,
      ),
    )
  })

  it('stops gracefully: finishes the job in flight, takes nothing more, then resolves', async () => {
    const id = await createEndpoint()
    const sdk = sdkFor(id)
    const release = gate()
    const worker = start(id, async () => {
      await release.opened
      return 'finished in time'
    })
    const first = (await sdk.run({ input: {} })) as Json
    await eventually(() => worker.activeJobs === 1)
    let stopped = false
    const stopping = worker.stop({ gracePeriodMs: 10_000 }).then(() => {
      stopped = true
    })
    await sleep(100)
    expect(stopped).toBe(false)
    release.open()
    await stopping
    await worker.done
    expect(await status(id, first.id as string)).toMatchObject({
      status: 'COMPLETED',
      output: 'finished in time',
    })
    // The stopped worker's aborted long poll must not take a job submitted afterwards.
    const second = (await sdk.run({ input: {} })) as Json
    await sleep(300)
    expect(await status(id, second.id as string)).toMatchObject({ status: 'IN_QUEUE' })
  })

  it('stops an idle worker at once; its aborted long poll takes no later job', async () => {
    const id = await createEndpoint()
    const sdk = sdkFor(id)
    const worker = start(id, async () => 'never')
    await eventually(() => workerCalls(id, 'job-take').length > 0)
    const started = Date.now()
    await worker.stop()
    expect(Date.now() - started).toBeLessThan(1_000)
    // A job submitted while the hang-up is on its way can still be taken (then re-queued when
    // its lease runs out); a while later the server knows the long poll is gone.
    await sleep(100)
    const run = (await sdk.run({ input: {} })) as Json
    await sleep(300)
    expect(await status(id, run.id as string)).toMatchObject({ status: 'IN_QUEUE' })
  })

  it('aborts a job still running when the grace period is over, reporting nothing', async () => {
    const id = await createEndpoint()
    const sdk = sdkFor(id)
    let reason: unknown
    const worker = start(id, (_job, context) => {
      return new Promise((_resolve, reject) => {
        context.signal.addEventListener('abort', () => {
          reason = context.signal.reason
          reject(context.signal.reason as Error)
        })
      })
    })
    const run = (await sdk.run({ input: {} })) as Json
    await eventually(() => worker.activeJobs === 1)
    const started = Date.now()
    await worker.stop({ gracePeriodMs: 200 })
    expect(Date.now() - started).toBeGreaterThanOrEqual(190)
    expect(reason).toMatchObject({ name: 'AbortError', message: 'the worker is stopping' })
    // Not reported: the platform re-queues it when its lease runs out.
    expect(await status(id, run.id as string)).toMatchObject({ status: 'IN_PROGRESS' })
    expect(workerCalls(id, 'job-done')).toEqual([])
  })

  it('recycles after one job with refreshWorker (stopPod) and reads RUNPOD_* settings', async () => {
    const id = await createEndpoint()
    const sdk = sdkFor(id)
    const base = `${platform.url}/v2/${id}`
    const worker = serve(async () => 'once', {
      logger: null,
      refreshWorker: true,
      env: {
        RUNPOD_WEBHOOK_GET_JOB: `${base}/job-take/$ID?gpu=NVIDIA+RTX+A4000`,
        RUNPOD_WEBHOOK_POST_OUTPUT: `${base}/job-done/$RUNPOD_POD_ID/$ID?gpu=NVIDIA+RTX+A4000`,
        RUNPOD_WEBHOOK_POST_STREAM: `${base}/job-stream/$RUNPOD_POD_ID/$ID?gpu=NVIDIA+RTX+A4000`,
        RUNPOD_WEBHOOK_PING: `${base}/ping/$RUNPOD_POD_ID`,
        RUNPOD_AI_API_KEY: TEST_ADMIN_KEY,
        RUNPOD_POD_ID: 'env-worker-1',
        RUNPOD_PING_INTERVAL: '60000',
      },
    })
    workers.push(worker)
    expect(worker.workerId).toBe('env-worker-1')
    const result = (await sdk.runSync({ input: {} }, 10_000)) as Json
    expect(result).toMatchObject({ status: 'COMPLETED', output: 'once', workerId: 'env-worker-1' })
    await worker.done
    expect(workerCalls(id, 'job-take')[0]).toBe(
      `/v2/${id}/job-take/env-worker-1?gpu=NVIDIA+RTX+A4000&job_in_progress=0`,
    )
    expect(workerCalls(id, 'job-done')[0]).toBe(
      `/v2/${id}/job-done/env-worker-1/${result.id as string}?gpu=NVIDIA+RTX+A4000&isStream=false`,
    )
    expect(workerCalls(id, 'ping')[0]).toMatch(
      new RegExp(`^/v2/${id}/ping/env-worker-1\\?runpod_version=podyard-worker%2F`),
    )
    // Recycled: a later job waits for another worker.
    const later = (await sdk.run({ input: {} })) as Json
    await sleep(300)
    expect(await status(id, later.id as string)).toMatchObject({ status: 'IN_QUEUE' })
  })
})
