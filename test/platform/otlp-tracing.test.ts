import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { repoRoot } from '../support/cli.js'
import { json } from '../support/http.js'
import { attribute, otlpReceiver } from '../support/otlp-receiver.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'
import { startRestartablePlatform } from '../support/restartable-platform.js'
import { until } from '../support/until.js'

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const CALLER_SPAN = '00f067aa0ba902b7'

describe('OpenTelemetry tracing over OTLP/HTTP', () => {
  let receiver: Awaited<ReturnType<typeof otlpReceiver>>
  let platform: TestPlatform | undefined
  let key: string
  let jobId: string
  let podId: string
  let runSpanId: string
  let workerTraceparent: string | undefined
  let cancelledId: string
  let timedOutId: string

  beforeAll(async () => {
    receiver = await otlpReceiver()
    platform = await startTestPlatform({
      sandbox: 'none',
      telemetry: { traceContext: false, endpointLabels: 20, otlpEndpoint: receiver.url },
    })
    key = await otherAccountKey(platform, 'tracing@example.com')
    const call = (p: string, init: Parameters<TestPlatform['call']>[1] = {}) =>
      platform!.call(p, { key, ...init })

    // A request that continues the caller's trace.
    const gpus = await call('/v2/catalog/gpus', {
      headers: { traceparent: `00-${TRACE}-${CALLER_SPAN}-01`, 'x-request-id': 'traced-gpus' },
    })
    expect(gpus.status).toBe(200)

    // A job queued by a traced /run, taken and finished by a worker.
    const endpointId = (
      await json<{ id: string }>(
        await call('/v2/serverless', {
          method: 'POST',
          json: { name: 'traced', image: 'worker:1', gpu: { pools: ['ADA_24'] } },
        }),
        201,
      )
    ).id
    const run = await call(`/v2/${endpointId}/run`, {
      method: 'POST',
      json: { input: { n: 1 } },
      headers: { 'x-request-id': 'traced-run' },
    })
    const answered = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(
      run.headers.get('traceparent') ?? '',
    )
    expect(answered, 'the /run answer names its span').not.toBeNull()
    runSpanId = answered![2]!
    jobId = (await json<{ id: string }>(run)).id
    // The worker protocol as runpod-python speaks it.
    const taken = await json<{ id: string; traceparent?: string }>(
      await call(`/v2/${endpointId}/job-take/traced-worker?wait=5000`),
    )
    expect(taken.id).toBe(jobId)
    workerTraceparent = taken.traceparent
    const done = await call(`/v2/${endpointId}/job-done/traced-worker/${jobId}`, {
      method: 'POST',
      json: { output: { ok: true } },
    })
    expect(done.status).toBe(200)
    // A job cancelled while it waits in the queue.
    cancelledId = (
      await json<{ id: string }>(
        await call(`/v2/${endpointId}/run`, { method: 'POST', json: { input: { n: 2 } } }),
      )
    ).id
    await json(await call(`/v2/${endpointId}/cancel/${cancelledId}`, { method: 'POST' }))
    // A job its worker takes and never reports on: the sweeper times it out.
    timedOutId = (
      await json<{ id: string }>(
        await call(`/v2/${endpointId}/run`, {
          method: 'POST',
          json: { input: { n: 3 }, policy: { executionTimeout: 5_000 } },
        }),
      )
    ).id
    const silent = await json<{ id: string }>(
      await call(`/v2/${endpointId}/job-take/silent-worker?wait=5000`),
    )
    expect(silent.id).toBe(timedOutId)
    await until(
      `job ${timedOutId} TIMED_OUT`,
      async () =>
        (await json<{ status: string }>(await call(`/v2/${endpointId}/status/${timedOutId}`)))
          .status,
      (status) => status === 'TIMED_OUT',
      15_000,
    )

    // A pod that is placed, runs and is terminated.
    const pod = await json<{ id: string }>(
      await call('/v2/pods', {
        method: 'POST',
        json: {
          name: 'traced',
          image: 'x',
          args: 'exec sleep 1000',
          cpu: { id: 'cpu3c', vcpuCount: 2 },
        },
      }),
      201,
    )
    podId = pod.id
    await until(
      `pod ${podId} RUNNING`,
      async () => (await json<{ status: string }>(await call(`/v2/pods/${podId}`))).status,
      (status) => status === 'RUNNING',
      20_000,
    )
    expect((await call(`/v2/pods/${podId}`, { method: 'DELETE' })).status).toBeLessThan(300)
    // Closing flushes the spans still buffered.
    await platform.close()
    platform = undefined
  })
  afterAll(async () => {
    await platform?.close()
    await receiver?.close()
  })

  it("exports a request's span in the caller's trace, with its route and status", () => {
    expect(receiver.contentTypes.every((type) => type.startsWith('application/json'))).toBe(true)
    const span = receiver.spans.find((s) => attribute(s, 'podyard.request_id') === 'traced-gpus')
    expect(span).toBeDefined()
    expect(span!.traceId).toBe(TRACE)
    expect(span!.parentSpanId).toBe(CALLER_SPAN)
    expect(span!.name).toBe('GET /v2/catalog/gpus')
    expect(span!.kind).toBe(2) // SERVER
    expect(attribute(span!, 'http.response.status_code')).toBe(200)
    const service = JSON.stringify(receiver.resources[0])
    expect(service).toContain('"service.name"')
    expect(service).toContain('"podyard"')
  })

  it("puts a job's queued, taken and done spans under the /run request's span, and hands the worker that context", () => {
    const run = receiver.spans.find((s) => s.spanId === runSpanId)
    expect(run?.name).toBe('POST /v2/:endpointId/run')
    expect(workerTraceparent).toBe(`00-${run!.traceId}-${runSpanId}-01`)
    const ofJob = receiver.spans.filter((s) => attribute(s, 'podyard.job.id') === jobId)
    const byName = new Map(ofJob.map((s) => [s.name, s]))
    expect([...byName.keys()].sort()).toEqual(['job.done', 'job.queued', 'job.taken'])
    for (const span of ofJob) {
      expect(span.traceId).toBe(run!.traceId)
      expect(attribute(span, 'podyard.request_id')).toBe('traced-run')
    }
    expect(byName.get('job.queued')!.parentSpanId).toBe(runSpanId)
    expect(byName.get('job.taken')!.parentSpanId).toBe(runSpanId)
    expect(byName.get('job.done')!.parentSpanId).toBe(byName.get('job.taken')!.spanId)
    // The queue wait ends where the run begins.
    expect(byName.get('job.queued')!.endTimeUnixNano).toBe(
      byName.get('job.taken')!.startTimeUnixNano,
    )
  })

  it("links the worker's take request span to the span of the request that queued its job", () => {
    const run = receiver.spans.find((s) => s.spanId === runSpanId)!
    const takes = receiver.spans.filter((s) => s.name === 'GET /v2/:endpointId/job-take/:workerId')
    const take = takes.find((s) => s.links?.some((l) => l.spanId === runSpanId))
    expect(take, 'a take span links to the /run span').toBeDefined()
    expect(take!.links!.find((l) => l.spanId === runSpanId)!.traceId).toBe(run.traceId)
  })

  it('ends a job cancelled in the queue with job.queued and job.cancelled under it', () => {
    const ofJob = receiver.spans.filter((s) => attribute(s, 'podyard.job.id') === cancelledId)
    expect(ofJob.map((s) => s.name).sort()).toEqual(['job.cancelled', 'job.queued'])
    const queued = ofJob.find((s) => s.name === 'job.queued')!
    expect(ofJob.find((s) => s.name === 'job.cancelled')!.parentSpanId).toBe(queued.spanId)
    expect(attribute(queued, 'podyard.job.status')).toBe('CANCELLED')
  })

  it('ends the spans of a job the sweeper timed out, with its status and reason', () => {
    const ofJob = receiver.spans.filter((s) => attribute(s, 'podyard.job.id') === timedOutId)
    const byName = new Map(ofJob.map((s) => [s.name, s]))
    expect([...byName.keys()].sort()).toEqual(['job.queued', 'job.taken', 'job.timed_out'])
    const ended = byName.get('job.timed_out')!
    expect(ended.parentSpanId).toBe(byName.get('job.taken')!.spanId)
    expect(attribute(ended, 'podyard.job.status')).toBe('TIMED_OUT')
    expect(attribute(ended, 'podyard.reason')).toBe('TIMED_OUT')
    expect(ended.status?.code).toBe(2) // ERROR
  })

  it("writes a pod's life as spans under its create request", () => {
    const ofPod = receiver.spans.filter((s) => attribute(s, 'podyard.pod.id') === podId)
    const names = ofPod.map((s) => s.name)
    for (const name of [
      'pod.create',
      'pod.placed',
      'pod.starting',
      'pod.running',
      'pod.terminated',
    ]) {
      expect(names, names.join(', ')).toContain(name)
    }
    const create = receiver.spans.find(
      (s) => s.name === 'POST /v2/pods' && ofPod.some((p) => p.traceId === s.traceId),
    )
    expect(create, 'the create request is in the same trace').toBeDefined()
    for (const span of ofPod) expect(span.parentSpanId).toBe(create!.spanId)
    const running = ofPod.find((s) => s.name === 'pod.running')!
    expect(attribute(running, 'podyard.pod.next_status')).toBe('TERMINATED')
  })
})

describe("a job's spans on a later server", () => {
  it('joins the request that queued the job when a restarted server hands it out and finishes it', async () => {
    const receiver = await otlpReceiver()
    const platform = await startRestartablePlatform('sqlite', {
      telemetry: { traceContext: false, endpointLabels: 20, otlpEndpoint: receiver.url },
    })
    try {
      const key = await otherAccountKey(platform.current!, 'tracing-restart@example.com')
      const call = (p: string, init: Parameters<TestPlatform['call']>[1] = {}) =>
        platform.call(p, { key, ...init })
      const endpointId = (
        await json<{ id: string }>(
          await call('/v2/serverless', {
            method: 'POST',
            json: { name: 'later', image: 'worker:1', gpu: { pools: ['ADA_24'] } },
          }),
          201,
        )
      ).id
      const run = await call(`/v2/${endpointId}/run`, {
        method: 'POST',
        json: { input: {} },
        headers: { traceparent: `00-${TRACE}-${CALLER_SPAN}-01`, 'x-request-id': 'queued-before' },
      })
      const runSpan = /^00-[0-9a-f]{32}-([0-9a-f]{16})-01$/.exec(
        run.headers.get('traceparent') ?? '',
      )![1]!
      const jobId = (await json<{ id: string }>(run)).id
      // Another server process over the same store takes and finishes it.
      await platform.stop()
      await platform.start()
      const taken = await json<{ id: string; traceparent?: string }>(
        await call(`/v2/${endpointId}/job-take/later-worker?wait=5000`),
      )
      expect(taken).toMatchObject({ id: jobId, traceparent: `00-${TRACE}-${runSpan}-01` })
      const done = await call(`/v2/${endpointId}/job-done/later-worker/${jobId}`, {
        method: 'POST',
        json: { error: 'it broke' },
      })
      expect(done.status).toBe(200)
      await platform.stop()
      const ofJob = receiver.spans.filter((s) => attribute(s, 'podyard.job.id') === jobId)
      expect(ofJob.map((s) => s.name).sort()).toEqual(['job.failed', 'job.queued', 'job.taken'])
      for (const span of ofJob) {
        expect(span.traceId).toBe(TRACE)
        expect(attribute(span, 'podyard.request_id')).toBe('queued-before')
      }
      const failed = ofJob.find((s) => s.name === 'job.failed')!
      expect(failed.status).toMatchObject({ code: 2, message: 'it broke' }) // ERROR
      expect(ofJob.find((s) => s.name === 'job.queued')!.parentSpanId).toBe(runSpan)
    } finally {
      await platform.close()
      await receiver.close()
    }
  })
})

describe('tracing off (the default)', () => {
  let dir: string
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-tracing-off-'))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  /**
   * Runs `podyard serve`, one request, and SIGTERM, with a module hook that writes down every
   * OpenTelemetry module the process loads.
   */
  async function serveOnce(env: NodeJS.ProcessEnv): Promise<string[]> {
    const loaded = path.join(dir, `loaded-${Math.random().toString(36).slice(2)}.txt`)
    const hooks = path.join(dir, 'hooks.mjs')
    writeFileSync(
      hooks,
      `import { appendFileSync } from 'node:fs'
export async function resolve(specifier, context, next) {
  if (specifier.includes('@opentelemetry')) appendFileSync(process.env.LOADED_FILE, specifier + '\\n')
  return next(specifier, context)
}
`,
    )
    const register = path.join(dir, 'register.mjs')
    writeFileSync(
      register,
      `import { register } from 'node:module'\nregister(${JSON.stringify(pathToFileURL(hooks).href)})\n`,
    )
    const dataDir = mkdtempSync(path.join(dir, 'data-'))
    const child = spawn(
      process.execPath,
      [
        '--import',
        pathToFileURL(register).href,
        path.join(repoRoot, 'bin', 'podyard.js'),
        'serve',
        '--port',
        '0',
        '--host',
        '127.0.0.1',
        '--data-dir',
        dataDir,
        '--json',
      ],
      {
        cwd: repoRoot,
        env: {
          ...process.env,
          OTEL_EXPORTER_OTLP_ENDPOINT: '',
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '',
          PODYARD_ADMIN_KEY: 'pyd_tracing-off-admin-0123456789',
          LOADED_FILE: loaded,
          ...env,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    const exited = new Promise<void>((resolve) => child.on('close', () => resolve()))
    const url = await new Promise<string>((resolve, reject) => {
      let out = ''
      let err = ''
      child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()))
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString()
        const ready = /\{"ready":\{[^\n]*\n/.exec(out)
        if (ready) resolve((JSON.parse(ready[0]) as { ready: { url: string } }).ready.url)
      })
      child.on('close', (code) => reject(new Error(`serve exited ${code}: ${err}`)))
    })
    const response = await fetch(`${url}/v2/catalog/gpus`, {
      headers: {
        authorization: 'Bearer pyd_tracing-off-admin-0123456789',
        traceparent: `00-${TRACE}-${CALLER_SPAN}-01`,
      },
    })
    expect(response.status).toBe(200)
    child.kill('SIGTERM')
    await exited
    return existsSync(loaded) ? readFileSync(loaded, 'utf8').split('\n').filter(Boolean) : []
  }

  it('loads no OpenTelemetry module and sends nothing; an endpoint set loads the SDK and sends', async () => {
    const receiver = await otlpReceiver()
    try {
      expect(await serveOnce({})).toEqual([])
      expect(receiver.contentTypes).toEqual([])
      // The same run with an endpoint: the hook sees the SDK, the receiver the request's span.
      const loaded = await serveOnce({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url })
      expect(loaded).toContain('@opentelemetry/sdk-trace-base')
      await until(
        'the span of the request',
        async () => receiver.spans.map((s) => s.traceId),
        (ids) => ids.includes(TRACE),
        10_000,
      )
    } finally {
      await receiver.close()
    }
  }, 90_000)
})
