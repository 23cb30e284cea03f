import { Writable } from 'node:stream'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { serve } from '../../src/sdk/worker/index.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'

describe('trace context (telemetry.traceContext)', () => {
  let platform: TestPlatform
  let plain: TestPlatform
  const lines: Array<Record<string, unknown>> = []
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line))
      done()
    },
  })

  beforeAll(async () => {
    platform = await startTestPlatform(
      { logLevel: 'info', telemetry: { traceContext: true, endpointLabels: 20 } },
      { logger: pino({ level: 'info' }, sink) },
    )
    plain = await startTestPlatform()
  })
  afterAll(async () => {
    await platform.close()
    await plain.close()
  })

  it("continues the caller's trace, answers this request's span and logs both ids", async () => {
    const response = await platform.call('/v2/catalog/gpus', {
      headers: { traceparent: `00-${TRACE}-00f067aa0ba902b7-01`, 'x-request-id': 'traced-1' },
    })
    const answered = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(
      response.headers.get('traceparent') ?? '',
    )
    expect(answered?.[1]).toBe(TRACE)
    const spanId = answered![2]
    expect(spanId).not.toBe('00f067aa0ba902b7')
    const completed = lines.find((l) => l.reqId === 'traced-1' && l.msg === 'request completed')
    expect(completed).toMatchObject({ traceId: TRACE, spanId })
  })

  it('starts a trace when the caller sends none or a malformed one', async () => {
    const response = await platform.call('/healthz', {
      key: null,
      headers: { traceparent: '00-nope-01' },
    })
    expect(response.headers.get('traceparent')).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
  })

  it("hands a podyard/worker handler the /run request's span as the job's traceparent", async () => {
    const key = await otherAccountKey(platform, 'trace-context-worker@example.com')
    const created = await platform.call('/v2/serverless', {
      key,
      method: 'POST',
      json: { name: 'traced-sdk', image: 'worker:1', gpu: { pools: ['ADA_24'] } },
    })
    expect(created.status).toBe(201)
    const endpointId = ((await created.json()) as { id: string }).id
    const seen: Array<string | undefined> = []
    const worker = serve(
      (job) => {
        seen.push(job.traceparent)
        return { ok: true }
      },
      { endpointUrl: `${platform.url}/v2/${endpointId}`, apiKey: key, logger: null },
    )
    try {
      const run = await platform.call(`/v2/${endpointId}/runsync?wait=10000`, {
        key,
        method: 'POST',
        json: { input: { n: 1 } },
        headers: { traceparent: `00-${TRACE}-00f067aa0ba902b7-01` },
      })
      expect(((await run.json()) as { status: string }).status).toBe('COMPLETED')
      const runSpan = run.headers.get('traceparent')
      expect(runSpan).toMatch(new RegExp(`^00-${TRACE}-[0-9a-f]{16}-01$`))
      // The handler's own spans take it as their parent: they join the caller's trace.
      expect(seen).toEqual([runSpan])
    } finally {
      await worker.stop({ gracePeriodMs: 0 })
    }
  })

  it('is off by default', async () => {
    const response = await plain.call('/healthz', {
      key: null,
      headers: { traceparent: `00-${TRACE}-00f067aa0ba902b7-01` },
    })
    expect(response.headers.get('traceparent')).toBeNull()
  })
})
