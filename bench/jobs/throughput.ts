/**
 * `/run` throughput end to end (bench/README.md, "bench/jobs"): no-op jobs submitted by
 * concurrent keep-alive loops, taken and completed by TypeScript-SDK workers in child processes,
 * on SQLite or PostgreSQL.
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import { serve, type WorkerHandle } from '../../src/sdk/worker/index.js'
import {
  ADMIN_KEY,
  cpuSeconds,
  createEndpoint,
  fmt,
  json,
  now,
  percentile,
  request,
  root,
  sleep,
  workerKeyOf,
  type BenchServer,
} from './bench-server.js'
import { RawHttpConnection } from './raw-http.js'

export interface ThroughputSettings {
  jobs: number
  submitters: number
  workerProcesses: number
  concurrency: number
  warmup: number
  rate: number
  inProcessWorkers: boolean
  client: string
  workerAuth: string
}

export interface ThroughputResult {
  errors5xx: number
  deadlocks: number
  jobsPerSecond: number
  serverCpuMsPerJob: number
  /** HTTP requests the server answered per job (every route but /health). */
  requestsPerJob: number
  latencyP50: number
  /**
   * The server's CPU over the round's wall time: the share of one core it was busy (over 1 when
   * its threads, the SQLite checkpointer and the garbage collector's, ran beside the event loop).
   */
  serverCoreShare: number
}

/** Answers of status 500 or more so far (from /metrics), and the server log's deadlocks. */
export async function serverErrors(
  server: BenchServer,
): Promise<{ errors5xx: number; deadlocks: number }> {
  const text = (await request('GET', `${server.url}/metrics`)).text
  let errors5xx = 0
  for (const match of text.matchAll(/^podyard_http_requests_total\{([^}]*)\} (\d+)/gm)) {
    if (/status="5\d\d"/.test(match[1]!)) errors5xx += Number(match[2])
  }
  const log = readFileSync(path.join(server.dataDir, 'server.log'), 'utf8')
  return { errors5xx, deadlocks: log.match(/deadlock detected/g)?.length ?? 0 }
}

/** Requests the server has answered so far, per route (from /metrics). */
export async function requestCounts(server: BenchServer): Promise<Map<string, number>> {
  const text = (await request('GET', `${server.url}/metrics`)).text
  const counts = new Map<string, number>()
  for (const match of text.matchAll(/^podyard_http_requests_total\{([^}]*)\} (\d+)/gm)) {
    const route = /route="([^"]*)"/.exec(match[1]!)?.[1] ?? '?'
    const method = /method="([^"]*)"/.exec(match[1]!)?.[1] ?? '?'
    const key = `${method} ${route}`
    counts.set(key, (counts.get(key) ?? 0) + Number(match[2]))
  }
  return counts
}

interface Workers {
  pids: number[]
  stop(): Promise<number>
}

export async function startWorkers(
  settings: Pick<ThroughputSettings, 'inProcessWorkers'>,
  endpointUrl: string,
  apiKey: string,
  count: number,
  concurrency: number,
) {
  if (settings.inProcessWorkers) {
    const handles: WorkerHandle[] = []
    for (let i = 0; i < count; i++) {
      handles.push(serve(async () => null, { endpointUrl, apiKey, concurrency }))
    }
    return {
      pids: [],
      stop: async () => {
        await Promise.all(handles.map((h) => h.stop()))
        return Number.NaN
      },
    } satisfies Workers
  }
  const children = await Promise.all(
    Array.from({ length: count }, async () => {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', path.join(root, 'bench', 'jobs', 'worker-process.ts')],
        {
          cwd: root,
          env: {
            ...process.env,
            BENCH_ENDPOINT_URL: endpointUrl,
            BENCH_API_KEY: apiKey,
            BENCH_CONCURRENCY: String(concurrency),
          },
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      )
      let output = ''
      child.stdout!.on('data', (data: Buffer) => {
        output += data.toString()
      })
      await new Promise<void>((resolve, reject) => {
        const check = setInterval(() => {
          if (output.includes('ready ')) {
            clearInterval(check)
            resolve()
          }
        }, 20)
        child.once('exit', (code) => {
          clearInterval(check)
          reject(new Error(`worker exited with ${code}`))
        })
      })
      return { child, output: () => output }
    }),
  )
  return {
    pids: children.map((c) => c.child.pid!),
    stop: async () => {
      let cpu = 0
      await Promise.all(
        children.map(async ({ child, output }) => {
          const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
          child.kill('SIGTERM')
          await exited
          cpu += Number(/cpu (\S+)/.exec(output())?.[1] ?? Number.NaN)
        }),
      )
      return cpu
    },
  } satisfies Workers
}

export async function throughput(
  server: BenchServer,
  settings: ThroughputSettings,
): Promise<ThroughputResult | undefined> {
  const endpointId = await createEndpoint(server, 'bench-run')
  const base = `${server.url}/v2/${endpointId}`
  const workers = await startWorkers(
    settings,
    base,
    settings.workerAuth === 'worker-key' ? await workerKeyOf(server, endpointId) : ADMIN_KEY,
    settings.workerProcesses,
    settings.concurrency,
  )
  await sleep(300)

  const runUrl = new URL(`${base}/run`)
  const runBody = JSON.stringify({ input: {} })
  const runHeaders = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' }
  const submit = async (connection: RawHttpConnection | undefined) => {
    if (connection === undefined) return json<{ id: string }>('POST', runUrl.href, { input: {} })
    const response = await connection.request('POST', runUrl.pathname, runBody, runHeaders)
    if (response.status !== 200) {
      throw new Error(`POST /run answered ${response.status}: ${response.body.slice(0, 300)}`)
    }
    return JSON.parse(response.body) as { id: string }
  }
  /** Submits `count` jobs from the submitters; returns when the last is accepted. */
  const submitAll = async (count: number, start: number, submittedAt: Map<string, number>) => {
    let next = 0
    const submitLoop = async (connection: RawHttpConnection | undefined) => {
      while (next < count) {
        next += 1
        if (settings.rate > 0) {
          const due = start + ((next - 1) * 1000) / settings.rate
          if (due > now()) await sleep(due - now())
        }
        const t0 = now()
        const job = await submit(connection)
        submittedAt.set(job.id, t0)
      }
    }
    const submitter = async () => {
      const connection = settings.client === 'raw' ? new RawHttpConnection(runUrl) : undefined
      try {
        await submitLoop(connection)
      } finally {
        connection?.close()
      }
    }
    await Promise.all(Array.from({ length: settings.submitters }, submitter))
  }
  const noWorkers = settings.workerProcesses === 0 && !settings.inProcessWorkers
  /** Waits until `total` of the endpoint's jobs have completed. */
  const completed = async (total: number) => {
    // /health counts the endpoint's jobs: poll it gently, it is not what is measured.
    for (;;) {
      const health = await json<{ jobs: { completed: number; failed: number } }>(
        'GET',
        `${base}/health`,
      )
      if (health.jobs.failed > 0) throw new Error(`${health.jobs.failed} jobs failed`)
      if (health.jobs.completed >= total) return
      await sleep(100)
    }
  }

  // Warm-up: the same jobs through the same path, not counted, so that the figures are those of
  // a server whose hot code the JIT has compiled (bench/README.md, "Warm-up").
  if (settings.warmup > 0) {
    const warmupStart = now()
    await submitAll(settings.warmup, warmupStart, new Map())
    if (!noWorkers) await completed(settings.warmup)
    const seconds = (now() - warmupStart) / 1000
    console.log(
      `\nwarm-up: ${settings.warmup} jobs in ${seconds.toFixed(2)} s ` +
        `(${(settings.warmup / seconds).toFixed(0)} jobs/s, not counted)`,
    )
    await sleep(300)
  }

  const requests0 = await requestCounts(server)
  const serverCpu0 = cpuSeconds(server.child.pid)
  const workerCpu0 = workers.pids.map(cpuSeconds)
  const benchCpu0 = process.cpuUsage()
  const submittedAt = new Map<string, number>()
  const start = now()
  await submitAll(settings.jobs, start, submittedAt)
  const submitEnd = now()
  if (noWorkers) {
    const serverCpu = cpuSeconds(server.child.pid) - serverCpu0
    const seconds = (submitEnd - start) / 1000
    console.log(`\n/run alone: ${settings.jobs} no-op jobs, no workers`)
    console.log(
      `  ${(settings.jobs / seconds).toFixed(0)} /run per s; server CPU per /run: ` +
        `${((1000 * serverCpu) / settings.jobs).toFixed(3)} ms (server ${((100 * serverCpu) / seconds).toFixed(0)}% of one core)`,
    )
    return undefined
  }
  await completed(settings.warmup + settings.jobs)
  const seenEnd = now()
  const serverCpu = cpuSeconds(server.child.pid) - serverCpu0
  const requests = await requestCounts(server)
  const workerCpu = workers.pids.map((pid, i) => cpuSeconds(pid) - workerCpu0[i]!)
  const benchCpu = process.cpuUsage(benchCpu0)

  const rows = await completedRows(server, endpointId)
  const latencies: number[] = []
  let lastCompletion = 0
  for (const row of rows) {
    const submitted = submittedAt.get(row.id)
    if (submitted === undefined) continue // a warm-up job
    const completedAt = Date.parse(row.completed_at)
    lastCompletion = Math.max(lastCompletion, completedAt)
    latencies.push(completedAt - submitted)
  }
  latencies.sort((a, b) => a - b)
  const elapsed = (Math.max(lastCompletion, 0) - start) / 1000
  await workers.stop()

  const wall = (seenEnd - start) / 1000
  console.log(`\n/run throughput: ${settings.jobs} no-op jobs`)
  console.log(
    `  workers: ${settings.workerProcesses} x concurrency ${settings.concurrency} ` +
      `(${settings.inProcessWorkers ? 'in the bench process' : 'child processes'}); ` +
      `submitters: ${settings.submitters} concurrent /run loops (${settings.client} client)` +
      `${settings.rate > 0 ? ` paced at ${settings.rate} jobs/s` : ''}; worker auth: ${settings.workerAuth}`,
  )
  console.log(
    `  end to end: ${(settings.jobs / elapsed).toFixed(0)} jobs/s ` +
      `(first submit to last completion ${elapsed.toFixed(2)} s)`,
  )
  console.log(
    `  submitting alone: ${(settings.jobs / ((submitEnd - start) / 1000)).toFixed(0)} /run per s`,
  )
  console.log(
    `  submit-to-complete latency: p50 ${fmt(percentile(latencies, 50))}, ` +
      `p99 ${fmt(percentile(latencies, 99))}, max ${fmt(latencies.at(-1) ?? Number.NaN)}`,
  )
  console.log(
    `  server CPU per job: ${((1000 * serverCpu) / settings.jobs).toFixed(3)} ms ` +
      `(${(settings.jobs / serverCpu).toFixed(0)} jobs per server CPU-second)`,
  )
  const routesPerJob = [...requests]
    .map(
      ([route, count]) => [route, (count - (requests0.get(route) ?? 0)) / settings.jobs] as const,
    )
    .filter(([route, n]) => n > 0.001 && !route.endsWith('/health'))
  const requestsPerJob = routesPerJob.reduce((sum, [, n]) => sum + n, 0)
  const perJob = routesPerJob.map(([route, n]) => `${route} ${n.toFixed(3)}`)
  console.log(
    `  requests per job: ${perJob.join(', ')}; server CPU per request ` +
      `${((1e6 * serverCpu) / settings.jobs / requestsPerJob).toFixed(1)} µs`,
  )
  const pct = (seconds: number) => `${((100 * seconds) / wall).toFixed(0)}%`
  console.log(
    `  CPU (of one core, over ${wall.toFixed(2)} s): server ${pct(serverCpu)}, ` +
      `workers ${workerCpu.map(pct).join(' + ') || 'in the bench process'}, ` +
      `bench process ${pct((benchCpu.user + benchCpu.system) / 1e6)}`,
  )
  const errors = await serverErrors(server)
  console.log(
    `  server errors: ${errors.errors5xx} answers of 5xx, ${errors.deadlocks} deadlocks in its log`,
  )
  return {
    ...errors,
    jobsPerSecond: settings.jobs / elapsed,
    serverCpuMsPerJob: (1000 * serverCpu) / settings.jobs,
    requestsPerJob,
    latencyP50: percentile(latencies, 50),
    serverCoreShare: serverCpu / wall,
  }
}

/** The endpoint's jobs with their stored completion times, read from the store itself. */
async function completedRows(
  server: BenchServer,
  endpointId: string,
): Promise<Array<{ id: string; completed_at: string }>> {
  if (server.storeUrl === undefined) {
    const db = new Database(path.join(server.dataDir, 'podyard.db'), { readonly: true })
    try {
      return db
        .prepare('select id, completed_at from jobs where endpoint_id = ?')
        .all(endpointId) as Array<{ id: string; completed_at: string }>
    } finally {
      db.close()
    }
  }
  const client = new pg.Client({ connectionString: server.storeUrl })
  await client.connect()
  try {
    const { rows } = await client.query<{ id: string; completed_at: Date | string }>(
      'select id, completed_at from jobs where endpoint_id = $1',
      [endpointId],
    )
    return rows.map((r) => ({
      id: r.id,
      completed_at: r.completed_at instanceof Date ? r.completed_at.toISOString() : r.completed_at,
    }))
  } finally {
    await client.end()
  }
}
