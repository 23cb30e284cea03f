/**
 * bench/fleet: the cost of pods as the fleet and the pods grow (bench/README.md).
 *
 * Part 1, a 10 000-host simulated fleet whose hosts run here under a driver that only records
 * workloads (bench/fleet/recording-driver.ts; spawning a real process per pod would measure
 * fork and exec): creates `--pods` pods from `--creators` clients and prints the create rate per
 * 500 pods (flat or not), then, with every pod RUNNING, the idle server's CPU, and
 * `GET /v2/pods/{id}` latency (one client) and requests per second at `--clients` clients,
 * interleaved round by round with a bare node:http anchor that answers the same body
 * (bench/fleet/pod-reads.ts), and the GraphQL `pod` query at `--clients` clients, interleaved
 * with mercurius answering `{ hello }` (bench/fleet/graphql-reads.ts).
 *
 * Part `read-growth`, on the same fleet: pods created up to each count of `--growth`, and at each
 * `GET /v2/pods/{id}` p50 and p99 at one client (bench/fleet/read-growth.ts).
 *
 * Part 2, the process driver with real processes (`exec sleep infinity`, no sandbox) on a small
 * simulated fleet: `--process-pods` pods; idle CPU; the same reads (their runtime block now from
 * real processes); `--terminate` of them DELETEd at once (time until every DELETE answered,
 * until every process group is gone, the server's peak RSS); pods with a declared http port
 * whose process listens at once (create -> RUNNING), and pods without ports (the 1 s rule).
 *
 * Every server is a child process (`bench/fleet/fleet-server.ts`, `podyard serve` with the
 * bench's options) on a fresh SQLite data dir in the temp directory.
 *
 * Options: --hosts=10000 --pods=2000 --warmup=500 --creators=16 --clients=50 --seconds=3 --rounds=3
 * --latency-requests=2000 --idle-seconds=60 --process-pods=2000 --terminate=1000
 * --port-pods=20 --growth=10,1000,10000 --part=all|record|read-growth|process
 * --max-create-seconds=300 --cpu-prof --idle-only (each part ends after its idle measurement)
 * --keep
 *
 * The figures with a target are printed again at the end as one table (fleet-figures.ts).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus } from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { BENCH_ADMIN_KEY, startBenchServer, type BenchServer } from '../bench-server.js'
import { RawHttpConnection } from '../jobs/raw-http.js'
import { FleetFigures, fmt, met } from './fleet-figures.js'
import { fleetFile, measuredPod } from './fleet-shape.js'
import { graphqlReads } from './graphql-reads.js'
import { cpuSeconds, loadAverage, memoryMb, percentile, sleep } from './load.js'
import { podReads, type ReadBench } from './pod-reads.js'
import { readGrowth } from './read-growth.js'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const ADMIN_KEY = BENCH_ADMIN_KEY
const AUTH = { authorization: `Bearer ${ADMIN_KEY}` }
const JSON_AUTH = { ...AUTH, 'content-type': 'application/json' }
/** The headers of a member's requests (role user, as most clients are), given its key. */
const memberAuth = (key: string) => ({
  authorization: `Bearer ${key}`,
  'content-type': 'application/json',
})

function option(name: string, fallback: string): string {
  const prefix = `--${name}=`
  const found = process.argv.find((arg) => arg.startsWith(prefix))
  return found ? found.slice(prefix.length) : fallback
}
const flag = (name: string) => process.argv.includes(`--${name}`)

const settings = {
  hosts: Number(option('hosts', '10000')),
  pods: Number(option('pods', '2000')),
  /** Pods created before the measured ones, not counted: the server's JIT warm-up. */
  warmup: Number(option('warmup', '500')),
  creators: Number(option('creators', '16')),
  clients: Number(option('clients', '50')),
  seconds: Number(option('seconds', '3')),
  rounds: Number(option('rounds', '3')),
  latencyRequests: Number(option('latency-requests', '2000')),
  idleSeconds: Number(option('idle-seconds', '60')),
  processPods: Number(option('process-pods', '2000')),
  terminate: Number(option('terminate', '1000')),
  portPods: Number(option('port-pods', '20')),
  /** The pod counts of part read-growth, ascending. */
  growth: option('growth', '10,1000,10000')
    .split(',')
    .map(Number)
    .sort((a, b) => a - b),
  part: option('part', 'all'),
  maxCreateSeconds: Number(option('max-create-seconds', '300')),
  cpuProf: flag('cpu-prof'),
  /** Each part stops after its idle measurement (for a profile of the idle server). */
  idleOnly: flag('idle-only'),
  keep: flag('keep'),
}

/** The targets of performance round 3 (bench/README.md). */
const TARGETS = {
  /** Of a core, with every pod of part 1 RUNNING (2 500 by default); 5 in round 2. */
  idleCpuPercent: 2,
  getP50Ms: 2,
  /** `GET /v2/pods/{id}` at `--clients` clients over bare node:http's requests per second. */
  getRatio: 0.5,
  /** The GraphQL `pod` query at `--clients` clients over mercurius's `{ hello }`. */
  graphqlRatio: 0.5,
  /** On `--hosts` (10 000) hosts; 500 in round 2. */
  createsPerSecond: 2000,
  portRunningP50Ms: 300,
  /**
   * The one-client p50 of `GET /v2/pods/{id}` at the largest `--growth` count over the
   * smallest's: flat (1.5x is wider than what identical runs vary by here, about a fifth).
   */
  readGrowthRatio: 1.5,
}

const figures = new FleetFigures()
const reads: ReadBench = { settings, targets: TARGETS, figures }

type Server = BenchServer

async function startServer(
  name: string,
  fleet: unknown,
  options: { record: boolean; env?: Record<string, string> },
): Promise<Server> {
  const profileDir = path.join(root, 'bench', 'fleet', 'profiles')
  if (settings.cpuProf) mkdirSync(profileDir, { recursive: true })
  return startBenchServer({
    name: `fleet-${name}`,
    nodeArgs: settings.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
    args: options.record ? ['--record'] : [],
    env: (dataDir) => {
      const fleetPath = path.join(dataDir, 'fleet.json')
      writeFileSync(fleetPath, JSON.stringify(fleet))
      return { PODYARD_FLEET: fleetPath, PODYARD_SANDBOX: 'none', ...options.env }
    },
    keep: settings.keep,
  })
}

async function call(
  server: Server,
  method: string,
  pathAndQuery: string,
  body?: unknown,
  headers?: Record<string, string>,
): Promise<{ status: number; json: unknown }> {
  const response = await fetch(`${server.url}${pathAndQuery}`, {
    method,
    headers: headers ?? (body === undefined ? AUTH : JSON_AUTH),
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await response.text()
  return { status: response.status, json: text ? JSON.parse(text) : null }
}

/** A second account, role user, made by the admin; its key. */
async function memberKey(server: Server): Promise<string> {
  const created = await call(server, 'POST', '/v2/admin/accounts', {
    email: 'bench-member@example.com',
  })
  if (created.status !== 201) throw new Error(`account: ${created.status}`)
  return (created.json as { apiKey: { key: string } }).apiKey.key
}

/** Pods of the given statuses (none of them RUNNING: those lists carry no runtime block). */
async function countPods(
  server: Server,
  statuses: string,
  headers?: Record<string, string>,
): Promise<number> {
  const { json } = await call(
    server,
    'GET',
    `/v2/pods?status=${statuses}&includeClusterPods=true`,
    undefined,
    headers,
  )
  return (json as { pods: unknown[] }).pods.length
}

async function waitSettled(
  server: Server,
  timeoutMs: number,
  headers?: Record<string, string>,
): Promise<number> {
  const deadline = performance.now() + timeoutMs
  for (;;) {
    const pending = await countPods(server, 'PROVISIONING,STARTING', headers)
    if (pending === 0 || performance.now() > deadline) return pending
    await sleep(500)
  }
}

/** Creates pods from `creators` clients; prints the rate per 500 pods; returns their ids. */
async function createPods(
  server: Server,
  count: number,
  bodyOf: (i: number) => unknown,
  headers: Record<string, string> = JSON_AUTH,
): Promise<{ ids: string[]; perSecond: number; windows: number[]; cpuMsPerCreate: number }> {
  const connections = Array.from(
    { length: settings.creators },
    () => new RawHttpConnection(new URL(server.url)),
  )
  const ids: string[] = []
  const doneAt: number[] = []
  let next = 0
  const cpuBefore = cpuSeconds(server.pid)
  const started = performance.now()
  const deadline = started + settings.maxCreateSeconds * 1000
  try {
    await Promise.all(
      connections.map(async (connection) => {
        while (next < count && performance.now() < deadline) {
          const i = next++
          const response = await connection.request(
            'POST',
            '/v2/pods',
            JSON.stringify(bodyOf(i)),
            headers,
          )
          if (response.status !== 201) {
            throw new Error(`create ${i} answered ${response.status}: ${response.body}`)
          }
          ids.push((JSON.parse(response.body) as { id: string }).id)
          doneAt.push(performance.now())
        }
      }),
    )
  } finally {
    for (const connection of connections) connection.close()
  }
  const elapsed = (performance.now() - started) / 1000
  const cpu = cpuSeconds(server.pid) - cpuBefore
  const windows: number[] = []
  for (let from = 0; from < doneAt.length; from += 500) {
    const to = Math.min(doneAt.length, from + 500) - 1
    const begin = from === 0 ? started : doneAt[from - 1]!
    windows.push((to - from + 1) / ((doneAt[to]! - begin) / 1000))
  }
  if (ids.length < count) {
    console.log(
      `  (stopped after ${settings.maxCreateSeconds} s: ${ids.length} of ${count} created)`,
    )
  }
  return {
    ids,
    perSecond: ids.length / elapsed,
    windows,
    cpuMsPerCreate: (cpu * 1000) / ids.length,
  }
}

async function idleCpu(server: Server): Promise<{ percent: number; rssMb: number }> {
  await sleep(3000)
  const before = cpuSeconds(server.pid)
  const t0 = performance.now()
  await sleep(settings.idleSeconds * 1000)
  const busy = cpuSeconds(server.pid) - before
  return {
    percent: (busy / ((performance.now() - t0) / 1000)) * 100,
    rssMb: memoryMb(server.pid, 'VmRSS'),
  }
}

async function partRecord(): Promise<void> {
  console.log(
    `\n== Part 1: ${settings.hosts} simulated hosts, workloads recorded (no processes), ${settings.pods} pods`,
  )
  const server = await startServer(
    'record',
    fleetFile(settings.hosts, { vcpus: 32, memoryGb: 128, diskGb: 2000 }),
    { record: true },
  )
  try {
    if (settings.warmup > 0) {
      await createPods(server, settings.warmup, (i) => ({
        name: `warmup-${i}`,
        image: 'runpod/base:0.6.2',
        disk: 10,
        cpu: { id: 'cpu3g', vcpuCount: 2 },
      }))
    }
    const member = memberAuth(await memberKey(server))
    const created = await createPods(server, settings.pods, measuredPod, member)
    console.log(
      `  creates: ${fmt(created.perSecond, 0)}/s over ${created.ids.length} pods from ${settings.creators} clients, after ${settings.warmup} not counted (${fmt(created.cpuMsPerCreate)} ms of server CPU each, with the lifecycle starting them meanwhile); target >= ${TARGETS.createsPerSecond}/s: ${met(created.perSecond >= TARGETS.createsPerSecond)}`,
    )
    console.log(`  per 500 pods: ${created.windows.map((w) => `${fmt(w, 0)}/s`).join(', ')}`)
    figures.add({
      what: `pod creates, ${settings.hosts} hosts, ${settings.creators} clients`,
      measured: `${fmt(created.perSecond, 0)}/s, ${fmt(created.cpuMsPerCreate)} ms CPU each`,
      target: `>= ${TARGETS.createsPerSecond}/s`,
      met: created.perSecond >= TARGETS.createsPerSecond,
    })
    const pending =
      (await waitSettled(server, 120_000)) + (await waitSettled(server, 120_000, member))
    if (pending > 0) console.log(`  (${pending} pods still not RUNNING after 120 s)`)
    const idle = await idleCpu(server)
    console.log(
      `  idle with ${created.ids.length + settings.warmup} RUNNING pods: ${fmt(idle.percent)} % of a core over ${settings.idleSeconds} s (RSS ${fmt(idle.rssMb, 0)} MB); target < ${TARGETS.idleCpuPercent} %: ${met(idle.percent < TARGETS.idleCpuPercent)}`,
    )
    figures.add({
      what: `idle CPU, ${created.ids.length + settings.warmup} RUNNING pods (recorded)`,
      measured: `${fmt(idle.percent)} % of a core`,
      target: `< ${TARGETS.idleCpuPercent} %`,
      met: idle.percent < TARGETS.idleCpuPercent,
    })
    // With --cpu-prof, a profile of the idle server alone.
    if (settings.idleOnly) return
    await podReads(reads, server, created.ids, 'Part 1 (as a member)', member)
    await graphqlReads(reads, server, created.ids, member)
    const more = await createPods(server, Math.min(500, settings.pods), (i) => ({
      name: `bench-more-${i}`,
      image: 'runpod/base:0.6.2',
      disk: 10,
      cpu: { id: 'cpu3c', vcpuCount: 2 },
    }))
    console.log(
      `  500 more creates with ${created.ids.length} pods placed: ${fmt(more.perSecond, 0)}/s (${fmt(more.cpuMsPerCreate)} ms of server CPU each)`,
    )
  } finally {
    await server.stop()
  }
}

interface WorkloadRecordFile {
  pgid: number
}

function pgidOf(server: Server, podId: string): number | undefined {
  try {
    const file = path.join(server.dataDir, 'runtime', 'process', podId, 'state.json')
    return (JSON.parse(readFileSync(file, 'utf8')) as WorkloadRecordFile).pgid
  } catch {
    return undefined
  }
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

async function terminate(server: Server, ids: string[]): Promise<void> {
  const groups = ids.flatMap((id) => pgidOf(server, id) ?? [])
  const connections = Array.from(
    { length: settings.clients },
    () => new RawHttpConnection(new URL(server.url)),
  )
  let next = 0
  let peakRss = memoryMb(server.pid, 'VmRSS')
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, memoryMb(server.pid, 'VmRSS'))
  }, 50)
  const cpuBefore = cpuSeconds(server.pid)
  const started = performance.now()
  try {
    await Promise.all(
      connections.map(async (connection) => {
        while (next < ids.length) {
          const id = ids[next++]!
          const response = await connection.request('DELETE', `/v2/pods/${id}`, '', AUTH)
          if (response.status !== 204) throw new Error(`DELETE ${id}: ${response.status}`)
        }
      }),
    )
    const answered = (performance.now() - started) / 1000
    let alive = groups
    while (alive.length > 0 && performance.now() - started < 600_000) {
      await sleep(20)
      alive = alive.filter(groupAlive)
    }
    const gone = (performance.now() - started) / 1000
    console.log(
      `  terminating ${ids.length} pods at once (${settings.clients} clients): DELETEs answered in ${fmt(answered)} s, every process group gone after ${fmt(gone)} s${alive.length > 0 ? ` (${alive.length} still alive)` : ''}; server CPU ${fmt(cpuSeconds(server.pid) - cpuBefore)} s, peak RSS ${fmt(peakRss, 0)} MB`,
    )
  } finally {
    clearInterval(sampler)
    for (const connection of connections) connection.close()
  }
}

/** Create -> first GET that says RUNNING, one pod at a time, polling every 5 ms. */
async function timeToRunning(server: Server, count: number, body: (i: number) => unknown) {
  const times: number[] = []
  const ids: string[] = []
  for (let i = 0; i < count; i++) {
    const started = performance.now()
    const created = await call(server, 'POST', '/v2/pods', body(i))
    if (created.status !== 201) throw new Error(`create answered ${created.status}`)
    const id = (created.json as { id: string }).id
    ids.push(id)
    for (;;) {
      const { json } = await call(server, 'GET', `/v2/pods/${id}`)
      const status = (json as { status: string }).status
      if (status === 'RUNNING') break
      if (status === 'ERROR' || status === 'EXITED') {
        throw new Error(`pod ${id} went ${status}: ${JSON.stringify(json)}`)
      }
      if (performance.now() - started > 60_000) throw new Error(`pod ${id} not RUNNING in 60 s`)
      await sleep(5)
    }
    times.push(performance.now() - started)
  }
  return { times, ids }
}

/** Pods of a member created up to each `--growth` count, and the read's latency at each. */
async function partReadGrowth(): Promise<void> {
  console.log(
    `\n== Part read-growth: ${settings.hosts} simulated hosts, workloads recorded, pods up to ${settings.growth.join(', ')}`,
  )
  const server = await startServer(
    'read-growth',
    fleetFile(settings.hosts, { vcpus: 32, memoryGb: 128, diskGb: 2000 }),
    { record: true },
  )
  try {
    const member = memberAuth(await memberKey(server))
    const ids: string[] = []
    await readGrowth(reads, server, member, settings.growth, async (count) => {
      const created = await createPods(
        server,
        count - ids.length,
        (i) => ({
          name: `growth-${ids.length + i}`,
          image: 'runpod/base:0.6.2',
          disk: 10,
          cpu: { id: 'cpu3c', vcpuCount: 2 },
        }),
        member,
      )
      ids.push(...created.ids)
      const pending = await waitSettled(server, 120_000, member)
      if (pending > 0) console.log(`  (${pending} pods still not RUNNING after 120 s)`)
      return ids
    })
  } finally {
    await server.stop()
  }
}

async function partProcess(): Promise<void> {
  console.log(`\n== Part 2: the process driver, real processes, ${settings.processPods} pods`)
  const hosts = Math.max(1, Math.ceil(settings.processPods / 50))
  // Every host a CPU host here (one in five would have GPUs): 64 vCPUs hold 32 pods of 2.
  const fleet = fleetFile(hosts * 2, { vcpus: 128, memoryGb: 512, diskGb: 10_000 })
  const server = await startServer('process', fleet, { record: false })
  try {
    const created = await createPods(server, settings.processPods, (i) => ({
      name: `sleeper-${i}`,
      image: 'runpod/base:0.6.2',
      disk: 1,
      cpu: { id: 'cpu3c', vcpuCount: 2 },
    }))
    console.log(
      `  creates: ${fmt(created.perSecond, 0)}/s over ${created.ids.length} pods (${fmt(created.cpuMsPerCreate)} ms of server CPU each, with their processes' starts)`,
    )
    const pending = await waitSettled(server, 300_000)
    if (pending > 0) console.log(`  (${pending} pods still not RUNNING after 300 s)`)
    const idle = await idleCpu(server)
    console.log(
      `  idle with ${created.ids.length} RUNNING pods (${created.ids.length} processes): ${fmt(idle.percent)} % of a core over ${settings.idleSeconds} s (RSS ${fmt(idle.rssMb, 0)} MB); target < ${TARGETS.idleCpuPercent} %: ${met(idle.percent < TARGETS.idleCpuPercent)}`,
    )
    figures.add({
      what: `idle CPU, ${created.ids.length} RUNNING pods (real processes)`,
      measured: `${fmt(idle.percent)} % of a core`,
      target: `< ${TARGETS.idleCpuPercent} %`,
      met: idle.percent < TARGETS.idleCpuPercent,
    })
    if (settings.idleOnly) {
      await terminate(server, created.ids)
      return
    }
    await podReads(reads, server, created.ids, 'Part 2 (as the admin)', AUTH)
    const doomed = created.ids.slice(0, Math.min(settings.terminate, created.ids.length))
    await terminate(server, doomed)

    const listener = `exec ${process.execPath} -e "require('node:http').createServer((q, s) => s.end('ok')).listen(Number(process.env.RUNPOD_TCP_PORT_8888))"`
    const withPort = await timeToRunning(server, settings.portPods, (i) => ({
      name: `web-${i}`,
      image: 'runpod/base:0.6.2',
      disk: 1,
      ports: ['8888/http'],
      args: listener,
      cpu: { id: 'cpu3c', vcpuCount: 2 },
    }))
    const p50 = percentile(withPort.times, 50)
    console.log(
      `  pods with an http port that listens at once: create -> RUNNING p50 ${fmt(p50, 0)} ms, max ${fmt(Math.max(...withPort.times), 0)} ms (${settings.portPods} pods); target p50 < ${TARGETS.portRunningP50Ms} ms: ${met(p50 < TARGETS.portRunningP50Ms)}`,
    )
    figures.add({
      what: 'create -> RUNNING, a pod with an http port',
      measured: `p50 ${fmt(p50, 0)} ms`,
      target: `p50 < ${TARGETS.portRunningP50Ms} ms`,
      met: p50 < TARGETS.portRunningP50Ms,
    })
    const plain = await timeToRunning(server, 5, (i) => ({
      name: `plain-${i}`,
      image: 'runpod/base:0.6.2',
      disk: 1,
      cpu: { id: 'cpu3c', vcpuCount: 2 },
    }))
    console.log(
      `  pods without ports (RUNNING once up for 1 s): create -> RUNNING p50 ${fmt(percentile(plain.times, 50), 0)} ms`,
    )
    await terminate(server, [...created.ids.slice(doomed.length), ...withPort.ids, ...plain.ids])
  } finally {
    await server.stop()
  }
}

console.log(
  `bench/fleet on ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, Node ${process.version}; load average at start ${loadAverage()}`,
)
try {
  if (settings.part === 'all' || settings.part === 'record') await partRecord()
  if (settings.part === 'all' || settings.part === 'read-growth') await partReadGrowth()
  if (settings.part === 'all' || settings.part === 'process') await partProcess()
} finally {
  figures.print(loadAverage())
}
console.log(`\nload average at the end ${loadAverage()}`)
