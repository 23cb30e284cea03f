import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  lostAttemptReason,
  lostWorkerError,
  MAX_JOB_ATTEMPTS,
} from '../../src/domain/serverless/job.js'
import { json } from '../support/http.js'
import { attribute, otlpReceiver, type OtlpSpan } from '../support/otlp-receiver.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'
import { until } from '../support/until.js'

/**
 * The spans of jobs that no worker's report ends (a ttl that passes in the queue, a worker lost
 * on every attempt) and of a batch take, exported to a real OTLP receiver. The platform's clock
 * is real time plus an offset the test moves, so that a ttl and leases pass at once.
 */

const clock = { offsetMs: 0, now: () => new Date(Date.now() + clock.offsetMs) }
const LEASE_MS = 60_000

/** A traceparent of the caller's own trace, one per job. */
const callerTrace = (n: number) => `${'ab'.repeat(15)}${String(n).padStart(2, '0')}`
const CALLER_SPAN = '00f067aa0ba902b7'

describe('the spans of expired, lost and batch-taken jobs', () => {
  let receiver: Awaited<ReturnType<typeof otlpReceiver>>
  let platform: TestPlatform | undefined
  let expiredId: string
  let expiredRunSpan: string
  let lostId: string
  let lostRunSpan: string
  const batch: Array<{ id: string; runSpan: string; trace: string }> = []

  beforeAll(async () => {
    receiver = await otlpReceiver()
    platform = await startTestPlatform(
      {
        sandbox: 'none',
        workers: { jobLeaseMs: LEASE_MS },
        telemetry: { traceContext: false, endpointLabels: 20, otlpEndpoint: receiver.url },
      },
      { clock },
    )
    const key = await otherAccountKey(platform, 'tracing-sweeps@example.com')
    const call = (p: string, init: Parameters<TestPlatform['call']>[1] = {}) =>
      platform!.call(p, { key, ...init })
    const endpointId = (
      await json<{ id: string }>(
        await call('/v2/serverless', {
          method: 'POST',
          json: { name: 'traced-sweeps', image: 'worker:1', gpu: { pools: ['ADA_24'] } },
        }),
        201,
      )
    ).id
    /** A traced /run: the job's id and the span id of the request that queued it. */
    const run = async (n: number, policy: Record<string, unknown> = {}) => {
      const answer = await call(`/v2/${endpointId}/run`, {
        method: 'POST',
        json: { input: { n }, policy },
        headers: { traceparent: `00-${callerTrace(n)}-${CALLER_SPAN}-01` },
      })
      const span = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(
        answer.headers.get('traceparent') ?? '',
      )
      expect(span?.[1], 'the /run continues the caller trace').toBe(callerTrace(n))
      return { id: (await json<{ id: string }>(answer)).id, runSpan: span![2]! }
    }
    const statusOf = async (id: string) => {
      const answer = await call(`/v2/${endpointId}/status/${id}`)
      return answer.status === 404 ? 'GONE' : (await json<{ status: string }>(answer)).status
    }

    // A job nobody takes before its ttl passes: the sweep deletes it.
    ;({ id: expiredId, runSpan: expiredRunSpan } = await run(1, { ttl: 10_000 }))
    clock.offsetMs += 10_001
    await until(
      `job ${expiredId} deleted`,
      () => statusOf(expiredId),
      (s) => s === 'GONE',
      15_000,
    )

    // Two jobs of two traces, handed out by one batch take, then finished.
    for (const n of [2, 3]) batch.push({ ...(await run(n)), trace: callerTrace(n) })
    const taken = await json<Array<{ id: string }>>(
      await call(`/v2/${endpointId}/job-take-batch/batch-worker?batch_size=2&wait=5000`),
    )
    expect(taken.map((job) => job.id).sort()).toEqual(batch.map((job) => job.id).sort())
    for (const { id } of batch) {
      const done = await call(`/v2/${endpointId}/job-done/batch-worker/${id}`, {
        method: 'POST',
        json: { output: { ok: true } },
      })
      expect(done.status).toBe(200)
    }

    // A job whose worker is lost on every attempt: taken, silent past its lease, each time.
    ;({ id: lostId, runSpan: lostRunSpan } = await run(4))
    for (let attempt = 1; attempt <= MAX_JOB_ATTEMPTS; attempt += 1) {
      const job = await json<{ id: string }>(
        await call(`/v2/${endpointId}/job-take/lost-worker-${attempt}?wait=5000`),
      )
      expect(job.id).toBe(lostId)
      clock.offsetMs += LEASE_MS + 1
      const after = attempt < MAX_JOB_ATTEMPTS ? 'IN_QUEUE' : 'FAILED'
      await until(
        `job ${lostId} ${after}`,
        () => statusOf(lostId),
        (s) => s === after,
        15_000,
      )
    }

    // Closing flushes the spans still buffered.
    await platform.close()
    platform = undefined
  }, 120_000)
  afterAll(async () => {
    await platform?.close()
    await receiver?.close()
  })

  const spansOf = (jobId: string): OtlpSpan[] =>
    receiver.spans.filter((s) => attribute(s, 'podyard.job.id') === jobId)

  it('ends the trace of a job whose ttl passed in the queue: job.queued with job.expired under it', () => {
    const spans = spansOf(expiredId)
    expect(spans.map((s) => s.name).sort()).toEqual(['job.expired', 'job.queued'])
    const queued = spans.find((s) => s.name === 'job.queued')!
    const expired = spans.find((s) => s.name === 'job.expired')!
    for (const span of spans) {
      expect(span.traceId).toBe(callerTrace(1))
      expect(attribute(span, 'podyard.reason')).toBe('EXPIRED')
      expect(attribute(span, 'podyard.job.status')).toBe('IN_QUEUE')
      expect(span.status?.code).toBe(2) // ERROR
    }
    expect(queued.parentSpanId).toBe(expiredRunSpan)
    expect(expired.parentSpanId).toBe(queued.spanId)
    // It waited from its creation until the sweep, 10 s of the platform's clock or more.
    const waitedMs =
      Number(BigInt(queued.endTimeUnixNano) - BigInt(queued.startTimeUnixNano)) / 1_000_000
    expect(waitedMs).toBeGreaterThanOrEqual(10_000)
  })

  it("links a batch take's request span to the span of the request that queued each job", () => {
    const takes = receiver.spans.filter(
      (s) => s.name === 'GET /v2/:endpointId/job-take-batch/:workerId',
    )
    const take = takes.find((s) => (s.links ?? []).length > 0)
    expect(take, 'the batch take span has links').toBeDefined()
    const links = take!.links!.map((l) => ({ traceId: l.traceId, spanId: l.spanId }))
    expect(links).toEqual(
      expect.arrayContaining(batch.map((job) => ({ traceId: job.trace, spanId: job.runSpan }))),
    )
    // The take stays in its own trace; each job's spans are in its own.
    for (const job of batch) {
      expect(take!.traceId).not.toBe(job.trace)
      const spans = spansOf(job.id)
      expect(spans.map((s) => s.name).sort()).toEqual(['job.done', 'job.queued', 'job.taken'])
      for (const span of spans) expect(span.traceId).toBe(job.trace)
    }
  })

  it("writes job.queued and job.taken spans for each attempt of a lost worker's job, job.requeued under each but the last, and job.failed with the reason at the last", () => {
    const spans = spansOf(lostId)
    for (const span of spans) expect(span.traceId).toBe(callerTrace(4))
    const queued = spans.filter((s) => s.name === 'job.queued')
    expect(queued.map((s) => attribute(s, 'podyard.job.attempt')).sort()).toEqual([1, 2, 3])
    expect(queued.map((s) => attribute(s, 'podyard.worker.id')).sort()).toEqual([
      'lost-worker-1',
      'lost-worker-2',
      'lost-worker-3',
    ])
    for (const span of queued) expect(span.parentSpanId).toBe(lostRunSpan)
    // Each attempt's run has its own job.taken: the first two with job.requeued under it.
    const taken = spans.filter((s) => s.name === 'job.taken')
    const takenOf = (attempt: number) =>
      taken.find((s) => attribute(s, 'podyard.job.attempt') === attempt)!
    expect(taken.map((s) => attribute(s, 'podyard.job.attempt')).sort()).toEqual([1, 2, 3])
    for (const span of taken) expect(span.parentSpanId).toBe(lostRunSpan)
    const requeued = spans.filter((s) => s.name === 'job.requeued')
    expect(requeued.map((s) => attribute(s, 'podyard.job.attempt')).sort()).toEqual([1, 2])
    for (const span of requeued) {
      const attempt = attribute(span, 'podyard.job.attempt') as number
      expect(span.parentSpanId).toBe(takenOf(attempt).spanId)
      expect(attribute(span, 'podyard.worker.id')).toBe(`lost-worker-${attempt}`)
      expect(attribute(span, 'podyard.job.status')).toBe('IN_QUEUE')
      expect(attribute(span, 'podyard.reason')).toBe(lostAttemptReason(attempt))
      expect(span.status).toMatchObject({ code: 2, message: lostAttemptReason(attempt) })
      expect(takenOf(attempt).status?.code).toBe(2)
    }
    const failed = spans.filter((s) => s.name === 'job.failed')
    expect(failed).toHaveLength(1)
    expect(failed[0]!.parentSpanId).toBe(takenOf(MAX_JOB_ATTEMPTS).spanId)
    expect(attribute(failed[0]!, 'podyard.job.status')).toBe('FAILED')
    expect(attribute(failed[0]!, 'podyard.worker.id')).toBe('lost-worker-3')
    expect(attribute(failed[0]!, 'podyard.reason')).toBe(lostWorkerError(MAX_JOB_ATTEMPTS))
    expect(failed[0]!.status).toMatchObject({ code: 2, message: lostWorkerError(MAX_JOB_ATTEMPTS) })
  })
})
