import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { startAnswerProxy, type AnswerProxy } from '../support/answer-proxy.js'
import { TEST_ADMIN_KEY } from '../support/platform.js'
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
  recordedRuns,
  sleep,
  type LogLine,
} from '../support/worker-sdk-delivery-fixtures.js'

/**
 * The worker SDK keeps what a job produced until the platform has answered for it
 * (docs/worker-sdk.md, "Delivery"), here when answers are lost, refused or late: a run whose
 * lease cannot be renewed is given up before the job can run elsewhere, a stream chunk or
 * result sent again is applied once, and a refusal is retried (or, answered 401, dropped).
 * The other parts: worker-sdk-delivery-outages.test.ts and
 * worker-sdk-delivery-handed-back.test.ts.
 */

describe.each(restartableStores())('podyard/worker delivery on %s', (store) => {
  const suite = deliverySuite(store)
  const { urls, cleanups, createEndpoint, submit, status, finished, start, calls } = suite
  let platform: RestartablePlatform
  beforeAll(() => {
    platform = suite.platform()
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
