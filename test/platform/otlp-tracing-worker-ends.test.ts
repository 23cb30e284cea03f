import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  lostAttemptReason,
  lostWorkerError,
  MAX_JOB_ATTEMPTS,
} from '../../src/domain/serverless/job.js'
import { probeTestCgroups } from '../support/cgroup-probe.js'
import { repoRoot } from '../support/cli.js'
import {
  engineForwarder,
  removeWorkloadContainers,
  type EngineForwarder,
} from '../support/engine-forwarder.js'
import { json } from '../support/http.js'
import { attribute, otlpReceiver, type OtlpSpan } from '../support/otlp-receiver.js'
import {
  otherAccountKey,
  startTestPlatform,
  type TestConfig,
  type TestPlatform,
} from '../support/platform.js'
import { until } from '../support/until.js'

/**
 * The spans and the jobs-ended count of jobs that the platform ends or requeues as a worker
 * ends, without the job sweep: a worker the kernel killed for its memory limit (its jobs fail at
 * once), and a worker lost with its host (its jobs go back to the queue at once, or fail on
 * their last attempt). A member account's endpoints, over HTTP, a real OTLP receiver.
 */

/** A traceparent of the caller's own trace, one per job. */
const callerTrace = (n: number) => `${'cd'.repeat(15)}${String(n).padStart(2, '0')}`
const CALLER_SPAN = '00f067aa0ba902b7'

const cgroups = await probeTestCgroups()
if (!cgroups.ok) console.log(`out-of-memory worker spans: left out: ${cgroups.reason}`)
const docker = process.env.PODYARD_TEST_DOCKER === '1'
if (!docker) console.log('host-lost worker spans: skipped: set PODYARD_TEST_DOCKER=1')

type Call = (p: string, init?: Parameters<TestPlatform['call']>[1]) => Promise<Response>

/** A traced /run of `endpointId`: the job's id and the span id of the request that queued it. */
async function tracedRun(call: Call, endpointId: string, n: number, input: unknown) {
  const answer = await call(`/v2/${endpointId}/run`, {
    method: 'POST',
    json: { input },
    headers: { traceparent: `00-${callerTrace(n)}-${CALLER_SPAN}-01` },
  })
  const span = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(answer.headers.get('traceparent') ?? '')
  expect(span?.[1], 'the /run continues the caller trace').toBe(callerTrace(n))
  return { id: (await json<{ id: string }>(answer)).id, runSpan: span![2]! }
}

/** The value of `podyard_jobs_ended_total` for one status and endpoint label (0 when absent). */
async function endedCount(platform: TestPlatform, status: string, endpoint: string) {
  const text = await (await platform.call('/metrics')).text()
  const line = text
    .split('\n')
    .find((l) =>
      l.startsWith(`podyard_jobs_ended_total{status="${status}",endpoint="${endpoint}"}`),
    )
  return line === undefined ? 0 : Number(line.split(' ').at(-1))
}

const spansOf = (spans: OtlpSpan[], jobId: string) =>
  spans.filter((s) => attribute(s, 'podyard.job.id') === jobId)

/**
 * A platform that sends its spans to `receiver` and runs on `fleetYaml`, a member account and
 * an endpoint of it: what both suites start from.
 */
async function tracedMemberEndpoint(
  receiver: { url: string },
  config: TestConfig,
  fleetYaml: string,
  email: string,
  endpoint: Record<string, unknown>,
): Promise<{ platform: TestPlatform; call: Call; endpointId: string }> {
  const platform = await startTestPlatform(
    {
      ...config,
      telemetry: { traceContext: false, endpointLabels: 20, otlpEndpoint: receiver.url },
    },
    { fleetYaml },
  )
  const key = await otherAccountKey(platform, email)
  const call: Call = (p, init = {}) => platform.call(p, { key, ...init })
  const created = await json<{ id: string }>(
    await call('/v2/serverless', { method: 'POST', json: endpoint }),
    201,
  )
  return { platform, call, endpointId: created.id }
}

describe.runIf(cgroups.ok)('the spans of a job whose worker ran out of memory', () => {
  let receiver: Awaited<ReturnType<typeof otlpReceiver>>
  let platform: TestPlatform | undefined
  let job: { id: string; runSpan: string }
  let endpointId: string
  let failedBefore: number
  let failedAfter: number
  let workerId: string

  beforeAll(async () => {
    receiver = await otlpReceiver()
    const started = await tracedMemberEndpoint(
      receiver,
      // The fixture lives in the repository, which a bubblewrap sandbox does not show; the
      // worker's cgroup limits its memory all the same.
      { sandbox: 'none', workers: { intervalMs: 200, pingIntervalMs: 1000 } },
      // Two GPUs on 2 GB: a one-GPU worker rents 1 GB.
      `
dataCenters:
  - id: EU-SE-1
    name: EU Sweden 1
    region: EUROPE
hosts:
  - id: oom-process-1
    dataCenterId: EU-SE-1
    gpu: { typeId: NVIDIA L4, count: 2 }
    vcpus: 2
    memoryGb: 2
    driver: process
localHost: false
`,
      'tracing-oom@example.com',
      {
        name: 'traced-oom',
        image: 'podyard/test-worker',
        args: `${process.execPath} ${path.join(repoRoot, 'test', 'fixtures', 'sdk-worker.mjs')}`,
        gpu: { pools: ['AMPERE_24'], count: 1 },
        workers: { min: 0, max: 1 },
      },
    )
    platform = started.platform
    endpointId = started.endpointId
    const call = started.call
    failedBefore = await endedCount(platform, 'FAILED', endpointId)
    job = await tracedRun(call, endpointId, 1, { holdMb: 1600 })
    const failed = await until(
      `job ${job.id} FAILED`,
      async () =>
        json<{ status: string; error?: string }>(await call(`/v2/${endpointId}/status/${job.id}`)),
      (s) => s.status === 'FAILED',
      90_000,
    )
    expect(failed.error).toBe('out of memory: the worker used its 1 GB')
    failedAfter = await endedCount(platform, 'FAILED', endpointId)
    const { workers } = await json<{ workers: Array<{ id: string; reason: string | null }> }>(
      await call(`/v2/serverless/${endpointId}/workers`),
    )
    workerId = workers.find((w) => w.reason?.startsWith('out of memory'))!.id
    // Closing flushes the spans still buffered.
    await platform.close()
    platform = undefined
  }, 150_000)
  afterAll(async () => {
    await platform?.close()
    await receiver?.close()
  })

  it('counts the job in podyard_jobs_ended_total under its endpoint', () => {
    expect(failedAfter - failedBefore).toBe(1)
  })

  it('ends its trace: job.taken with job.failed under it, with the reason', () => {
    const spans = spansOf(receiver.spans, job.id)
    expect(spans.map((s) => s.name).sort()).toEqual(['job.failed', 'job.queued', 'job.taken'])
    for (const span of spans) {
      expect(span.traceId).toBe(callerTrace(1))
      expect(attribute(span, 'podyard.worker.id')).toBe(workerId)
      expect(attribute(span, 'podyard.job.attempt')).toBe(1)
    }
    const taken = spans.find((s) => s.name === 'job.taken')!
    const failed = spans.find((s) => s.name === 'job.failed')!
    expect(taken.parentSpanId).toBe(job.runSpan)
    expect(failed.parentSpanId).toBe(taken.spanId)
    expect(attribute(failed, 'podyard.job.status')).toBe('FAILED')
    expect(attribute(failed, 'podyard.reason')).toBe('out of memory: the worker used its 1 GB')
    expect(failed.status).toMatchObject({
      code: 2,
      message: 'out of memory: the worker used its 1 GB',
    })
  })
})

describe.runIf(docker)('the spans of the jobs of a worker lost with its host', () => {
  const LEASE_MS = 5_000
  let receiver: Awaited<ReturnType<typeof otlpReceiver>>
  let platform: TestPlatform | undefined
  let dir: string
  let engine: EngineForwarder
  let endpointId: string
  let lostWorker: string
  /** Taken by the lost worker on its first attempt: requeued, then finished by another. */
  let requeued: { id: string; runSpan: string }
  /** Taken by the lost worker on its last attempt: failed. */
  let exhausted: { id: string; runSpan: string }
  let failedBefore: number
  let failedAfter: number

  beforeAll(async () => {
    receiver = await otlpReceiver()
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-lost-host-spans-'))
    const socket = path.join(dir, 'engine.sock')
    engine = await engineForwarder(socket)
    const started = await tracedMemberEndpoint(
      receiver,
      {
        workers: {
          intervalMs: 200,
          jobLeaseMs: LEASE_MS,
          // A host with its own engine counts as remote: it takes no worker given a loopback
          // job API address. The worker's container never calls (it sleeps; the test speaks
          // for it).
          jobApiUrl: 'http://192.0.2.10:8080',
        },
        hosts: { probeIntervalMs: 300, probeTimeoutMs: 2_000, failuresBeforeDown: 2 },
        // This engine cannot size a container's disk, and as another host's engine podyard sets
        // it no disk-write limit; the member's worker runs all the same.
        containment: { acceptUnenforced: ['disk', 'diskWrite'] },
      },
      `
dataCenters:
  - id: EU-SE-1
    name: EU Sweden 1
    region: EUROPE
hosts:
  - id: lost-engine-1
    dataCenterId: EU-SE-1
    cpuFlavors: [cpu3c]
    vcpus: 4
    memoryGb: 8
    docker: { url: "unix://${socket}" }
localHost: false
`,
      'tracing-lost-host@example.com',
      {
        name: 'traced-lost-host',
        image: 'podyard-conformance/plain:1',
        args: 'exec sleep 600',
        cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
        workers: { min: 1, max: 1 },
      },
    )
    platform = started.platform
    endpointId = started.endpointId
    const call = started.call
    const workers = async () =>
      (
        await json<{ workers: Array<{ id: string; status: string; reason: string | null }> }>(
          await call(`/v2/serverless/${endpointId}/workers`),
        )
      ).workers
    const [launched] = await until(
      'the worker launched',
      workers,
      (list) => list.length === 1 && list[0]!.status === 'INITIALIZING',
      60_000,
    )
    lostWorker = launched!.id
    const statusOf = async (id: string) =>
      (await json<{ status: string }>(await call(`/v2/${endpointId}/status/${id}`))).status
    const take = async (workerId: string, holding = false) =>
      json<{ id: string }>(
        await call(
          `/v2/${endpointId}/job-take/${workerId}?wait=5000&job_in_progress=${holding ? 1 : 0}`,
        ),
      )

    // Its first two attempts on self-started workers that go silent past their leases.
    exhausted = await tracedRun(call, endpointId, 1, { n: 1 })
    for (let attempt = 1; attempt < MAX_JOB_ATTEMPTS; attempt += 1) {
      expect((await take(`silent-worker-${attempt}`)).id).toBe(exhausted.id)
      await until(
        `job ${exhausted.id} back in the queue`,
        () => statusOf(exhausted.id),
        (s) => s === 'IN_QUEUE',
        LEASE_MS + 10_000,
      )
    }
    requeued = await tracedRun(call, endpointId, 2, { n: 2 })
    // The platform's worker takes both (the test speaks for it), then its host is lost.
    expect((await take(lostWorker)).id).toBe(exhausted.id)
    expect((await take(lostWorker, true)).id).toBe(requeued.id)
    failedBefore = await endedCount(platform, 'FAILED', endpointId)
    await engine.lose()
    const failed = await until(
      'the worker UNHEALTHY, lost with its host',
      async () => (await workers()).find((w) => w.id === lostWorker),
      (w) => w?.status === 'UNHEALTHY',
      30_000,
    )
    expect(failed!.reason).toMatch(/^host lost-engine-1 lost at /)
    expect(await statusOf(exhausted.id)).toBe('FAILED')
    expect(await statusOf(requeued.id)).toBe('IN_QUEUE')
    failedAfter = await endedCount(platform, 'FAILED', endpointId)
    // Another worker runs the requeued job to its end.
    expect((await take('rescue-worker')).id).toBe(requeued.id)
    const done = await call(`/v2/${endpointId}/job-done/rescue-worker/${requeued.id}`, {
      method: 'POST',
      json: { output: { ok: true } },
    })
    expect(done.status).toBe(200)
    // The engine is back: closing removes the lost worker's container, and flushes the spans.
    await engine.restore()
    await platform.close()
    platform = undefined
  }, 180_000)
  afterAll(async () => {
    // Set only when the test failed before it closed the platform: the cleanup goes on.
    await engine?.restore()
    await platform?.close().catch(() => undefined)
    // The lost worker's container outlives its engine's loss by design.
    if (lostWorker) await removeWorkloadContainers([lostWorker])
    await engine?.lose().catch(() => undefined)
    await receiver?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  }, 60_000)

  it('counts the job it failed in podyard_jobs_ended_total under its endpoint', () => {
    expect(failedAfter - failedBefore).toBe(1)
  })

  it('gives the attempt cut short its own job.taken with job.requeued under it; the trace goes on', () => {
    const spans = spansOf(receiver.spans, requeued.id)
    for (const span of spans) expect(span.traceId).toBe(callerTrace(2))
    expect(spans.map((s) => `${s.name} ${attribute(s, 'podyard.job.attempt')}`).sort()).toEqual([
      'job.done 2',
      'job.queued 1',
      'job.queued 2',
      'job.requeued 1',
      'job.taken 1',
      'job.taken 2',
    ])
    const lost = spans.find(
      (s) => s.name === 'job.taken' && attribute(s, 'podyard.job.attempt') === 1,
    )!
    const cut = spans.find((s) => s.name === 'job.requeued')!
    expect(lost.parentSpanId).toBe(requeued.runSpan)
    expect(cut.parentSpanId).toBe(lost.spanId)
    for (const span of [lost, cut]) {
      expect(attribute(span, 'podyard.worker.id')).toBe(lostWorker)
      expect(attribute(span, 'podyard.job.status')).toBe('IN_QUEUE')
      expect(span.status).toMatchObject({ code: 2, message: lostAttemptReason(1) })
    }
  })

  it('ends the trace of the job lost on its last attempt: job.taken with job.failed under it', () => {
    const spans = spansOf(receiver.spans, exhausted.id)
    for (const span of spans) expect(span.traceId).toBe(callerTrace(1))
    expect(spans.map((s) => `${s.name} ${attribute(s, 'podyard.job.attempt')}`).sort()).toEqual([
      'job.failed 3',
      'job.queued 1',
      'job.queued 2',
      'job.queued 3',
      'job.requeued 1',
      'job.requeued 2',
      'job.taken 1',
      'job.taken 2',
      'job.taken 3',
    ])
    const last = spans.find(
      (s) => s.name === 'job.taken' && attribute(s, 'podyard.job.attempt') === 3,
    )!
    const failed = spans.find((s) => s.name === 'job.failed')!
    expect(failed.parentSpanId).toBe(last.spanId)
    expect(attribute(failed, 'podyard.worker.id')).toBe(lostWorker)
    expect(attribute(failed, 'podyard.job.status')).toBe('FAILED')
    expect(failed.status).toMatchObject({ code: 2, message: lostWorkerError(MAX_JOB_ATTEMPTS) })
  })
})
