import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { managedWorkersSuite } from '../support/managed-workers-fixtures.js'
import { callJson, startTestPlatform, type TestPlatform } from '../support/platform.js'
import { SDK_WORKER_FIXTURE as FIXTURE } from '../support/sdk-worker-endpoints.js'
import { until } from '../support/until.js'

/**
 * Serverless workers run by the platform: real worker processes under the process
 * driver, each a podyard/worker program (test/fixtures/sdk-worker.mjs) configured only by the
 * RUNPOD_* environment the autoscaler gives it, over real HTTP. Here their life: scaling from
 * and back to zero, what the list, /health and the logs show, rolling to a new version,
 * waiting for capacity and stopping with their endpoint. Workers lost, replaced or cancelled
 * mid-job: managed-workers-faults.test.ts.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

describe('managed serverless workers', () => {
  const suite = managedWorkersSuite()
  const { call, createEndpoint, workersOf, health, run, status } = suite
  let platform: TestPlatform
  let dir: string
  beforeAll(() => {
    platform = suite.platform()
    dir = suite.dir()
  })

  it('scales 0 -> 3 -> 0 and completes 30 jobs exactly once; /health and the list agree', async () => {
    const id = await createEndpoint()
    expect(await workersOf(id)).toEqual({
      endpointVersion: 1,
      summary: { running: 0, idle: 0, initializing: 0, throttled: 0, unhealthy: 0, total: 0 },
      workers: [],
    })
    const jobIds: string[] = []
    for (let n = 0; n < 30; n++) jobIds.push(await run(id, { n, sleepMs: 150 }))

    let most = 0
    const seenWorkers = new Set<string>()
    const finished = await until(
      'all 30 jobs finished',
      async () => {
        const list = await workersOf(id)
        most = Math.max(most, list.summary.total)
        for (const w of list.workers) seenWorkers.add(w.id)
        const h = await health(id)
        // The list and /health count the same workers.
        if (list.summary.total > 0) {
          expect(h.workers.running + h.workers.idle + h.workers.initializing).toBeLessThanOrEqual(
            list.summary.total,
          )
        }
        return h.jobs
      },
      (jobs) => jobs.completed === 30,
      60_000,
    )
    expect(finished).toMatchObject({ completed: 30, failed: 0, inProgress: 0, inQueue: 0 })
    expect(most).toBe(3)

    for (const jobId of jobIds) {
      const job = await status(id, jobId)
      expect(job.status).toBe('COMPLETED')
      expect(seenWorkers.has(job.workerId)).toBe(true)
      expect(job.output.worker).toBe(job.workerId)
      // Run to completion exactly once.
      expect(
        readFileSync(path.join(dir, `done-${jobId}`), 'utf8')
          .trim()
          .split('\n'),
      ).toHaveLength(1)
    }
    const used = new Set<string>()
    for (const jobId of jobIds) used.add((await status(id, jobId)).workerId)
    expect(used.size).toBeGreaterThan(1)

    // Idle past idleTimeout (10 s, the default): back to min (0).
    await until(
      'workers back to 0',
      () => workersOf(id),
      (list) => list.summary.total === 0,
      30_000,
    )
    expect((await health(id)).workers).toEqual({
      idle: 0,
      initializing: 0,
      ready: 0,
      running: 0,
      throttled: 0,
      unhealthy: 0,
    })
    expect(await platform.drivers[0]!.list()).toEqual(
      expect.not.arrayContaining([expect.objectContaining({ id: [...seenWorkers][0] })]),
    )
  }, 120_000)

  it('shows each worker with its state, version and output', async () => {
    const id = await createEndpoint({ workers: { min: 1, max: 1, idleTimeout: 2 } })
    const ready = await until(
      'one idle worker',
      () => workersOf(id),
      (list) => list.workers.length === 1 && list.workers[0].status === 'IDLE',
    )
    const worker = ready.workers[0]
    expect(worker).toMatchObject({
      status: 'IDLE',
      isStale: false,
      version: 1,
      gpuCount: 0,
      image: 'podyard/test-worker',
      gpuTypeId: null,
      dataCenterId: expect.any(String),
      startedAt: expect.any(String),
      reason: null,
    })
    expect(ready.summary).toEqual({
      running: 0,
      idle: 1,
      initializing: 0,
      throttled: 0,
      unhealthy: 0,
      total: 1,
    })
    expect((await health(id)).workers).toMatchObject({ idle: 1, ready: 1, running: 0 })

    const logs = await platform.call(`/v2/serverless/${id}/workers/${worker.id}/logs?follow=false`)
    expect(logs.headers.get('content-type')).toMatch(/^text\/event-stream/)
    expect(await logs.text()).toContain(`worker ${worker.id} of ${id} is taking jobs`)
    expect((await call(`/v2/serverless/${id}/workers/nosuchworker/logs`)).status).toBe(404)

    const jobId = await run(id, { sleepMs: 1500 })
    await until(
      'the worker RUNNING',
      () => workersOf(id),
      (list) => list.workers[0]?.status === 'RUNNING',
    )
    expect((await health(id)).workers).toMatchObject({ idle: 0, ready: 1, running: 1 })
    await until(
      'the job done',
      () => status(id, jobId),
      (job) => job.status === 'COMPLETED',
    )
    await call(`/v2/serverless/${id}`, { method: 'DELETE' })
  }, 60_000)

  it('lets lowPriority jobs wait without scaling up', async () => {
    const id = await createEndpoint({ scaling: { type: 'QUEUE_DELAY', queueDelay: 0.5 } })
    const jobId = await run(id, { n: 1 }, { lowPriority: true })
    await new Promise((resolve) => setTimeout(resolve, 2500))
    expect((await workersOf(id)).summary.total).toBe(0)
    expect((await status(id, jobId)).status).toBe('IN_QUEUE')
    // A normal job does scale up, and the worker then takes both.
    const normal = await run(id, { n: 2 })
    await until(
      'both done',
      () => health(id),
      (h) => h.jobs.completed === 2,
      30_000,
    )
    expect((await status(id, normal)).status).toBe('COMPLETED')
    await call(`/v2/serverless/${id}`, { method: 'DELETE' })
  }, 60_000)

  it('rolls workers to a new version without dropping jobs', async () => {
    const id = await createEndpoint({
      env: { TEST_DIR: dir, MODE: 'one' },
      workers: { min: 2, max: 2, idleTimeout: 2 },
    })
    await until(
      'two idle workers',
      () => workersOf(id),
      (list) => list.workers.filter((w: Json) => w.status === 'IDLE').length === 2,
    )
    const before = (await workersOf(id)).workers.map((w: Json) => w.id)
    const busy = [await run(id, { sleepMs: 1500 }), await run(id, { sleepMs: 1500 })]
    await until(
      'both running',
      () => health(id),
      (h) => h.jobs.inProgress === 2,
    )
    const patched = await call(`/v2/serverless/${id}`, {
      method: 'PATCH',
      json: { env: { TEST_DIR: dir, MODE: 'two' } },
    })
    expect(patched.body.version).toBe(2)
    const during = await until(
      'old workers marked stale',
      () => workersOf(id),
      (list) => list.workers.some((w: Json) => w.isStale),
    )
    expect(during.endpointVersion).toBe(2)
    const after = await until(
      'only version-2 workers',
      () => workersOf(id),
      (list) =>
        list.workers.length === 2 &&
        list.workers.every((w: Json) => w.version === 2 && w.status === 'IDLE'),
      45_000,
    )
    expect(after.workers.map((w: Json) => w.id)).not.toEqual(expect.arrayContaining(before))
    for (const jobId of busy) {
      const job = await status(id, jobId)
      expect(job.status).toBe('COMPLETED')
      expect(job.output.mode).toBe('one')
    }
    const fresh = await run(id, { n: 9 })
    const done = await until(
      'new job done',
      () => status(id, fresh),
      (j) => j.status === 'COMPLETED',
    )
    expect(done.output.mode).toBe('two')
    await call(`/v2/serverless/${id}`, { method: 'DELETE' })
  }, 90_000)

  it('hands no job to a worker of the older version once an update is answered', async () => {
    const id = await createEndpoint({
      env: { TEST_DIR: dir, MODE: 'one' },
      workers: { min: 1, max: 1, idleTimeout: 2 },
    })
    await until(
      'an idle worker, waiting in its long poll',
      () => workersOf(id),
      (list) => list.workers.some((w: Json) => w.status === 'IDLE'),
    )
    const patched = await call(`/v2/serverless/${id}`, {
      method: 'PATCH',
      json: { env: { TEST_DIR: dir, MODE: 'two' } },
    })
    expect(patched.body.version).toBe(2)
    // Submitted before the autoscaler's next tick: the stale worker's long poll must not get it.
    const jobId = await run(id, { n: 1 })
    const done = await until(
      'the job done',
      () => status(id, jobId),
      (j) => j.status === 'COMPLETED',
      45_000,
    )
    expect(done.output.mode).toBe('two')
    await call(`/v2/serverless/${id}`, { method: 'DELETE' })
  }, 90_000)

  it('answers the OpenAI route from a TS worker, streaming and not', async () => {
    const id = await createEndpoint({ workers: { min: 1, max: 1, idleTimeout: 2 } })
    const openai = (body: unknown) =>
      platform.call(`/v2/${id}/openai/v1/chat/completions`, { method: 'POST', json: body })
    const messages = [{ role: 'user', content: 'hello there world' }]
    const plain = await openai({ model: 'echo', messages })
    expect(plain.status).toBe(200)
    expect(await plain.json()).toMatchObject({
      object: 'chat.completion',
      model: 'echo',
      choices: [{ message: { role: 'assistant', content: 'echo: hello there world' } }],
    })

    const streamed = await openai({ model: 'echo', messages, stream: true })
    expect(streamed.headers.get('content-type')).toMatch(/^text\/event-stream/)
    const events = (await streamed.text())
      .split('\n\n')
      .filter((e) => e.startsWith('data: '))
      .map((e) => e.slice(6))
    expect(events.at(-1)).toBe('[DONE]')
    expect(events.filter((e) => e === '[DONE]')).toHaveLength(1)
    const words = events
      .slice(0, -1)
      .map((e) => (JSON.parse(e) as Json).choices[0].delta.content as string)
    expect(words).toEqual(['hello', 'there', 'world'])
    await call(`/v2/serverless/${id}`, { method: 'DELETE' })
  }, 60_000)

  it('shows THROTTLED workers when no host has room', async () => {
    const id = await createEndpoint({
      cpu: undefined,
      gpu: { pools: ['AMPERE_80'], count: 1 },
      // The demo fleet's A100s are in EU-RO-1 only.
      dataCenterIds: ['US-KS-2'],
      workers: { min: 1, max: 1, idleTimeout: 2 },
    })
    const list = await until(
      'a throttled worker',
      () => workersOf(id),
      (l) => l.workers[0]?.status === 'THROTTLED',
    )
    expect(list.workers[0].reason).toMatch(/^no capacity: /)
    expect((await health(id)).workers).toMatchObject({ throttled: 1, ready: 0 })
    // Its output is followed from the moment it is placed: the stream waits, it does not end.
    const follow = new AbortController()
    // The stream opens at once, before any line (not at the first keep-alive, 15 s later).
    const logs = await platform.call(
      `/v2/serverless/${id}/workers/${list.workers[0].id}/logs?source=container`,
      { signal: AbortSignal.any([follow.signal, AbortSignal.timeout(5_000)]) },
    )
    expect(logs.status).toBe(200)
    const ended = logs
      .text()
      .then(() => 'ended')
      .catch(() => 'aborted')
    const waited = await Promise.race([
      ended,
      new Promise((resolve) => setTimeout(() => resolve('open'), 1500)),
    ])
    follow.abort()
    expect(waited).toBe('open')
    await call(`/v2/serverless/${id}`, { method: 'DELETE' })
  }, 30_000)

  it('stops the workers of a deleted endpoint', async () => {
    const id = await createEndpoint({ workers: { min: 1, max: 1, idleTimeout: 2 } })
    const list = await until(
      'a worker',
      () => workersOf(id),
      (l) => l.workers[0]?.status === 'IDLE',
    )
    const workerId = list.workers[0].id as string
    expect((await call(`/v2/serverless/${id}`, { method: 'DELETE' })).status).toBe(204)
    await until(
      'its workload gone',
      async () => (await platform.drivers[0]!.list()).map((w) => w.id),
      (ids) => !ids.includes(workerId),
    )
    expect(readdirSync(dir).length).toBeGreaterThan(0)
  }, 30_000)
})

/**
 * Cold start: a queued job wakes the autoscaler at once, and from zero workers one
 * starts without waiting out `queueDelay`. The loop here ticks once at start and then only
 * every 10 minutes, so only the wake-up can start the worker that runs the job.
 */
describe('managed serverless workers from zero', () => {
  let platform: TestPlatform
  let dir: string

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-workers-'))
    platform = await startTestPlatform({
      sandbox: 'none',
      workers: { intervalMs: 600_000, startTimeoutMs: 30_000, stopGraceMs: 2000 },
    })
  })

  afterAll(async () => {
    await platform?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('starts a worker as soon as a job is queued on an endpoint with none', async () => {
    const created = await callJson(platform, '/v2/serverless', {
      method: 'POST',
      json: {
        name: 'cold',
        image: 'podyard/test-worker',
        args: `${process.execPath} ${FIXTURE}`,
        disk: 5,
        env: { TEST_DIR: dir },
        cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
        workers: { min: 0, max: 1, idleTimeout: 60 },
        scaling: { type: 'QUEUE_DELAY', queueDelay: 30 },
      },
    })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    const id = created.body.id as string
    // Past the loop's first tick, which saw no job.
    await new Promise((resolve) => setTimeout(resolve, 300))
    const answer = await callJson(platform, `/v2/${id}/runsync?wait=60000`, {
      method: 'POST',
      json: { input: { n: 1 } },
    })
    expect(answer.body.status, JSON.stringify(answer.body)).toBe('COMPLETED')
    expect((await callJson(platform, `/v2/serverless/${id}/workers`)).body.summary.total).toBe(1)
    await callJson(platform, `/v2/serverless/${id}`, { method: 'DELETE' })
  }, 60_000)
})
