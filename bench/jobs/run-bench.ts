/**
 * bench/jobs: end-to-end throughput and latency of the job queue (bench/README.md).
 *
 * 1. Starts `podyard serve` (bin/podyard.js, the built dist) as a child process on a fresh
 *    SQLite data dir, with the job API limits raised so they do not throttle the run.
 * 2. Starts TypeScript-SDK workers with a no-op handler, as child processes (default) or in
 *    this process (--in-process-workers).
 * 3. Warms the server up with --warmup jobs through the same path (not counted: the figures are
 *    those of a server whose hot paths the JIT has compiled), then
 *    submits --jobs no-op jobs through POST /run from --submitters concurrent loops, waits
 *    until all are COMPLETED, and prints jobs per second end to end (first submit to last
 *    completion) and p50/p99 submit-to-complete latency (client clock before the /run request
 *    to the job's completed_at as stored; one machine, one clock).
 * 4. On a second endpoint with one idle warm worker (concurrency 1), times --runsync
 *    sequential POST /runsync round trips of a no-op job, after --warmup (at least 50) more.
 *
 * Options: --jobs=10000 --submitters=32 --rate=0 (jobs/s, open loop; 0 = closed loop, as fast as
 * the submitters go) --client=raw|node (the submitters' HTTP client) --worker-processes=1
 * --concurrency=64 --runsync=1000 --warmup=2000 (jobs, and /runsync calls, before each
 * measurement, not counted) (--worker-processes=0: no workers, only the cost of /run itself)
 * --in-process-workers --log-level=info --worker-auth=worker-key|api-key --cpu-prof (the server
 * writes a .cpuprofile into bench/jobs/profiles/) --keep (keep the data dir).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import http from 'node:http'
import { cpus, tmpdir } from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { serve, type WorkerHandle } from '../../src/sdk/worker/index.js'
import { RawHttpConnection } from './raw-http.js'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const ADMIN_KEY = 'pyd_bench-admin-key-0123456789abcdef'

function option(name: string, fallback: string): string {
  const prefix = `--${name}=`
  const found = process.argv.find((arg) => arg.startsWith(prefix))
  return found ? found.slice(prefix.length) : fallback
}
const flag = (name: string) => process.argv.includes(`--${name}`)

const settings = {
  jobs: Number(option('jobs', '10000')),
  submitters: Number(option('submitters', '32')),
  workerProcesses: Number(option('worker-processes', '1')),
  concurrency: Number(option('concurrency', '64')),
  runsync: Number(option('runsync', '1000')),
  /** Jobs (and /runsync calls) run before each measurement and not counted: JIT warm-up. */
  warmup: Number(option('warmup', '2000')),
  /** Jobs per second to submit at (open loop); 0: as fast as the submitters go (closed loop). */
  rate: Number(option('rate', '0')),
  inProcessWorkers: flag('in-process-workers'),
  logLevel: option('log-level', 'info'),
  cpuProf: flag('cpu-prof'),
  keep: flag('keep'),
  /** The submitters' HTTP client: `raw` (bench/jobs/raw-http.ts, lighter) or `node` (node:http). */
  client: option('client', 'raw'),
  /** What the workers authenticate with: the endpoint's worker key (as managed workers do) or the admin API key. */
  workerAuth: option('worker-auth', 'worker-key'),
}

const now = () => performance.timeOrigin + performance.now()
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[index]!
}
const fmt = (ms: number) => `${ms.toFixed(2)} ms`

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return Number.NaN
  }
}

const agent = new http.Agent({ keepAlive: true })

function request(
  method: string,
  url: string,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body)
    const req = http.request(url, {
      method,
      agent,
      headers: {
        authorization: `Bearer ${ADMIN_KEY}`,
        ...(payload === undefined
          ? {}
          : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
      },
    })
    req.on('error', reject)
    req.on('response', (res) => {
      const parts: Buffer[] = []
      res.on('data', (part: Buffer) => parts.push(part))
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString('utf8') }),
      )
      res.on('error', reject)
    })
    req.end(payload)
  })
}

async function json<T>(method: string, url: string, body?: unknown, expected = 200): Promise<T> {
  const response = await request(method, url, body)
  if (response.status !== expected) {
    throw new Error(`${method} ${url} answered ${response.status}: ${response.text.slice(0, 300)}`)
  }
  return JSON.parse(response.text) as T
}

interface Server {
  child: ChildProcess
  url: string
  stop(): Promise<void>
}

async function startServer(dataDir: string): Promise<Server> {
  const configFile = path.join(dataDir, 'bench.yaml')
  // The job API's per-endpoint limits (spec: 1000 /run per 10 s) would cap the run at 100/s.
  const unlimited = { rate: 100_000_000, concurrency: 100_000 }
  writeFileSync(
    configFile,
    JSON.stringify({ jobLimits: { operations: { run: unlimited, runsync: unlimited } } }),
  )
  const logFile = path.join(dataDir, 'server.log')
  const logOutput = openSync(logFile, 'w')
  const profileDir = path.join(root, 'bench', 'jobs', 'profiles')
  if (settings.cpuProf) mkdirSync(profileDir, { recursive: true })
  const child = spawn(
    process.execPath,
    [
      ...(settings.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
      path.join(root, 'bin', 'podyard.js'),
      'serve',
    ],
    {
      cwd: dataDir,
      env: {
        ...process.env,
        PODYARD_DATA_DIR: dataDir,
        PODYARD_PORT: '0',
        PODYARD_ADMIN_KEY: ADMIN_KEY,
        PODYARD_CONFIG: configFile,
        PODYARD_LOG_LEVEL: settings.logLevel,
      },
      // Its log goes to a file: a pipe this busy process drains late would block the server.
      stdio: ['ignore', logOutput, 'inherit'],
    },
  )
  closeSync(logOutput)
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const url = await new Promise<string>((resolve, reject) => {
    const check = setInterval(() => {
      const match = /is serving at (\S+)/.exec(readFileSync(logFile, 'utf8'))
      if (match) {
        clearInterval(check)
        resolve(match[1]!)
      }
    }, 50)
    child.once('exit', (code) => {
      clearInterval(check)
      reject(new Error(`podyard serve exited with ${code}: ${readFileSync(logFile, 'utf8')}`))
    })
  })
  return {
    child,
    url,
    stop: async () => {
      child.kill('SIGTERM')
      await exited
    },
  }
}

/** Requests the server has answered so far, per route (from /metrics). */
async function requestCounts(server: Server): Promise<Map<string, number>> {
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

async function workerKeyOf(server: Server, endpointId: string): Promise<string> {
  if (settings.workerAuth !== 'worker-key') return ADMIN_KEY
  const { workerKey } = await json<{ workerKey: string }>(
    'GET',
    `${server.url}/v2/serverless/${endpointId}/worker-key`,
  )
  return workerKey
}

async function startWorkers(
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

async function createEndpoint(server: Server, name: string): Promise<string> {
  const created = await json<{ id: string }>(
    'POST',
    `${server.url}/v2/serverless`,
    // The bench runs its own workers: the platform must start none (they would outlive the
    // bench's server and skew its figures).
    { name, image: 'bench:1', gpu: { pools: ['ADA_24'] }, workers: { min: 0, max: 0 } },
    201,
  )
  return created.id
}

async function throughput(server: Server, dataDir: string): Promise<void> {
  const endpointId = await createEndpoint(server, 'bench-run')
  const base = `${server.url}/v2/${endpointId}`
  const workers = await startWorkers(
    base,
    await workerKeyOf(server, endpointId),
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
    return
  }
  await completed(settings.warmup + settings.jobs)
  const seenEnd = now()
  const serverCpu = cpuSeconds(server.child.pid) - serverCpu0
  const requests = await requestCounts(server)
  const workerCpu = workers.pids.map((pid, i) => cpuSeconds(pid) - workerCpu0[i]!)
  const benchCpu = process.cpuUsage(benchCpu0)

  const db = new Database(path.join(dataDir, 'podyard.db'), { readonly: true })
  const rows = db
    .prepare('select id, completed_at from jobs where endpoint_id = ?')
    .all(endpointId) as Array<{ id: string; completed_at: string }>
  db.close()
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
  const perJob = [...requests]
    .map(
      ([route, count]) => [route, (count - (requests0.get(route) ?? 0)) / settings.jobs] as const,
    )
    .filter(([route, n]) => n > 0.001 && !route.endsWith('/health'))
    .map(([route, n]) => `${route} ${n.toFixed(3)}`)
  console.log(`  requests per job: ${perJob.join(', ')}`)
  const pct = (seconds: number) => `${((100 * seconds) / wall).toFixed(0)}%`
  console.log(
    `  CPU (of one core, over ${wall.toFixed(2)} s): server ${pct(serverCpu)}, ` +
      `workers ${workerCpu.map(pct).join(' + ') || 'in the bench process'}, ` +
      `bench process ${pct((benchCpu.user + benchCpu.system) / 1e6)}`,
  )
}

async function runsync(server: Server): Promise<void> {
  const endpointId = await createEndpoint(server, 'bench-runsync')
  const base = `${server.url}/v2/${endpointId}`
  const workers = await startWorkers(base, await workerKeyOf(server, endpointId), 1, 1)
  for (let i = 0; i < Math.max(50, settings.warmup); i++) {
    await json('POST', `${base}/runsync`, { input: {} })
  }
  await sleep(200)
  const durations: number[] = []
  for (let i = 0; i < settings.runsync; i++) {
    const t0 = performance.now()
    const result = await json<{ status: string }>('POST', `${base}/runsync`, { input: {} })
    durations.push(performance.now() - t0)
    if (result.status !== 'COMPLETED') throw new Error(`runsync ended ${result.status}`)
  }
  await workers.stop()
  durations.sort((a, b) => a - b)
  const mean = durations.reduce((a, b) => a + b, 0) / durations.length
  console.log(
    `\n/runsync overhead: ${settings.runsync} sequential no-op jobs, one idle warm worker ` +
      `(after ${Math.max(50, settings.warmup)} not counted)`,
  )
  console.log(
    `  round trip: p50 ${fmt(percentile(durations, 50))}, p99 ${fmt(percentile(durations, 99))}, ` +
      `mean ${fmt(mean)}, max ${fmt(durations.at(-1) ?? Number.NaN)}`,
  )
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-bench-'))
  console.log(
    `podyard bench/jobs on ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'}), ` +
      `Node ${process.version}, SQLite in ${dataDir}, server log level ${settings.logLevel}`,
  )
  const server = await startServer(dataDir)
  try {
    if (settings.jobs > 0) await throughput(server, dataDir)
    if (settings.runsync > 0) await runsync(server)
  } finally {
    await server.stop()
    agent.destroy()
    if (!settings.keep) rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
