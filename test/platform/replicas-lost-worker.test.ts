import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fleetYaml } from '../support/fleet-yaml.js'
import {
  engineForwarder,
  removeWorkloadContainers,
  type EngineForwarder,
} from '../support/engine-forwarder.js'
import { json } from '../support/http.js'
import { TEST_ADMIN_KEY } from '../support/platform.js'
import { leads, startReplica, stopReplicas, type Replica } from '../support/replica-process.js'
import { freshPostgresDatabase, POSTGRES_URL_ENV } from '../support/stores.js'
import { until } from '../support/until.js'

/**
 * A worker lost with its host (its engine died, its container lives on and still
 * reaches the platform) took back, through the replica that does not lead, the job the leader
 * had just requeued, and ran it a second time. Two real server processes on one PostgreSQL
 * database: `a` leads, `b` does not. The worker's host is a Docker engine reached through a
 * socket this test forwards to this machine's engine (`docker.url: unix://...`); closing the
 * forwarder loses the engine while the worker's container runs on. The test speaks for the
 * worker (its container only sleeps), as runpod-python would, to `b` alone: a take long poll
 * open while it runs its job, and another at once after each answer without a job. `b` reads
 * the workers every ten minutes here (PODYARD_WORKERS_INTERVAL_MS), so its view of them never
 * catches up during the test: the lag that made the race, made certain. The job must reach
 * the lost worker once, and be finished by another.
 */
const postgresUrl = process.env[POSTGRES_URL_ENV]
const docker = process.env.PODYARD_TEST_DOCKER === '1'
if (!postgresUrl || !docker) {
  console.log(
    `replicas with a lost worker: skipped: set ${POSTGRES_URL_ENV} and PODYARD_TEST_DOCKER=1`,
  )
}

const IMAGE = 'podyard-conformance/plain:1'
describe.runIf(postgresUrl && docker)('a worker lost with its host, on two replicas', () => {
  const children: ChildProcess[] = []
  let database: { url: string; drop: () => Promise<void> }
  let dir: string
  let engine: EngineForwarder
  let a: Replica
  let b: Replica
  const workerIds: string[] = []

  const call = (replica: Replica, pathAndQuery: string, body?: unknown) =>
    fetch(`${replica.url}${pathAndQuery}`, {
      ...(body === undefined ? {} : { method: 'POST', body: JSON.stringify(body) }),
      headers: {
        authorization: `Bearer ${TEST_ADMIN_KEY}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
    })

  beforeAll(async () => {
    database = await freshPostgresDatabase(postgresUrl!)
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-lost-worker-'))
    const socket = path.join(dir, 'engine.sock')
    engine = await engineForwarder(socket)
    writeFileSync(
      path.join(dir, 'fleet.yaml'),
      fleetYaml({
        hosts: [
          {
            id: 'engine-1',
            cpuFlavors: ['cpu3c'],
            vcpus: 4,
            memoryGb: 8,
            docker: { url: `unix://${socket}` },
          },
        ],
      }),
    )
    const env = {
      PODYARD_STORE_URL: database.url,
      PODYARD_DATA_DIR: dir,
      PODYARD_FLEET: path.join(dir, 'fleet.yaml'),
      PODYARD_ADMIN_KEY: TEST_ADMIN_KEY,
      PODYARD_PORT: '0',
      PODYARD_LOG_LEVEL: 'info',
      PODYARD_CLUSTER_SYNC_INTERVAL_MS: '200',
      PODYARD_HOSTS_PROBE_INTERVAL_MS: '300',
      PODYARD_HOSTS_FAILURES_BEFORE_DOWN: '2',
      // A host with its own engine counts as remote: it takes no worker given a loopback job API
      // address. The worker's container never calls (it sleeps; the test speaks for it).
      PODYARD_WORKERS_JOB_API_URL: 'http://192.0.2.10:8080',
    }
    // `a` first, so that it leads; `b` reads the workers once at its start and then only after
    // the test is over.
    a = await startReplica('a', { ...env, PODYARD_WORKERS_INTERVAL_MS: '200' }, children)
    expect((await leads(a)).leads).toBe(true)
    b = await startReplica('b', { ...env, PODYARD_WORKERS_INTERVAL_MS: '600000' }, children)
    expect((await leads(b)).leads).toBe(false)
  }, 120_000)

  afterAll(async () => {
    await stopReplicas(children)
    // The lost worker's container outlives its server and its engine's loss by design.
    await removeWorkloadContainers(workerIds)
    await engine?.lose().catch(() => undefined)
    await database?.drop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  }, 60_000)

  it('never hands the lost worker the job the leader requeued; another worker finishes it', async () => {
    const endpoint = await json<{ id: string }>(
      await call(a, '/v2/serverless', {
        name: 'lost-worker',
        image: IMAGE,
        args: 'exec sleep 600',
        cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
        workers: { min: 1, max: 1 },
      }),
      201,
    )
    const workers = async () =>
      (
        await json<{ workers: Array<{ id: string; status: string; reason: string | null }> }>(
          await call(a, `/v2/serverless/${endpoint.id}/workers`),
        )
      ).workers
    // The leader launched the worker's container on engine-1.
    const [launched] = await until(
      'the worker launched',
      workers,
      (list) => list.length === 1 && list[0]!.status === 'INITIALIZING',
      60_000,
    )
    const lost = launched!.id
    workerIds.push(lost)

    // The worker, as runpod-python calls the worker protocol, through `b` only.
    const take = (workerId: string, replica: Replica, inProgress: boolean, signal?: AbortSignal) =>
      fetch(
        `${replica.url}/v2/${endpoint.id}/job-take/${workerId}?gpu=cpu3c&job_in_progress=${inProgress ? 1 : 0}&wait=20000`,
        { headers: { Authorization: TEST_ADMIN_KEY }, ...(signal ? { signal } : {}) },
      )
    const done = (workerId: string, replica: Replica, jobId: string, output: unknown) =>
      fetch(`${replica.url}/v2/${endpoint.id}/job-done/${workerId}/${jobId}?gpu=cpu3c`, {
        method: 'POST',
        headers: { Authorization: TEST_ADMIN_KEY },
        body: JSON.stringify({ output }),
      })
    const job = await json<{ id: string }>(
      await call(a, `/v2/${endpoint.id}/run`, { input: { n: 1 } }),
    )
    expect(await json(await take(lost, b, false))).toMatchObject({ id: job.id })
    await until(
      'the worker RUNNING its job',
      workers,
      (list) => list.find((w) => w.id === lost)?.status === 'RUNNING',
      30_000,
    )

    // While it runs the job it asks for more, and asks again at once after each empty answer.
    const handed: string[] = []
    const stop = new AbortController()
    const polling = (async () => {
      while (!stop.signal.aborted) {
        const response = await take(lost, b, true, stop.signal).catch(() => undefined)
        if (response?.status === 200) handed.push((await json<{ id: string }>(response)).id)
        else await response?.body?.cancel()
      }
    })()
    try {
      await new Promise((resolve) => setTimeout(resolve, 300))

      await engine.lose()
      const failed = await until(
        'the worker UNHEALTHY, lost with its host',
        async () => (await workers()).find((w) => w.id === lost),
        (w) => w?.status === 'UNHEALTHY',
        30_000,
      )
      expect(failed!.reason).toMatch(/^host engine-1 lost at /)
      // The requeue committed with it; the worker's polls on `b` were woken by it, and asked
      // again. Give them time to be answered, as they were in the issue (4-23 ms).
      await new Promise((resolve) => setTimeout(resolve, 1_000))
      expect(handed).toEqual([])
      const status = async () =>
        json<{ status: string; output?: unknown }>(
          await call(b, `/v2/${endpoint.id}/status/${job.id}`),
        )
      expect(await status()).toMatchObject({ status: 'IN_QUEUE' })

      // Another worker takes it, on either replica, and its result is the one accepted; the lost
      // worker's own result of its first run is ignored.
      const other = await json<{ id: string }>(await take('otherworker001', a, false))
      expect(other.id).toBe(job.id)
      expect(await json(await done(lost, b, job.id, 'from the lost host'))).toMatchObject({
        status: 'ignored',
      })
      expect(await json(await done('otherworker001', a, job.id, 'ok'))).toEqual({ status: 'ok' })
      expect(handed).toEqual([])
      expect(await status()).toMatchObject({ status: 'COMPLETED', output: 'ok' })
    } finally {
      stop.abort()
      await polling
    }
  }, 120_000)
})
