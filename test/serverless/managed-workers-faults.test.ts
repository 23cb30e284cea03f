import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { managedWorkersSuite } from '../support/managed-workers-fixtures.js'
import type { TestPlatform } from '../support/platform.js'
import { until } from '../support/until.js'

/**
 * Serverless workers run by the platform: real worker processes under the process
 * driver, each a podyard/worker program (test/fixtures/sdk-worker.mjs) configured only by the
 * RUNPOD_* environment the autoscaler gives it, over real HTTP. Here the faults: a worker
 * killed or silent mid-job, a job that keeps losing its worker, a cancel reaching the handler,
 * a rotated worker key and a failed fitness check. Their life otherwise:
 * managed-workers-lifecycle.test.ts.
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

  it('requeues the job of a worker killed mid-job; it completes once, elsewhere', async () => {
    const id = await createEndpoint({ workers: { min: 1, max: 1, idleTimeout: 2 } })
    const jobId = await run(id, { crashOnce: true })
    const job = await until(
      'the job completed',
      () => status(id, jobId),
      (j) => j.status === 'COMPLETED',
      45_000,
    )
    const crashedOn = readFileSync(path.join(dir, `crashed-${jobId}`), 'utf8')
    expect(job.workerId).not.toBe(crashedOn)
    expect(
      readFileSync(path.join(dir, `done-${jobId}`), 'utf8')
        .trim()
        .split('\n'),
    ).toEqual([job.workerId])
    const requests = (await call(`/v2/${id}/requests`)).body.requests as Json[]
    expect(requests.find((r) => r.id === jobId)).toMatchObject({ attempts: 2 })
    await call(`/v2/serverless/${id}`, { method: 'DELETE' })
  }, 60_000)

  it('fails a job after it lost its worker three times', async () => {
    const id = await createEndpoint({ workers: { min: 1, max: 1, idleTimeout: 2 } })
    const jobId = await run(id, { crashAlways: true })
    const job = await until(
      'the job failed',
      () => status(id, jobId),
      (j) => j.status !== 'IN_QUEUE' && j.status !== 'IN_PROGRESS',
      60_000,
    )
    expect(job.status).toBe('FAILED')
    expect(job.error).toBe(
      "the job's worker was lost 3 times (crashed, stopped or missed its heartbeats); it is not retried again",
    )
    const crashedOn = readFileSync(path.join(dir, `crashed-${jobId}`), 'utf8')
      .trim()
      .split('\n')
    expect(new Set(crashedOn).size).toBe(3)
    const requests = (await call(`/v2/${id}/requests`)).body.requests as Json[]
    expect(requests.find((r) => r.id === jobId)).toMatchObject({ attempts: 3 })
    // The endpoint goes on with a fresh worker.
    const next = await run(id, { n: 1 })
    await until(
      'the next job done',
      () => status(id, next),
      (j) => j.status === 'COMPLETED',
    )
    await call(`/v2/serverless/${id}`, { method: 'DELETE' })
  }, 90_000)

  it('reaches a running handler with a cancel through job-stop', async () => {
    const id = await createEndpoint({ workers: { min: 1, max: 1, idleTimeout: 2 } })
    const jobId = await run(id, { waitForAbort: true })
    await until(
      'the handler started',
      async () => existsSync(path.join(dir, `started-${jobId}`)),
      Boolean,
    )
    const cancelled = await call(`/v2/${id}/cancel/${jobId}`, { method: 'POST' })
    expect(cancelled.body.status).toBe('CANCELLED')
    await until(
      'the handler aborted',
      async () => existsSync(path.join(dir, `aborted-${jobId}`)),
      Boolean,
    )
    expect((await status(id, jobId)).status).toBe('CANCELLED')
    await call(`/v2/serverless/${id}`, { method: 'DELETE' })
  }, 60_000)

  it('replaces workers whose worker key was rotated', async () => {
    const id = await createEndpoint({ workers: { min: 1, max: 1, idleTimeout: 2 } })
    const first = await until(
      'an idle worker',
      () => workersOf(id),
      (l) => l.workers[0]?.status === 'IDLE',
    )
    const rotated = await call(`/v2/serverless/${id}/worker-key/rotate`, { method: 'POST' })
    expect(rotated.status).toBe(200)
    await until(
      'a new idle worker',
      () => workersOf(id),
      (l) =>
        l.workers.length === 1 &&
        l.workers[0].id !== first.workers[0].id &&
        l.workers[0].status === 'IDLE',
    )
    const jobId = await run(id, { n: 1 })
    await until(
      'the job done',
      () => status(id, jobId),
      (j) => j.status === 'COMPLETED',
    )
    await call(`/v2/serverless/${id}`, { method: 'DELETE' })
  }, 60_000)

  it('replaces a worker that fails its fitness check, listing it UNHEALTHY with the reason', async () => {
    const id = await createEndpoint({ workers: { min: 1, max: 1, idleTimeout: 2 } })
    const first = await until(
      'an idle worker',
      () => workersOf(id),
      (l) => l.workers[0]?.status === 'IDLE',
    )
    const workerId = first.workers[0].id as string
    const key = (await call(`/v2/serverless/${id}/worker-key`)).body.workerKey as string
    // What runpod-python sends when a fitness check fails.
    const ping = await fetch(
      `${platform.url}/v2/${id}/ping/${workerId}?status=unhealthy&check=memory&reason=too+little&runpod_version=1.7.0`,
      { headers: { authorization: key } },
    )
    expect(ping.status).toBe(200)
    const after = await until(
      'the worker unhealthy',
      () => workersOf(id),
      (l) => l.workers.some((w: Json) => w.id === workerId && w.status === 'UNHEALTHY'),
    )
    expect(after.workers.find((w: Json) => w.id === workerId).reason).toBe(
      'failed its fitness check memory: too little',
    )
    expect((await health(id)).workers).toMatchObject({ unhealthy: 1 })
    // Replaced; the failed one is listed for workers.unhealthyRetentionMs (1.5 s here), then
    // gone (on a busy machine the new worker may take longer than that to be ready).
    await until(
      'a new worker idle',
      () => workersOf(id),
      (l) => l.workers.some((w: Json) => w.id !== workerId && w.status === 'IDLE'),
    )
    await until(
      'the unhealthy worker forgotten',
      () => workersOf(id),
      (l) => l.workers.length === 1 && l.workers[0].id !== workerId,
    )
    await call(`/v2/serverless/${id}`, { method: 'DELETE' })
  }, 60_000)

  it('replaces a worker that stops heart-beating and requeues its job', async () => {
    const id = await createEndpoint({ workers: { min: 1, max: 1, idleTimeout: 2 } })
    const jobId = await run(id, { sleepMs: 60_000 })
    const running = await until(
      'the job running',
      () => workersOf(id),
      (l) => l.workers[0]?.status === 'RUNNING',
    )
    const frozen = running.workers[0].id as string
    // Freeze the worker's process group: it stays alive (its workload is running) but silent.
    const state = JSON.parse(
      readFileSync(
        path.join(platform.dataDir, '.podyard', 'runtime', 'process', frozen, 'state.json'),
        'utf8',
      ),
    ) as { pgid: number }
    // What the store says of the job when the platform stops the silent worker: it must still be
    // that worker's (a live worker may still be running it), released only once it is gone.
    const driver = platform.drivers[0]!
    const stop = driver.stop.bind(driver)
    let atStop: { status: string; worker_id: string | null; lease_expires_at: string | null }
    let stoppedAt = 0
    driver.stop = async (workloadId, options) => {
      if (workloadId === frozen) {
        stoppedAt = Date.now()
        atStop = await platform.store.db
          .selectFrom('jobs')
          .select(['status', 'worker_id', 'lease_expires_at'])
          .where('id', '=', jobId)
          .executeTakeFirstOrThrow()
      }
      return stop(workloadId, options)
    }
    onTestFinished(() => {
      driver.stop = stop
    })
    process.kill(-state.pgid, 'SIGSTOP')
    const after = await until(
      'the silent worker unhealthy',
      () => workersOf(id),
      (l) => l.workers.some((w: Json) => w.id === frozen && w.status === 'UNHEALTHY'),
      20_000,
    )
    expect(after.workers.find((w: Json) => w.id === frozen).reason).toBe(
      'missed its heartbeats for more than 5 s',
    )
    expect(atStop!).toMatchObject({ status: 'IN_PROGRESS', worker_id: frozen })
    expect(Date.parse(atStop!.lease_expires_at!)).toBeGreaterThan(stoppedAt)
    // The job went back to the queue and a new worker takes it (it sleeps a minute: cancel it).
    const requeued = await until(
      'the job on another worker',
      () => status(id, jobId),
      (j) => j.status === 'IN_PROGRESS' && j.workerId !== frozen,
      20_000,
    )
    expect(requeued.workerId).not.toBe(frozen)
    await call(`/v2/${id}/cancel/${jobId}`, { method: 'POST' })
    await call(`/v2/serverless/${id}`, { method: 'DELETE' })
  }, 60_000)
})
