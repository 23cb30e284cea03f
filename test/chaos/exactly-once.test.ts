import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { freePort } from '../../src/control/free-port.js'
import { TEST_ADMIN_KEY } from '../support/platform.js'
import { freshPostgresDatabase, POSTGRES_URL_ENV } from '../support/stores.js'
import {
  busyPids,
  killWorkloadsOf,
  readRunEvents,
  ServerProcess,
  submitSteadily,
  TcpBalancer,
  waitUntil,
  WORKER_SCRIPT,
  WorkerProcess,
} from './chaos-rig.js'
import { seededRandom } from '../../src/shared/seeded-random.js'
import { judgeRuns, runsOf } from './run-analysis.js'
import { removeDataDir } from '../support/processes.js'

/**
 * Jobs run exactly once and are never lost (docs/serverless-queue.md, "Guarantees"),
 * through crashes of every part: at least 5 000 jobs submitted at a steady rate to an endpoint
 * served by the platform's own workers and by workers the suite starts, while the server is
 * killed with SIGKILL three times and stopped cleanly once at random moments and started again
 * on its data, and workers of both kinds are killed mid-job. The handlers record every start and
 * end; the verdict (test/chaos/run-analysis.ts) counts lost jobs, overlapping runs and re-runs.
 *
 * Opt-in (several minutes): PODYARD_TEST_CHAOS=1. `.ci/run` turns it on. The PostgreSQL case
 * (two replicas behind a balancer, each killed in turn) needs PODYARD_TEST_POSTGRES_URL too.
 * CHAOS_SEED replays a run's moments; CHAOS_JOBS changes the number of jobs.
 */
const enabled = process.env.PODYARD_TEST_CHAOS === '1'
const postgresUrl = process.env[POSTGRES_URL_ENV]
if (!enabled) console.log('chaos: skipped: set PODYARD_TEST_CHAOS=1 to run the chaos suite')
else if (!postgresUrl) console.log(`chaos on PostgreSQL: skipped: set ${POSTGRES_URL_ENV}`)

const JOBS = Number(process.env.CHAOS_JOBS ?? '5000')
const PER_SECOND = 80
const MAX_JOB_MS = 200
const LEASE_MS = 15_000
const SEED = Number(process.env.CHAOS_SEED ?? Date.now() % 1_000_000)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

type Json = Record<string, unknown>

/** What every server process of a run is started with (environment, as an operator would). */
function serverEnv(dataDir: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    PODYARD_DATA_DIR: dataDir,
    PODYARD_ADMIN_KEY: TEST_ADMIN_KEY,
    PODYARD_LOG_LEVEL: 'warn',
    // The platform's workers run this repository's script: the admin account accepts the
    // unsandboxed process driver explicitly (docs/security.md).
    PODYARD_SANDBOX: 'none',
    PODYARD_WORKERS_JOB_LEASE_MS: String(LEASE_MS),
    PODYARD_WORKERS_PING_INTERVAL_MS: '2000',
    PODYARD_WORKERS_INTERVAL_MS: '500',
    PODYARD_WORKERS_STOP_GRACE_MS: '5000',
    ...extra,
  }
}

interface Rig {
  /** Where clients and the rig's workers reach the platform. */
  url: () => string
  /** Kills (SIGKILL) or stops (SIGTERM) a server process at `moment`, then starts it again. */
  crash(moment: number, signal: 'SIGKILL' | 'SIGTERM'): Promise<void>
  stopAll(): Promise<void>
}

async function call(
  base: string,
  pathAndQuery: string,
  init: { method?: string; json?: unknown } = {},
) {
  const response = await fetch(`${base}${pathAndQuery}`, {
    method: init.method ?? 'GET',
    headers: {
      authorization: `Bearer ${TEST_ADMIN_KEY}`,
      ...(init.json === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
  })
  const text = await response.text()
  return { status: response.status, body: (text === '' ? null : JSON.parse(text)) as Json }
}

/** The final status of every job of the endpoint, read through `/requests` (10 calls / 10 s). */
async function finalStatuses(base: string, endpointId: string): Promise<Map<string, string>> {
  const statuses = new Map<string, string>()
  for (let page = 1; ; page++) {
    let answer = await call(base, `/v2/${endpointId}/requests?page=${page}&pageSize=500`)
    while (answer.status === 429) {
      await sleep(1100)
      answer = await call(base, `/v2/${endpointId}/requests?page=${page}&pageSize=500`)
    }
    expect(answer.status, JSON.stringify(answer.body)).toBe(200)
    const requests = answer.body.requests as Array<{ id: string; status: string }>
    for (const job of requests) statuses.set(job.id, job.status)
    if (requests.length < 500) return statuses
    await sleep(1000)
  }
}

/**
 * One chaos run against `rig`: an endpoint with two platform workers and three of the rig's,
 * the steady submissions, the crashes at seeded random moments, then the verdict.
 */
async function chaosRun(name: string, rig: Rig, runsDir: string): Promise<void> {
  const random = seededRandom(SEED)
  console.log(
    `chaos ${name}: seed ${SEED} (CHAOS_SEED replays it), ${JOBS} jobs at ${PER_SECOND}/s`,
  )
  const created = await call(rig.url(), '/v2/serverless', {
    method: 'POST',
    json: {
      name: 'chaos',
      image: 'podyard/chaos-worker',
      args: `${process.execPath} ${WORKER_SCRIPT}`,
      env: { CHAOS_DIR: runsDir, CHAOS_CONCURRENCY: '2' },
      cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
      workers: { min: 2, max: 2, idleTimeout: 5 },
    },
  })
  expect(created.status, JSON.stringify(created.body)).toBe(201)
  const endpointId = created.body.id as string
  const key = (await call(rig.url(), `/v2/serverless/${endpointId}/worker-key`)).body
    .workerKey as string
  const kills = new Map<number, number>()
  const ownWorkers = new Set<WorkerProcess>()
  let serial = 0
  const startOwnWorker = () => {
    const worker = new WorkerProcess({
      CHAOS_DIR: runsDir,
      CHAOS_CONCURRENCY: '3',
      CHAOS_ENDPOINT_URL: `${rig.url()}/v2/${endpointId}`,
      RUNPOD_AI_API_KEY: key,
      RUNPOD_POD_ID: `chaos-own-${++serial}`,
      RUNPOD_PING_INTERVAL: '2000',
    })
    ownWorkers.add(worker)
    return worker
  }
  for (let i = 0; i < 3; i++) startOwnWorker()

  const durationMs = (JOBS / PER_SECOND) * 1000
  // The moments, each somewhere in its own slice of the run, in this order.
  const plan: Array<{ what: string; act: () => Promise<void> }> = [
    { what: 'kill the server (SIGKILL)', act: () => rig.crash(Date.now(), 'SIGKILL') },
    {
      what: 'kill one of the rig’s workers mid-job (SIGKILL)',
      act: async () => {
        let victim: WorkerProcess | undefined
        await waitUntil(
          async () => {
            const busy = new Set(busyPids(runsDir))
            victim = [...ownWorkers].find((w) => busy.has(w.pid))
            return victim !== undefined
          },
          5000,
          10,
        )
        victim ??= [...ownWorkers][0]!
        ownWorkers.delete(victim)
        await victim.stop('SIGKILL')
        kills.set(victim.pid, Date.now())
        startOwnWorker()
      },
    },
    { what: 'stop the server cleanly (SIGTERM)', act: () => rig.crash(Date.now(), 'SIGTERM') },
    { what: 'kill the server (SIGKILL)', act: () => rig.crash(Date.now(), 'SIGKILL') },
    {
      what: 'kill one of the platform’s workers mid-job (SIGKILL)',
      act: async () => {
        const own = new Set([...ownWorkers].map((w) => w.pid))
        await waitUntil(
          async () => {
            for (const pid of busyPids(runsDir)) {
              if (own.has(pid) || kills.has(pid)) continue
              try {
                process.kill(pid, 'SIGKILL')
              } catch {
                continue // it ended meanwhile (stopped by the platform, say)
              }
              kills.set(pid, Date.now())
              return true
            }
            return false
          },
          5000,
          10,
        )
      },
    },
    { what: 'kill the server (SIGKILL)', act: () => rig.crash(Date.now(), 'SIGKILL') },
  ]
  const slice = (durationMs * 0.85) / plan.length
  const moments = plan.map((_, i) => 2000 + slice * (i + 0.15 + 0.7 * random()))
  const startedAt = Date.now()
  const chaos = (async () => {
    for (const [i, step] of plan.entries()) {
      const due = startedAt + moments[i]!
      if (due > Date.now()) await sleep(due - Date.now())
      console.log(`chaos ${name}: ${((Date.now() - startedAt) / 1000).toFixed(1)} s: ${step.what}`)
      await step.act()
    }
  })()
  try {
    const submitted = await submitSteadily({
      url: rig.url,
      endpointId,
      key: TEST_ADMIN_KEY,
      count: JOBS,
      perSecond: PER_SECOND,
      random,
      maxJobMs: MAX_JOB_MS,
    })
    await chaos
    const settled = await waitUntil(
      async () => {
        const health = await call(rig.url(), `/v2/${endpointId}/health`)
        const jobs = health.body.jobs as { inQueue: number; inProgress: number }
        return jobs.inQueue === 0 && jobs.inProgress === 0
      },
      4 * LEASE_MS + 60_000,
    )
    const statuses = await finalStatuses(rig.url(), endpointId)
    const verdict = judgeRuns({
      accepted: submitted.accepted,
      statuses,
      events: readRunEvents(runsDir),
      kills,
    })
    console.log(
      [
        `chaos ${name}: ${((Date.now() - startedAt) / 1000).toFixed(0)} s, settled: ${settled}`,
        `  submissions sent ${submitted.sent}, accepted ${verdict.accepted}, not accepted ${submitted.refused}`,
        `  completed ${verdict.completed}, lost ${verdict.lost.length}, completed without a run ${verdict.completedUnrun.length}`,
        `  jobs whose runs overlapped: ${verdict.overlapping.length}`,
        `  runs beyond the first: ${verdict.extraRuns} (after a crash of the process that held the job: ${verdict.explainedByCrash}; otherwise: ${verdict.unexplained.length})`,
      ].join('\n'),
    )
    // What a re-run nothing explains looked like, for whoever reads a failed run.
    const runs = runsOf(readRunEvents(runsDir), kills)
    for (const { jobId } of verdict.unexplained.slice(0, 10)) {
      const seen = runs.get(jobId)?.map((run) => ({ ...run, killedAt: kills.get(run.pid) }))
      console.log(`  not explained: job ${jobId}, its runs ${JSON.stringify(seen)}`)
    }
    expect(verdict.accepted).toBeGreaterThanOrEqual(JOBS)
    expect(verdict.lost.slice(0, 10)).toEqual([])
    expect(verdict.completedUnrun.slice(0, 10)).toEqual([])
    expect(verdict.overlapping.slice(0, 10)).toEqual([])
    expect(verdict.unexplained.slice(0, 10)).toEqual([])
    await call(rig.url(), `/v2/serverless/${endpointId}`, { method: 'DELETE' })
  } finally {
    await Promise.all([...ownWorkers].map((worker) => worker.stop('SIGKILL')))
  }
}

describe.runIf(enabled)('chaos: exactly once through crashes', () => {
  const dirs: string[] = []
  afterAll(() => {
    for (const dir of dirs) {
      killWorkloadsOf(dir)
      removeDataDir(dir)
    }
  })
  const tempDir = (prefix: string) => {
    const dir = mkdtempSync(path.join(tmpdir(), prefix))
    dirs.push(dir)
    return dir
  }

  it('on SQLite: one server, killed and started again on its data directory', async () => {
    const dataDir = tempDir('podyard-chaos-')
    const runsDir = tempDir('podyard-chaos-runs-')
    const server = new ServerProcess('server', await freePort(), serverEnv(dataDir))
    await server.start()
    const rig: Rig = {
      url: () => server.url,
      crash: async (_moment, signal) => {
        await server.stop(signal)
        await sleep(300 + Math.floor(Math.random() * 1200))
        await server.start()
      },
      stopAll: async () => void (await server.stop('SIGTERM')),
    }
    try {
      await chaosRun('SQLite', rig, runsDir)
    } finally {
      await rig.stopAll()
      killWorkloadsOf(dataDir)
    }
  }, 900_000)

  it.runIf(postgresUrl)(
    'on PostgreSQL: two replicas behind a balancer, each killed in turn',
    async () => {
      const database = await freshPostgresDatabase(postgresUrl!)
      const dataDir = tempDir('podyard-chaos-pg-')
      const runsDir = tempDir('podyard-chaos-pg-runs-')
      const ports = [await freePort(), await freePort()]
      const balancer = new TcpBalancer(ports)
      const balancerUrl = `http://127.0.0.1:${await balancer.listen()}`
      const env = serverEnv(dataDir, {
        PODYARD_STORE_URL: database.url,
        PODYARD_WORKERS_JOB_API_URL: balancerUrl,
        PODYARD_CLUSTER_LEASE_TTL_MS: '3000',
        PODYARD_CLUSTER_SYNC_INTERVAL_MS: '200',
      })
      const replicas = ports.map((port, i) => new ServerProcess(`replica ${i}`, port, env))
      await replicas[0]!.start()
      await replicas[1]!.start()
      let turn = 0
      const rig: Rig = {
        url: () => balancerUrl,
        // Each crash takes the next replica; the other serves meanwhile.
        crash: async (_moment, signal) => {
          const replica = replicas[turn++ % replicas.length]!
          await replica.stop(signal)
          await sleep(300 + Math.floor(Math.random() * 1200))
          await replica.start()
        },
        stopAll: async () => {
          for (const replica of replicas) await replica.stop('SIGTERM')
        },
      }
      try {
        await chaosRun('PostgreSQL, two replicas', rig, runsDir)
      } finally {
        await rig.stopAll()
        await balancer.close()
        killWorkloadsOf(dataDir)
        await database.drop()
      }
    },
    900_000,
  )
})
