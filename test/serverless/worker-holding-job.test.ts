import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { repoRoot } from '../support/cli.js'
import { callJson, type TestPlatform } from '../support/platform.js'
import { platformStores } from '../support/platform-stores.js'
import { until } from '../support/until.js'

/**
 * A worker that holds a job is never stopped as idle: a cold-started
 * worker's first heartbeat can arrive after it was handed its first job, naming no job. The
 * autoscaler counts the jobs the store has leased to the worker, not only what the last
 * heartbeat said. Real worker processes (test/fixtures/late-ping-worker.mjs) over real HTTP.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const FIXTURE = path.join(repoRoot, 'test', 'fixtures', 'late-ping-worker.mjs')

describe.each(platformStores())('a worker holding a job, on $name', (store) => {
  let platform: TestPlatform
  let dir: string

  const call = (pathAndQuery: string, init: Parameters<TestPlatform['call']>[1] = {}) =>
    callJson(platform, pathAndQuery, init)
  const lines = (name: string) =>
    existsSync(path.join(dir, name))
      ? readFileSync(path.join(dir, name), 'utf8').trim().split('\n')
      : []

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-holding-'))
    platform = await store.start({
      sandbox: 'none',
      workers: {
        intervalMs: 200,
        pingIntervalMs: 1000,
        heartbeatTimeoutMs: 8000,
        startTimeoutMs: 30_000,
        stopGraceMs: 2000,
        unhealthyRetentionMs: 1500,
      },
    })
  })

  afterAll(async () => {
    await platform?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('keeps a cold-started worker whose late first ping names no job until its job is done', async () => {
    const created = await call('/v2/serverless', {
      method: 'POST',
      json: {
        name: 'late-ping',
        image: 'podyard/test-worker',
        args: `${process.execPath} ${FIXTURE}`,
        env: { TEST_DIR: dir },
        cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
        workers: { min: 0, max: 1, idleTimeout: 1 },
        scaling: { type: 'QUEUE_DELAY', queueDelay: 0.5 },
      },
    })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    const id = created.body.id as string
    const submitted = await call(`/v2/${id}/run`, {
      method: 'POST',
      // Later than a ping interval (1 s here) after the take: the heartbeat is taken at its word.
      json: { input: { pingAfterMs: 1500, workMs: 4000 } },
    })
    const jobId = submitted.body.id as string

    // The worker scales up from zero, takes the job, and its heartbeat names no job.
    await until(
      'the late ping sent',
      async () => lines(`pinged-${jobId}`),
      (l) => l.length > 0,
    )
    const [workerId] = lines(`taken-${jobId}`)
    // Past the idle timeout (1 s) and several ticks, the job still running: the worker is
    // RUNNING in the list and in /health, and still there.
    await new Promise((resolve) => setTimeout(resolve, 2000))
    const list = (await call(`/v2/serverless/${id}/workers`)).body
    expect(list.workers).toEqual([expect.objectContaining({ id: workerId, status: 'RUNNING' })])
    expect((await call(`/v2/${id}/health`)).body.workers).toMatchObject({ running: 1, idle: 0 })

    const job = await until(
      'the job finished',
      async () => (await call(`/v2/${id}/status/${jobId}`)).body,
      (j) => j.status !== 'IN_QUEUE' && j.status !== 'IN_PROGRESS',
      45_000,
    )
    expect(job).toMatchObject({ status: 'COMPLETED', workerId, output: { worker: workerId } })
    // Run once, by the worker that took it first, which was never told to stop while holding it.
    expect(lines(`taken-${jobId}`)).toEqual([workerId])
    expect(lines(`done-${jobId}`)).toEqual([workerId])
    const requests = (await call(`/v2/${id}/requests`)).body.requests as Json[]
    expect(requests.find((r) => r.id === jobId)).toMatchObject({ attempts: 1 })

    // Then, holding nothing, it is stopped as idle, and held nothing when told to.
    await until(
      'the idle worker stopped',
      async () => (await call(`/v2/serverless/${id}/workers`)).body,
      (l) => l.summary.total === 0,
    )
    for (const name of readdirSync(dir).filter((n) => n.startsWith('sigterm-'))) {
      for (const held of lines(name)) expect(JSON.parse(held)).toEqual([])
    }
    await call(`/v2/serverless/${id}`, { method: 'DELETE' })
  }, 90_000)
})
