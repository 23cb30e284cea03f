import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ProcessDriver } from '../../src/runtime/process/process-driver.js'
import { json } from '../support/http.js'
import { TEST_ADMIN_KEY } from '../support/platform.js'
import { leads, startReplica, stopReplicas, type Replica } from '../support/replica-process.js'
import { freshPostgresDatabase, POSTGRES_URL_ENV } from '../support/stores.js'

/**
 * Two real server processes on one PostgreSQL database, clients alternating between them
 * (docs/production.md, "Several replicas"): jobs are taken exactly once, long polls
 * wake on either replica, one replica runs the reconcile loops and the other takes over when
 * it is killed with SIGKILL, losing nothing, and the job API limits count both replicas.
 */
const postgresUrl = process.env[POSTGRES_URL_ENV]
if (!postgresUrl) {
  console.log(`replicas: skipped: set ${POSTGRES_URL_ENV} to run two replicas on PostgreSQL`)
}

const LEASE_TTL_MS = 1_500
const SYNC_MS = 200

type Json = Record<string, unknown>

/** A worker as runpod-python calls the worker protocol: the raw key, JSON bodies. */
interface TestWorker {
  take(options?: { wait?: number }): Promise<Response>
  done(jobId: string, body: unknown): Promise<Response>
}

function testWorker(baseUrl: string, endpointId: string, workerId: string): TestWorker {
  const v2 = `${baseUrl}/v2/${endpointId}`
  const auth = { Authorization: TEST_ADMIN_KEY }
  return {
    take: ({ wait } = {}) =>
      fetch(
        `${v2}/job-take/${workerId}?gpu=NVIDIA+RTX+A4000&job_in_progress=0${wait === undefined ? '' : `&wait=${wait}`}`,
        { headers: auth },
      ),
    done: (jobId, body) =>
      fetch(`${v2}/job-done/${workerId}/${jobId}?gpu=NVIDIA+RTX+A4000&isStream=false`, {
        method: 'POST',
        headers: { ...auth, 'Content-Type': 'application/x-www-form-urlencoded' },
        body: JSON.stringify(body),
      }),
  }
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Every replica process started, so that none outlives the suite. */
const children: ChildProcess[] = []

describe.skipIf(!postgresUrl)('two replicas on one PostgreSQL database', () => {
  let database: { url: string; drop: () => Promise<void> }
  let dataDir: string
  let a: Replica
  let b: Replica
  let endpointId: string
  const replicas = () => [a, b]

  const call = (
    replica: Replica,
    pathAndQuery: string,
    init: RequestInit & { json?: unknown } = {},
  ) => {
    const { json: body, headers, ...rest } = init
    return fetch(`${replica.url}${pathAndQuery}`, {
      ...rest,
      headers: {
        authorization: `Bearer ${TEST_ADMIN_KEY}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(headers as Record<string, string> | undefined),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
  }
  const run = async (replica: Replica, input: unknown, policy?: Json) =>
    (
      await json<{ id: string }>(
        await call(replica, `/v2/${endpointId}/run`, {
          method: 'POST',
          json: { input, ...(policy ? { policy } : {}) },
        }),
      )
    ).id
  const status = async (replica: Replica, jobId: string) =>
    json<Json>(await call(replica, `/v2/${endpointId}/status/${jobId}`))
  let workers = 0
  const worker = (replica: Replica, id = `w${(workers += 1)}`) =>
    testWorker(replica.url, endpointId, id)
  /** The same worker id talking to one replica or the other. */
  const alternatingWorker = (id: string) => {
    const on = { a: worker(a, id), b: worker(b, id) }
    let turn = 0
    return { id, next: (): TestWorker => (turn++ % 2 === 0 ? on.a : on.b), on }
  }

  /** An endpoint without workers of its own: the test's workers take its jobs. */
  const createEndpoint = async (name: string) =>
    (
      await json<{ id: string }>(
        await call(a, '/v2/serverless', {
          method: 'POST',
          json: {
            name,
            image: 'worker:1',
            gpu: { pools: ['ADA_24'] },
            workers: { min: 0, max: 0 },
          },
        }),
        201,
      )
    ).id

  beforeAll(async () => {
    database = await freshPostgresDatabase(postgresUrl!)
    dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-replicas-'))
    // Replicas on one machine share the data directory (docs/production.md).
    const env = {
      PODYARD_STORE_URL: database.url,
      PODYARD_DATA_DIR: dataDir,
      PODYARD_ADMIN_KEY: TEST_ADMIN_KEY,
      PODYARD_PORT: '0',
      PODYARD_LOG_LEVEL: 'info',
      PODYARD_CLUSTER_LEASE_TTL_MS: String(LEASE_TTL_MS),
      PODYARD_CLUSTER_SYNC_INTERVAL_MS: String(SYNC_MS),
    }
    // Both at once on the empty database, as an orchestrator starts them: one migrates, they
    // create the accounts one after the other, and one of them leads (called `a` below).
    const started = await Promise.all([
      startReplica('a', env, children),
      startReplica('b', env, children),
    ])
    const leading = await Promise.all(started.map(async (r) => (await leads(r)).leads))
    ;[a, b] = leading[0] ? [started[0]!, started[1]!] : [started[1]!, started[0]!]
    endpointId = await createEndpoint('replicas')
  }, 90_000)

  afterAll(async () => {
    await stopReplicas(children)
    if (dataDir) {
      // Workloads outlive their server by design; this suite leaves none behind.
      const driver = new ProcessDriver({ stateDir: path.join(dataDir, 'runtime', 'process') })
      for (const workload of await driver.list()) await driver.remove(workload.id)
      await driver.close()
      rmSync(dataDir, { recursive: true, force: true })
    }
    await database?.drop()
  })

  it('has exactly one leader, the holder of the lease, and the other is API only', async () => {
    const [first, second] = await Promise.all(replicas().map(leads))
    expect(first!.leads).toBe(true)
    expect(second!.leads).toBe(false)
    expect(first!.replica).not.toBe(second!.replica)
    const client = new pg.Client({ connectionString: database.url })
    await client.connect()
    try {
      const { rows } = await client.query<{ holder: string }>(
        'select holder from cluster_leases where expires_at_ms > $1',
        [Date.now()],
      )
      expect(rows.map((r) => r.holder)).toEqual([first!.replica])
    } finally {
      await client.end()
    }
    expect(b.output()).toContain('API only; another replica runs the reconcile loops')
    for (const replica of replicas()) {
      const text = await (await call(replica, '/metrics')).text()
      expect(text).toMatch(/^podyard_cluster_listening 1$/m)
    }
  })

  it("wakes a worker's long poll on one replica when a job is submitted on the other", async () => {
    // Waiters re-read the store only every second; the NOTIFY wakes them in milliseconds.
    for (const [taker, submitter] of [
      [a, b],
      [b, a],
      [a, b],
      [b, a],
    ] as const) {
      const w = worker(taker)
      const take = w.take({ wait: 10_000 })
      await sleep(150)
      const submittedAt = Date.now()
      const id = await run(submitter, { wake: true })
      const taken = await take
      const latency = Date.now() - submittedAt
      expect(await json(taken)).toEqual({ id, input: { wake: true } })
      expect(latency).toBeLessThan(500)
      expect(await json(await w.done(id, { output: 'ok' }))).toEqual({ status: 'ok' })
    }
  })

  it('ends /status-sync on one replica when the job completes through the other', async () => {
    const id = await run(a, { sync: 1 })
    const w = worker(b)
    expect(await json(await w.take({ wait: 5_000 }))).toMatchObject({ id })
    const waiting = call(a, `/v2/${endpointId}/status-sync/${id}?wait=20000`)
    await sleep(200)
    const doneAt = Date.now()
    expect(await json(await w.done(id, { output: { answer: 42 } }))).toEqual({ status: 'ok' })
    const view = await json<Json>(await waiting)
    expect(Date.now() - doneAt).toBeLessThan(500)
    expect(view).toMatchObject({ id, status: 'COMPLETED', output: { answer: 42 } })
  })

  it('completes each of N jobs submitted to both exactly once, taken by workers on both', async () => {
    const N = 40
    const submitted = await Promise.all(
      Array.from({ length: N }, (_, i) => run(i % 2 === 0 ? a : b, { n: i })),
    )
    const takenBy = new Map<string, string[]>()
    const workers = Array.from({ length: 4 }, (_, i) => alternatingWorker(`wexact${i}`))
    let remaining = N
    await Promise.all(
      workers.map(async (w) => {
        while (remaining > 0) {
          const response = await w.next().take({ wait: 1_000 })
          if (response.status === 204) continue
          const job = await json<{ id: string; input: { n: number } }>(response)
          takenBy.set(job.id, [...(takenBy.get(job.id) ?? []), w.id])
          remaining -= 1
          expect(await json(await w.next().done(job.id, { output: job.input.n * 2 }))).toEqual({
            status: 'ok',
          })
        }
      }),
    )
    expect([...takenBy.keys()].sort()).toEqual([...submitted].sort())
    for (const [, by] of takenBy) expect(by).toHaveLength(1)
    for (const [i, id] of submitted.entries()) {
      const view = await status(i % 2 === 0 ? b : a, id)
      expect(view).toMatchObject({ status: 'COMPLETED', output: i * 2 })
    }
  })

  it('counts the job API limits of both replicas against one limit', async () => {
    // /purge-queue: 2 per 10 s window for an endpoint that no worker has called (workers raise
    // the limits); start early in a window.
    endpointId = await createEndpoint('limits')
    const inWindow = Date.now() % 10_000
    if (inWindow > 6_000) await sleep(10_000 - inWindow + 50)
    const purge = (replica: Replica) =>
      call(replica, `/v2/${endpointId}/purge-queue`, { method: 'POST' })
    expect((await purge(a)).status).toBe(200)
    await sleep(3 * SYNC_MS)
    expect((await purge(b)).status).toBe(200)
    await sleep(3 * SYNC_MS)
    // Each replica has admitted one: alone, either would admit another.
    expect((await purge(a)).status).toBe(429)
    expect((await purge(b)).status).toBe(429)
  })

  it('shows a worker IDLE or RUNNING on both replicas, whichever it talks to', async () => {
    const health = async (replica: Replica) =>
      (await json<{ workers: Json }>(await call(replica, `/v2/${endpointId}/health`))).workers
    endpointId = await createEndpoint('presence')
    const w = alternatingWorker('wpresence')
    const id = await run(a, { presence: 1 })
    expect(await json(await w.on.a.take({ wait: 2_000 }))).toMatchObject({ id })
    await expect
      .poll(async () => (await health(b)).running, { timeout: 3_000, interval: 100 })
      .toBe(1)
    expect(await json(await w.on.b.done(id, { output: 1 }))).toEqual({ status: 'ok' })
    await expect
      .poll(async () => [(await health(a)).running, (await health(a)).idle], {
        timeout: 3_000,
        interval: 100,
      })
      .toEqual([0, 1])
  })

  it('answers for the workers the leader runs on the replica that does not lead', async () => {
    const managed = await json<{ id: string }>(
      await call(a, '/v2/serverless', {
        method: 'POST',
        json: {
          name: 'managed',
          image: 'worker:1',
          gpu: { pools: ['ADA_24'] },
          workers: { min: 1, max: 1 },
        },
      }),
      201,
    )
    // The leader's autoscaler starts (or, without room, throttles) one worker; the other
    // replica knows it from the stored record.
    const started = async (replica: Replica) => {
      const { workers } = await json<{ workers: Record<string, number> }>(
        await call(replica, `/v2/${managed.id}/health`),
      )
      return (workers.initializing ?? 0) + (workers.throttled ?? 0) + (workers.unhealthy ?? 0)
    }
    await expect.poll(() => started(a), { timeout: 5_000, interval: 100 }).toBe(1)
    await expect.poll(() => started(b), { timeout: 5_000, interval: 100 }).toBe(1)
  })

  it('hands the loops to the other replica when the leader is killed, losing nothing', async () => {
    const w = worker(b, 'wfailover')
    // Running when the leader dies: two jobs a worker holds, and one it abandons, which only
    // the reconcile loops (the job sweeper: execution timeout) can end.
    const running = [await run(a, { r: 0 }), await run(b, { r: 1 })]
    for (const id of running)
      expect(await json(await w.take({ wait: 2_000 }))).toMatchObject({ id })
    const abandoned = await run(a, { abandoned: true }, { executionTimeout: 5_000 })
    expect(await json(await worker(b, 'wgone').take({ wait: 2_000 }))).toMatchObject({
      id: abandoned,
    })
    // A pod created through the replica that does not lead: the leader's lifecycle runs it.
    const pod = await json<{ id: string }>(
      await call(b, '/v2/pods', {
        method: 'POST',
        json: { name: 'survivor', image: 'x', cpu: { id: 'cpu3c', vcpuCount: 2 } },
      }),
      201,
    )
    const podView = async () => json<Json>(await call(b, `/v2/pods/${pod.id}`))
    await expect
      .poll(async () => (await podView()).status, { timeout: 15_000, interval: 200 })
      .toBe('RUNNING')
    // Its process has run for a while: a restart would show as a smaller uptime.
    await sleep(1_100)
    const before = {
      at: Date.now(),
      uptime: ((await podView()).runtime as { uptime: number }).uptime,
    }
    // Queued when the leader dies.
    const queued = [await run(a, { q: 0 }), await run(b, { q: 1 }), await run(a, { q: 2 })]

    expect((await leads(a)).leads).toBe(true)
    a.child.kill('SIGKILL')
    const killedAt = Date.now()
    await a.exited
    await expect
      .poll(async () => (await leads(b)).leads, { timeout: 10_000, interval: 100 })
      .toBe(true)
    expect(Date.now() - killedAt).toBeLessThan(LEASE_TTL_MS + 2_000)

    for (const id of running) {
      expect(await json(await w.done(id, { output: 'survived' }))).toEqual({ status: 'ok' })
    }
    const taken: string[] = []
    while (taken.length < queued.length) {
      const job = await json<{ id: string }>(await w.take({ wait: 2_000 }))
      taken.push(job.id)
      expect(await json(await w.done(job.id, { output: 'after' }))).toEqual({ status: 'ok' })
    }
    expect(taken.sort()).toEqual([...queued].sort())
    for (const id of [...running, ...queued]) {
      expect(await status(b, id)).toMatchObject({ status: 'COMPLETED' })
    }
    // The new leader's sweeper ends the abandoned job at its execution timeout.
    await expect
      .poll(async () => (await status(b, abandoned)).status, { timeout: 10_000, interval: 250 })
      .toBe('TIMED_OUT')
    // The new leader adopted the pod's process from the shared data directory: it was neither
    // restarted nor lost, and the new leader's lifecycle acts on it.
    const after = await podView()
    expect(after.status).toBe('RUNNING')
    expect((after.runtime as { uptime: number }).uptime).toBeGreaterThanOrEqual(
      before.uptime + Math.floor((Date.now() - before.at) / 1000) - 1,
    )
    expect(
      (await call(b, `/v2/pods/${pod.id}/action`, { method: 'POST', json: { action: 'stop' } }))
        .status,
    ).toBe(200)
    await expect
      .poll(async () => (await podView()).status, { timeout: 15_000, interval: 200 })
      .toBe('EXITED')
  }, 30_000)
})
