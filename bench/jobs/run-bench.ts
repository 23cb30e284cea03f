/**
 * bench/jobs: the job path end to end (bench/README.md), each figure printed beside its target
 * and its anchor. Parts (`--parts=`, default all):
 *
 * - `throughput`: `/run` no-op jobs -> TS-SDK workers in child processes -> done, on SQLite and,
 *   when PODYARD_BENCH_POSTGRES_URL (or PODYARD_TEST_POSTGRES_URL) names a PostgreSQL server
 *   whose role may create databases, on a fresh database there (`--stores=sqlite,postgres`).
 *   Each of `--rounds` rounds is followed by a round of the store's anchor (anchors.ts):
 *   BullMQ + Redis beside SQLite (a redis-server the bench starts; quoted when none is on
 *   PATH), graphile-worker unbatched on a fresh database of the same PostgreSQL beside it, and
 *   graphile-worker batched (its docs' throughput settings) after it, a figure beside with no
 *   target. Targets (performance round 3): >= 1.0x BullMQ on SQLite, >= 3x graphile-worker
 *   unbatched on PostgreSQL.
 * - `backlog`: the throughput round on SQLite with `--backlogs=0,10000,100000` jobs queued on
 *   another endpoint that has no worker (backlog.ts), each on a fresh server, `--rounds` times;
 *   each backlog's jobs/s and its ratio to the first (no backlog).
 * - `runsync`: sequential `/runsync` through one idle warm TS worker (the bench's own); targets
 *   p50 <= 1 ms, p99 <= 4 ms (as for `example` and `dev`).
 * - `example`: the same through the README's example (examples/echo-worker.ts) on an endpoint
 *   whose worker the platform starts.
 * - `dev`: the same through `podyard dev examples/echo-worker.ts` (its own platform process).
 * - `python`: the same through the real runpod-python worker (bench/jobs/python/handler.py) as
 *   it is, with the concurrency_modifier workaround, and with examples/python's event-driven
 *   job loop; skipped, saying so, when `<python> -c 'import runpod'` fails (`--python=`, or
 *   PODYARD_BENCH_PYTHON; PYTHONPATH is passed on).
 * - `cold`: the first `/runsync` on a TS worker endpoint at zero workers (`--cold-rounds=10`).
 * - `scale`: `--queued=1000000` jobs waiting: the server's RSS, `/run`, `/status`, `/health`.
 *
 * Throughput options: --jobs=10000 --submitters=32 --rate=0 --client=raw|node
 * --worker-processes=1 --concurrency=64 --warmup=2000 --in-process-workers
 * --worker-auth=worker-key|api-key --rounds=3
 * --anchors=graphile-worker,graphile-worker-batched,bullmq (or none)
 * --anchor-concurrency=<workers x concurrency> --anchor-pool=10 (unbatched; batched runs a pool
 * of the concurrency + 1). Backlog: --backlogs=0,10000,100000 --backlog-via=store|run (written
 * straight into the store, or through /run). Others: --runsync=1000 (calls per /runsync figure)
 * --log-level=info --cpu-prof --keep.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import path from 'node:path'
import {
  agent,
  createEndpoint,
  flag,
  fmt,
  freshDatabase,
  loadAverage,
  option,
  percentile,
  reapWorkers,
  root,
  sleep,
  startServer,
  timeRunsync,
  workerKeyOf,
  type BenchServer,
} from './bench-server.js'
import { openThroughputAnchor, type AnchorResult, type ThroughputAnchor } from './anchors.js'
import { closedLoop, cpuSeconds, startBareHttp } from '../fleet/load.js'
import { Figures } from './figures.js'
import { backlogThroughputs } from './backlog.js'
import { devRunsync } from './dev-runsync.js'
import { coldStarts, warmManagedRunsync, type WorkerCommand } from './managed-runsync.js'
import { queueScale } from './queue-scale.js'
import {
  startWorkers,
  throughput,
  type ThroughputResult,
  type ThroughputSettings,
} from './throughput.js'

const ALL_PARTS = ['throughput', 'backlog', 'runsync', 'example', 'dev', 'python', 'cold', 'scale']
const parts = new Set(option('parts', ALL_PARTS.join(',')).split(','))
const postgresAdminUrl =
  process.env.PODYARD_BENCH_POSTGRES_URL ?? process.env.PODYARD_TEST_POSTGRES_URL
const stores = option('stores', postgresAdminUrl ? 'sqlite,postgres' : 'sqlite').split(',')
const settings: ThroughputSettings = {
  jobs: Number(option('jobs', '10000')),
  submitters: Number(option('submitters', '32')),
  workerProcesses: Number(option('worker-processes', '1')),
  concurrency: Number(option('concurrency', '64')),
  warmup: Number(option('warmup', '2000')),
  rate: Number(option('rate', '0')),
  inProcessWorkers: flag('in-process-workers'),
  client: option('client', 'raw'),
  workerAuth: option('worker-auth', 'worker-key'),
}
const rounds = Number(option('rounds', '3'))
const anchorOptions = {
  postgresAdminUrl,
  enabled: new Set(option('anchors', 'graphile-worker,graphile-worker-batched,bullmq').split(',')),
  settings: {
    jobs: settings.jobs,
    warmup: settings.warmup,
    submitters: settings.submitters,
    concurrency: Number(
      option('anchor-concurrency', String(settings.workerProcesses * settings.concurrency)),
    ),
    pool: Number(option('anchor-pool', '10')),
  },
}
const runsyncCalls = Number(option('runsync', '1000'))
const logLevel = option('log-level', 'info')
const python = option('python', process.env.PODYARD_BENCH_PYTHON ?? 'python3')
const figures = new Figures()

/** A server on a fresh data dir (and a fresh PostgreSQL database for `postgres`). */
async function withServer(
  store: string,
  run: (server: BenchServer) => Promise<void>,
): Promise<void> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-bench-'))
  const database = store === 'postgres' ? await freshDatabase(postgresAdminUrl!) : undefined
  const server = await startServer({
    dataDir,
    logLevel,
    cpuProf: flag('cpu-prof'),
    // Managed workers run programs of this repository: no sandbox (docs/security.md).
    config: { sandbox: 'none' },
    ...(database ? { storeUrl: database.url } : {}),
  })
  try {
    await run(server)
  } finally {
    await server.stop()
    await reapWorkers(dataDir, 0)
    await database?.drop()
    if (!flag('keep')) rmSync(dataDir, { recursive: true, force: true })
  }
}

async function benchWorkerRunsync(server: BenchServer): Promise<void> {
  const endpointId = await createEndpoint(server, 'bench-runsync')
  const base = `${server.url}/v2/${endpointId}`
  const workers = await startWorkers(settings, base, await workerKeyOf(server, endpointId), 1, 1)
  try {
    const warmup = Math.max(50, settings.warmup)
    await sleep(200)
    const durations = await timeRunsync(base, runsyncCalls, warmup)
    console.log(
      `\n/runsync: ${runsyncCalls} sequential no-op jobs, the bench's warm TS worker (after ${warmup})`,
    )
    console.log(
      `  round trip: p50 ${fmt(percentile(durations, 50))}, p99 ${fmt(percentile(durations, 99))}`,
    )
    figures.latency(
      '/runsync, warm TS worker (bench worker)',
      durations,
      { p50: 1, p99: 4, relation: '<=' },
      {
        name: 'runpod-python --rp_serve_api, handler in-process (quoted)',
        ms: 0.55,
      },
    )
  } finally {
    await workers.stop()
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}
const jobsPerSecond = (values: number[]) => values.map((v) => v.toFixed(0)).join(', ')

function printAnchorRound(name: string, result: AnchorResult): void {
  console.log(`\nanchor ${name}: ${settings.jobs} no-op jobs (its own child process)`)
  console.log(
    `  end to end: ${result.jobsPerSecond.toFixed(0)} jobs/s ` +
      `(first add to last completion ${result.seconds.toFixed(2)} s); ` +
      `adding alone: ${result.addsPerSecond.toFixed(0)} adds per s`,
  )
  console.log(
    `  CPU per job: ${result.cpuMsPerJob.toFixed(3)} ms in its process (submitters and worker)` +
      (result.storeCpuMsPerJob === null
        ? ''
        : `, ${result.storeCpuMsPerJob.toFixed(3)} ms in redis-server`),
  )
}

/**
 * One round of an anchor, printed and added to `results`; why it could not be measured when it
 * failed (undefined when it was).
 */
async function anchorRound(
  name: string,
  round: () => Promise<AnchorResult>,
  results: AnchorResult[],
): Promise<string | undefined> {
  try {
    const measured = await round()
    printAnchorRound(name, measured)
    results.push(measured)
    return undefined
  } catch (error) {
    return `failed: ${(error as Error).message.split('\n')[0]}`
  }
}

/**
 * The figure of the configuration measured beside the store's anchor (graphile-worker batched):
 * podyard's rate beside its median, with no target; or why it was not measured.
 */
function reportBeside(
  store: string,
  rate: number,
  beside: NonNullable<ThroughputAnchor['beside']>,
  notMeasured: string | undefined,
  results: AnchorResult[],
): void {
  const what = `/run -> TS worker -> done, ${store} (jobs/s), beside ${beside.label}`
  if (notMeasured !== undefined || results.length !== rounds) {
    console.log(`\nanchor ${beside.name}: not measured: ${notMeasured}`)
    figures.skipped(what, `not measured: ${notMeasured}`)
    return
  }
  const besideRate = median(results.map((r) => r.jobsPerSecond))
  console.log(
    `\nbeside it on ${store}: ${beside.name} ${besideRate.toFixed(0)} jobs/s (median; rounds ` +
      `${jobsPerSecond(results.map((r) => r.jobsPerSecond))}), ` +
      `${median(results.map((r) => r.cpuMsPerJob)).toFixed(3)} ms CPU per job in its process: ` +
      `podyard ${(rate / besideRate).toFixed(2)}x`,
  )
  figures.beside(what, rate, {
    name: `${beside.name} (measured, median of ${rounds})`,
    rate: besideRate,
  })
}

/**
 * The throughput part on one store, `rounds` times, each podyard round followed by a round of
 * the store's anchor (and of the configuration beside it, if any); the figure is each one's
 * median.
 */
async function throughputWithAnchor(store: string): Promise<void> {
  const anchor = await openThroughputAnchor(store, anchorOptions)
  if (anchor.notMeasured !== undefined) {
    console.log(
      `\nanchor ${anchor.quoted.name}: not measured: ${anchor.notMeasured}; ` +
        `its figure quoted from an earlier run on this machine (${anchor.quoted.rate} jobs/s) stands in`,
    )
  }
  try {
    await withServer(store, async (server) => {
      const ours: ThroughputResult[] = []
      const theirs: AnchorResult[] = []
      const besides: AnchorResult[] = []
      let notMeasured = anchor.notMeasured
      let besideNotMeasured = anchor.beside?.notMeasured
      for (let round = 1; round <= rounds; round++) {
        console.log(`\n== throughput on ${store}, round ${round} of ${rounds}`)
        const result = await throughput(server, settings)
        if (!result) return
        ours.push(result)
        if (notMeasured === undefined) {
          notMeasured = await anchorRound(anchor.name, () => anchor.round(), theirs)
        }
        if (anchor.beside && besideNotMeasured === undefined) {
          besideNotMeasured = await anchorRound(anchor.beside.name, anchor.beside.round, besides)
        }
      }
      const rate = median(ours.map((r) => r.jobsPerSecond))
      const measured = notMeasured === undefined && theirs.length === rounds
      const anchorRate = measured ? median(theirs.map((r) => r.jobsPerSecond)) : anchor.quoted.rate
      const anchorName = measured
        ? `${anchor.name} (measured, median of ${rounds})`
        : `${anchor.quoted.name} (quoted from an earlier run on this machine; not measured: ${notMeasured})`
      console.log(
        `\nthroughput on ${store}: podyard ${rate.toFixed(0)} jobs/s (median; rounds ` +
          `${jobsPerSecond(ours.map((r) => r.jobsPerSecond))}), ${anchorName} ` +
          `${anchorRate.toFixed(0)} jobs/s` +
          (measured ? ` (rounds ${jobsPerSecond(theirs.map((r) => r.jobsPerSecond))})` : '') +
          `: ratio ${(rate / anchorRate).toFixed(2)}x`,
      )
      const bare = await bareHttpCpuPerRequest(settings.submitters)
      const serverUsPerJob = 1000 * median(ours.map((r) => r.serverCpuMsPerJob))
      const perRequest = serverUsPerJob / median(ours.map((r) => r.requestsPerJob))
      console.log(
        `server CPU on ${store}: ${serverUsPerJob.toFixed(1)} µs per job, ${perRequest.toFixed(1)} µs per ` +
          `request (medians); bare node:http ${bare.toFixed(1)} µs per request with the same client ` +
          `and ${settings.submitters} connections (${(perRequest / bare).toFixed(2)}x); load average ${loadAverage()}`,
      )
      figures.rate(
        `/run -> TS worker -> done, ${store} (jobs/s)`,
        rate,
        { name: anchorName, rate: anchorRate, target: store === 'postgres' ? 3 : 1 },
        `${median(ours.map((r) => r.serverCpuMsPerJob)).toFixed(3)} ms server CPU/job`,
      )
      if (anchor.beside) reportBeside(store, rate, anchor.beside, besideNotMeasured, besides)
      figures.value(
        `/run -> TS worker -> done, ${store}: 5xx answers + deadlocks logged (${rounds} round${rounds === 1 ? '' : 's'})`,
        ours.reduce((sum, r) => sum + r.errors5xx + r.deadlocks, 0),
        '<',
        1,
      )
    })
  } finally {
    await anchor.close()
  }
}

/**
 * The backlog part: the throughput on SQLite with each of `--backlogs` jobs queued on an
 * endpoint that has no worker (backlog.ts); each backlog's median beside the first one's (no
 * backlog by default), with the server's CPU per job (a wait shows as fewer jobs/s at the same
 * CPU per job).
 */
async function backlogPart(): Promise<void> {
  const backlogs = option('backlogs', '0,10000,100000').split(',').map(Number)
  const via = option('backlog-via', 'store') === 'run' ? 'run' : 'store'
  const results = await backlogThroughputs(backlogs, via, rounds, settings, (run) =>
    withServer('sqlite', run),
  )
  const first = results.get(backlogs[0]!)!
  if (first.length === 0) return // no workers: nothing completes
  const firstRate = median(first.map((r) => r.jobsPerSecond))
  console.log('')
  for (const backlog of backlogs) {
    const measured = results.get(backlog)!
    const rate = median(measured.map((r) => r.jobsPerSecond))
    const cpuMsPerJob = median(measured.map((r) => r.serverCpuMsPerJob))
    // The share of a core the server was busy: lower at the same CPU per job means it waited
    // (for a CPU the machine's other processes had, or for something else).
    const busy = 100 * median(measured.map((r) => r.serverCoreShare))
    console.log(
      `backlog ${backlog}: ${rate.toFixed(0)} jobs/s (median; rounds ` +
        `${jobsPerSecond(measured.map((r) => r.jobsPerSecond))}), ${cpuMsPerJob.toFixed(3)} ms ` +
        `server CPU per job, server busy ${busy.toFixed(0)}% of a core: ` +
        `${(rate / firstRate).toFixed(2)}x of ${backlogs[0]} queued`,
    )
    figures.beside(
      `/run -> TS worker -> done, sqlite, ${backlog} queued on a worker-less endpoint (jobs/s)`,
      rate,
      { name: `the same with ${backlogs[0]} queued (median of ${rounds})`, rate: firstRate },
      `${cpuMsPerJob.toFixed(3)} ms server CPU/job, ${busy.toFixed(0)}% of a core`,
    )
  }
}

/**
 * The CPU per request of a bare node:http server (a process of its own) answering a small JSON
 * body to POSTs like /run's from the bench's raw client: the floor of one HTTP exchange here.
 */
async function bareHttpCpuPerRequest(connections: number): Promise<number> {
  const anchor = await startBareHttp(
    '{"id":"00000000-0000-7000-8000-000000000000","status":"IN_QUEUE"}',
  )
  try {
    const post = () => ({ method: 'POST', path: '/v2/e/run', body: '{"input":{}}' })
    const headers = { 'content-type': 'application/json' }
    await closedLoop(anchor.url, connections, 1, post, headers) // warm-up
    const before = cpuSeconds(anchor.pid)
    const result = await closedLoop(anchor.url, connections, 3, post, headers)
    return ((cpuSeconds(anchor.pid) - before) * 1e6) / result.requests
  } finally {
    await anchor.stop()
  }
}

function pythonHasRunpod(): boolean {
  const probe = spawnSync(python, ['-c', 'import runpod'], { encoding: 'utf8' })
  return probe.status === 0
}

async function pythonRunsync(server: BenchServer): Promise<void> {
  if (!pythonHasRunpod()) {
    console.log(
      `\nrunpod-python: skipped: \`${python} -c 'import runpod'\` fails here (pip install runpod, ` +
        `or name an interpreter that has it with --python= or PODYARD_BENCH_PYTHON)`,
    )
    figures.skipped('/runsync, runpod-python worker', `${python} cannot import runpod`)
    return
  }
  const handler = path.join(root, 'bench', 'jobs', 'python', 'handler.py')
  const env: Record<string, string> = process.env.PYTHONPATH
    ? { PYTHONPATH: process.env.PYTHONPATH }
    : {}
  const anchor = { name: 'runpod-python --rp_serve_api (quoted)', ms: 0.55 }
  // The SDK as it is costs about a second per job: a few calls say so.
  for (const [mode, calls] of [
    ['default', Math.min(20, runsyncCalls)],
    ['concurrency', Math.min(100, runsyncCalls)],
    ['event-driven', runsyncCalls],
  ] as const) {
    const command: WorkerCommand = {
      name: `runpod-python ${mode}`,
      args: `${python} ${handler}`,
      env: { ...env, BENCH_MODE: mode },
    }
    const durations = await warmManagedRunsync(server, command, calls, 5)
    figures.latency(
      `/runsync, runpod-python worker, job loop ${mode}`,
      durations,
      { p50: 5 },
      anchor,
    )
  }
}

async function main(): Promise<void> {
  console.log(
    `podyard bench/jobs on ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'}), ` +
      `Node ${process.version}; parts ${[...parts].join(', ')}; load average ${loadAverage()}`,
  )
  try {
    if (parts.has('throughput')) {
      for (const store of stores) await throughputWithAnchor(store)
    }
    if (parts.has('backlog')) await backlogPart()
    if (['runsync', 'example', 'python', 'cold'].some((p) => parts.has(p))) {
      await withServer('sqlite', async (server) => {
        if (parts.has('runsync')) await benchWorkerRunsync(server)
        if (parts.has('example')) {
          const durations = await warmManagedRunsync(
            server,
            {
              name: "README's example (examples/echo-worker.ts)",
              args: `${path.join(root, 'node_modules', '.bin', 'tsx')} ${path.join(root, 'examples', 'echo-worker.ts')}`,
            },
            runsyncCalls,
            Math.max(50, settings.warmup),
          )
          figures.latency("/runsync, README's example on a managed endpoint", durations, {
            p50: 1,
            p99: 4,
            relation: '<=',
          })
        }
        if (parts.has('dev')) {
          const durations = await devRunsync(runsyncCalls, Math.max(50, settings.warmup))
          figures.latency('/runsync, `podyard dev examples/echo-worker.ts`', durations, {
            p50: 1,
            p99: 4,
            relation: '<=',
          })
        }
        if (parts.has('python')) await pythonRunsync(server)
        if (parts.has('cold')) {
          const rounds = Number(option('cold-rounds', '10'))
          const durations = await coldStarts(
            server,
            {
              name: 'TS worker (bench/jobs/managed-worker.mjs)',
              args: `${process.execPath} ${path.join(root, 'bench', 'jobs', 'managed-worker.mjs')}`,
            },
            rounds,
          )
          figures.latency(
            'cold start, first /runsync at zero workers',
            durations,
            { p50: 300 },
            {
              name: 'RunPod FlashBoot (published, 0.6-2.3 s)',
              ms: 600,
            },
          )
        }
      })
    }
    if (parts.has('scale')) {
      for (const store of stores) {
        await withServer(store, async (server) => {
          const queued = Number(option('queued', '1000000'))
          const result = await queueScale(server, queued, Math.min(runsyncCalls, 500))
          figures.value(`${queued} queued, ${store}: server RSS (MB)`, result.rssMb, '<', 400)
          figures.value(`${queued} queued, ${store}: /run p50 (ms)`, result.runP50, '<', 2)
          figures.value(`${queued} queued, ${store}: /status p50 (ms)`, result.statusP50, '<', 2)
          figures.value(`${queued} queued, ${store}: /health p50 (ms)`, result.healthP50, '<', 5)
        })
      }
    }
  } finally {
    agent.destroy()
  }
  figures.print(loadAverage())
}

await main()
