/**
 * bench/replicas: how podyard scales on PostgreSQL with 1, 2 and 3 replicas (bench/README.md;
 * docs/production.md, "Several replicas"). For each replica count of `--replicas` and each
 * measurement, a fresh database of the same PostgreSQL (PODYARD_BENCH_POSTGRES_URL or
 * PODYARD_TEST_POSTGRES_URL; without one it prints "not measured" and exits 0) and that many
 * replicas, child processes started one after the other (the first takes the leader lease)
 * sharing one data directory (replica-set.ts):
 *
 * - `pods`: bench/fleet's part 1 spread over the replicas: a `--hosts` simulated fleet whose
 *   hosts run under the recording driver; `--pod-warmup` pods per replica first (as the admin,
 *   not counted, all RUNNING before the measurement), then `--pods` pods created by a member
 *   account from `--creators` clients, round-robin over the replicas (pod i through replica
 *   i mod n): creates/s, and how long after the last create every pod is RUNNING (the leader's
 *   pod lifecycle starts them all, whichever replica created them).
 * - `jobs`: bench/jobs' throughput part spread over the replicas: one endpoint without workers
 *   of its own, `--worker-processes` TS-SDK worker processes of `--concurrency` per replica
 *   (bench/jobs/throughput.ts' startWorkers, worker-key auth), each taking from its replica;
 *   `--warmup` jobs per replica not counted; then `--jobs` no-op `/run` from `--submitters`
 *   keep-alive loops, round-robin over the replicas: jobs/s from the first submit to the last
 *   completion stored.
 *
 * Each round prints which replica leads, each replica's share of the requests and its CPU (the
 * leader's includes the reconcile loops), and the CPU per operation of the replicas together
 * and of the PostgreSQL processes of this machine. The tables at the end give, per replica
 * count, the median round's rate, its ratio to one replica and the leader's share of the
 * replicas' CPU. `--rounds` rounds go through the replica counts in turn.
 *
 * Options: --replicas=1,2,3 --measure=pods,jobs --hosts=2000 --pods=2000 --pod-warmup=300
 * --creators=16 --jobs=10000 --warmup=2000 --submitters=32 --worker-processes=1
 * --concurrency=64 --rounds=1 --max-seconds=300 (each phase and wait) --log-level=info (the job
 * replicas'; the pod replicas log warnings only) --keep (the replicas' data directories and logs)
 */
import { cpus } from 'node:os'
import pg from 'pg'
import {
  ADMIN_KEY,
  agent,
  cpuSeconds,
  createEndpoint,
  flag,
  json,
  loadAverage,
  now,
  option,
  sleep,
  workerKeyOf,
} from '../jobs/bench-server.js'
import { fleetFile, measuredPod } from '../fleet/fleet-shape.js'
import { RawHttpConnection } from '../jobs/raw-http.js'
import { serverErrors, startWorkers } from '../jobs/throughput.js'
import { observerOf, postgresCpu, startReplicaSet, type ReplicaSet } from './replica-set.js'
import {
  describeReplicas,
  fmt,
  percentOfCore,
  printShares,
  printTable,
  sharesOf,
  type Round,
} from './report.js'

const postgresAdminUrl =
  process.env.PODYARD_BENCH_POSTGRES_URL ?? process.env.PODYARD_TEST_POSTGRES_URL

const settings = {
  replicas: option('replicas', '1,2,3').split(',').map(Number),
  measure: new Set(option('measure', 'pods,jobs').split(',')),
  hosts: Number(option('hosts', '2000')),
  pods: Number(option('pods', '2000')),
  /** Pods created through each replica before the measured ones, not counted (JIT warm-up). */
  podWarmup: Number(option('pod-warmup', '300')),
  creators: Number(option('creators', '16')),
  jobs: Number(option('jobs', '10000')),
  /** Jobs submitted through each replica before the measured ones, not counted. */
  warmup: Number(option('warmup', '2000')),
  submitters: Number(option('submitters', '32')),
  /** Worker processes per replica. */
  workerProcesses: Number(option('worker-processes', '1')),
  concurrency: Number(option('concurrency', '64')),
  rounds: Number(option('rounds', '1')),
  maxSeconds: Number(option('max-seconds', '300')),
  logLevel: option('log-level', 'info'),
  keep: flag('keep'),
}

if (settings.replicas.some((count) => !Number.isInteger(count) || count < 1)) {
  throw new Error(`--replicas wants counts of replicas, e.g. 1,2,3: ${option('replicas', '')}`)
}

const ADMIN_JSON = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' }

/** CPU of each replica and of PostgreSQL from now on; call the result to read the window. */
function cpuWindow(set: ReplicaSet) {
  const before = set.replicas.map((replica) => cpuSeconds(replica.pid))
  const database = new URL(set.databaseUrl).pathname.slice(1)
  const postgresBefore = postgresCpu(database)
  const started = now()
  return () => {
    const postgres = postgresCpu(database)
    return {
      seconds: (now() - started) / 1000,
      replicas: set.replicas.map((replica, i) => cpuSeconds(replica.pid) - before[i]!),
      postgres: postgres.seconds - postgresBefore.seconds,
      postgresProcesses: postgres.processes,
    }
  }
}

/**
 * `count` requests from `clients` loops, request i through replica i mod n, as a round-robin
 * load balancer sends them (each loop holds a keep-alive connection to every replica); stops
 * early at `--max-seconds`. `send` makes request i on the connection given and throws to end
 * the run. Returns how many went through each replica and when the last one answered.
 */
async function roundRobin(
  set: ReplicaSet,
  clients: number,
  count: number,
  send: (connection: RawHttpConnection, i: number) => Promise<void>,
): Promise<{ sent: number; perReplica: number[]; lastAt: number }> {
  const n = set.replicas.length
  const connections = Array.from({ length: clients }, () =>
    set.replicas.map((replica) => new RawHttpConnection(new URL(replica.server.url))),
  )
  const perReplica = set.replicas.map(() => 0)
  const deadline = now() + settings.maxSeconds * 1000
  let next = 0
  let sent = 0
  let lastAt = now()
  try {
    await Promise.all(
      connections.map(async (mine) => {
        while (next < count && now() < deadline) {
          const i = next++
          await send(mine[i % n]!, i)
          perReplica[i % n]! += 1
          sent += 1
          lastAt = now()
        }
      }),
    )
  } finally {
    for (const connection of connections.flat()) connection.close()
  }
  if (sent < count) console.log(`  (stopped after ${settings.maxSeconds} s: ${sent} of ${count})`)
  return { sent, perReplica, lastAt }
}

/** Pods of the key's account in the given statuses, counted on the observer. */
async function countPods(set: ReplicaSet, statuses: string, apiKey: string): Promise<number> {
  const url = `${observerOf(set).server.url}/v2/pods?status=${statuses}&includeClusterPods=true`
  const answer = await json<{ pods: unknown[] }>('GET', url, undefined, 200, apiKey)
  return answer.pods.length
}

/** Waits (bounded) until none of the key's pods is PROVISIONING or STARTING; those left. */
async function waitRunning(set: ReplicaSet, apiKey: string): Promise<number> {
  const deadline = now() + settings.maxSeconds * 1000
  for (;;) {
    const pending = await countPods(set, 'PROVISIONING,STARTING', apiKey)
    if (pending === 0 || now() > deadline) return pending
    await sleep(100)
  }
}

/** Creates `count` pods round-robin; counts the answers other than 201. */
async function createPods(
  set: ReplicaSet,
  count: number,
  bodyOf: (i: number) => unknown,
  headers: Record<string, string>,
) {
  let failures = 0
  const firstFailures: string[] = []
  const started = now()
  const result = await roundRobin(set, settings.creators, count, async (connection, i) => {
    const response = await connection.request(
      'POST',
      '/v2/pods',
      JSON.stringify(bodyOf(i)),
      headers,
    )
    if (response.status === 201) return
    failures += 1
    if (firstFailures.length < 3)
      firstFailures.push(`${response.status}: ${response.body.slice(0, 200)}`)
  })
  if (failures > 0) console.log(`  ${failures} creates failed, e.g. ${firstFailures.join('; ')}`)
  return {
    ...result,
    failures,
    perSecond: (result.sent - failures) / ((result.lastAt - started) / 1000),
  }
}

async function podRound(replicas: number): Promise<Round> {
  const set = await startReplicaSet({
    kind: 'record',
    count: replicas,
    adminUrl: postgresAdminUrl!,
    fleet: fleetFile(settings.hosts, { vcpus: 32, memoryGb: 128, diskGb: 2000 }),
    logLevel: settings.logLevel,
    keep: settings.keep,
  })
  try {
    describeReplicas(set)
    const warmup = settings.podWarmup * replicas
    await createPods(
      set,
      warmup,
      (i) => ({
        name: `warmup-${i}`,
        image: 'runpod/base:0.6.2',
        disk: 10,
        cpu: { id: 'cpu3g', vcpuCount: 2 },
      }),
      ADMIN_JSON,
    )
    const warmPending = await waitRunning(set, ADMIN_KEY)
    if (warmPending > 0) console.log(`  (${warmPending} warm-up pods not RUNNING in time)`)
    const { apiKey } = await json<{ apiKey: { key: string } }>(
      'POST',
      `${set.leader.server.url}/v2/admin/accounts`,
      { email: 'bench-member@example.com' },
      201,
    )
    const member = { authorization: `Bearer ${apiKey.key}`, 'content-type': 'application/json' }
    const window = cpuWindow(set)
    const created = await createPods(set, settings.pods, measuredPod, member)
    const pending = await waitRunning(set, apiKey.key)
    const runningAfter = (now() - created.lastAt) / 1000
    const cpu = window()
    const reads = await allocationReads(set.databaseUrl)
    const readsPerCreate = reads / (warmup + created.sent)
    const round: Round = {
      replicas,
      leaderNumber: set.leader.number,
      count: created.sent - created.failures,
      perSecond: created.perSecond,
      seconds: cpu.seconds,
      shares: sharesOf(set, created.perReplica, cpu.replicas),
      postgresCpuSeconds: cpu.postgres,
      postgresProcesses: cpu.postgresProcesses,
      extras: [
        pending > 0 ? `not all (${pending} left)` : fmt(runningAfter, 2),
        fmt(readsPerCreate, 2),
      ],
      errors: created.failures,
    }
    console.log(
      `  creates: ${fmt(round.perSecond)}/s over ${round.count} pods from ${settings.creators} ` +
        `clients round-robin, after ${warmup} not counted; every pod RUNNING ` +
        (pending > 0
          ? `NOT within ${settings.maxSeconds} s (${pending} left)`
          : `${fmt(runningAfter, 2)} s after the last create (the leader starts them)`),
    )
    printShares(round, 'creates')
    console.log(
      `  the allocations table read in full ${reads} times, ${fmt(readsPerCreate, 2)} per create ` +
        `(warm-up included): each replica's index of free capacity is built again from it when ` +
        `another replica placed since (pg_stat_user_tables, after ${STATS_DELAY_MS / 1000} s)`,
    )
    return round
  } finally {
    await set.close()
  }
}

/** `count` no-op jobs through /run, round-robin over the replicas; the /run rate. */
async function submitJobs(
  set: ReplicaSet,
  endpointId: string,
  count: number,
): Promise<{ perReplica: number[]; perSecond: number }> {
  const path = `/v2/${endpointId}/run`
  const body = JSON.stringify({ input: {} })
  const started = now()
  const result = await roundRobin(set, settings.submitters, count, async (connection) => {
    const response = await connection.request('POST', path, body, ADMIN_JSON)
    if (response.status !== 200) {
      throw new Error(`POST /run answered ${response.status}: ${response.body.slice(0, 300)}`)
    }
  })
  if (result.sent < count) throw new Error(`only ${result.sent} of ${count} jobs submitted in time`)
  return { perReplica: result.perReplica, perSecond: count / ((result.lastAt - started) / 1000) }
}

/** Waits (bounded) until `/health` on the observer counts `total` of the endpoint's jobs completed. */
async function waitCompleted(set: ReplicaSet, endpointId: string, total: number): Promise<void> {
  const deadline = now() + settings.maxSeconds * 1000
  const url = `${observerOf(set).server.url}/v2/${endpointId}/health`
  for (;;) {
    const health = await json<{ jobs: { completed: number; failed: number } }>('GET', url)
    if (health.jobs.failed > 0) throw new Error(`${health.jobs.failed} jobs failed`)
    if (health.jobs.completed >= total) return
    if (now() > deadline) {
      throw new Error(
        `${health.jobs.completed} of ${total} jobs completed after ${settings.maxSeconds} s`,
      )
    }
    await sleep(100)
  }
}

/** One query on its own connection; its rows. */
async function queryOnce<Row extends object>(
  databaseUrl: string,
  text: string,
  values: unknown[] = [],
): Promise<Row[]> {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    return (await client.query<Row>(text, values)).rows
  } finally {
    await client.end()
  }
}

/** When the endpoint's last job completed, as the store says (ms since the epoch). */
async function lastCompletion(databaseUrl: string, endpointId: string): Promise<number> {
  const [row] = await queryOnce<{ last: Date | string | null }>(
    databaseUrl,
    'select max(completed_at) as last from jobs where endpoint_id = $1',
    [endpointId],
  )
  return row?.last instanceof Date ? row.last.getTime() : Date.parse(String(row?.last))
}

/** How long PostgreSQL may keep an idle backend's table counts before it publishes them. */
const STATS_DELAY_MS = 11_000

/**
 * Full reads (sequential scans) of the allocations table so far, from pg_stat_user_tables once
 * every backend has published its counts: a replica reads every allocation when it builds its
 * index of free capacity, at its first placement and whenever another replica (or a tool)
 * changed the allocations since (src/store/allocation-ledger.ts).
 */
async function allocationReads(databaseUrl: string): Promise<number> {
  await sleep(STATS_DELAY_MS)
  const [row] = await queryOnce<{ seq_scan: string }>(
    databaseUrl,
    "select seq_scan from pg_stat_user_tables where relname = 'allocations'",
  )
  return Number(row?.seq_scan ?? Number.NaN)
}

type Workers = Awaited<ReturnType<typeof startWorkers>>

async function jobRound(replicas: number): Promise<Round> {
  const set = await startReplicaSet({
    kind: 'serve',
    count: replicas,
    adminUrl: postgresAdminUrl!,
    logLevel: settings.logLevel,
    keep: settings.keep,
  })
  const workers: Workers[] = []
  try {
    describeReplicas(set)
    const first = set.replicas[0]!.server
    const endpointId = await createEndpoint(first, 'bench-replicas')
    const workerKey = await workerKeyOf(first, endpointId)
    for (const replica of set.replicas) {
      const endpointUrl = `${replica.server.url}/v2/${endpointId}`
      workers.push(
        await startWorkers(
          { inProcessWorkers: false },
          endpointUrl,
          workerKey,
          settings.workerProcesses,
          settings.concurrency,
        ),
      )
    }
    await sleep(300)
    const warmup = settings.warmup * replicas
    if (warmup > 0) {
      await submitJobs(set, endpointId, warmup)
      await waitCompleted(set, endpointId, warmup)
      await sleep(300)
    }
    const workerPids = workers.flatMap((w) => w.pids)
    const workerCpuBefore = workerPids.map(cpuSeconds)
    const window = cpuWindow(set)
    const start = now()
    const submitted = await submitJobs(set, endpointId, settings.jobs)
    await waitCompleted(set, endpointId, warmup + settings.jobs)
    const elapsed = ((await lastCompletion(set.databaseUrl, endpointId)) - start) / 1000
    const cpu = window()
    const workerCpu = workerPids.reduce(
      (sum, pid, i) => sum + cpuSeconds(pid) - workerCpuBefore[i]!,
      0,
    )
    const errors = await Promise.all(set.replicas.map((replica) => serverErrors(replica.server)))
    const round: Round = {
      replicas,
      leaderNumber: set.leader.number,
      count: settings.jobs,
      perSecond: settings.jobs / elapsed,
      seconds: cpu.seconds,
      shares: sharesOf(set, submitted.perReplica, cpu.replicas),
      postgresCpuSeconds: cpu.postgres,
      postgresProcesses: cpu.postgresProcesses,
      extras: [fmt(submitted.perSecond)],
      errors: errors.reduce((sum, e) => sum + e.errors5xx + e.deadlocks, 0),
    }
    console.log(
      `  end to end: ${fmt(round.perSecond)} jobs/s (first submit to last completion ` +
        `${fmt(elapsed, 2)} s; ${settings.submitters} submitters round-robin, ` +
        `${settings.workerProcesses} x concurrency ${settings.concurrency} workers per replica, ` +
        `after ${warmup} not counted); submitting alone ${fmt(submitted.perSecond)} /run per s`,
    )
    printShares(round, 'jobs')
    console.log(
      `  workers ${percentOfCore(workerCpu, round.seconds)} of a core together; server errors: ` +
        errors.map((e, i) => `${i + 1}: ${e.errors5xx} 5xx, ${e.deadlocks} deadlocks`).join('; '),
    )
    return round
  } finally {
    try {
      for (const worker of workers) await worker.stop()
    } finally {
      await set.close()
    }
  }
}

async function main(): Promise<void> {
  console.log(
    `bench/replicas on ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'}), Node ` +
      `${process.version}; replicas ${settings.replicas.join(', ')}; load average ${loadAverage()}`,
  )
  if (!postgresAdminUrl) {
    console.log(
      'not measured: replicas share a PostgreSQL database; set PODYARD_BENCH_POSTGRES_URL (or ' +
        'PODYARD_TEST_POSTGRES_URL) to a server whose role may create databases',
    )
    return
  }
  const most = Math.max(...settings.replicas)
  if (cpus().length < most + 2) {
    console.log(
      `note: ${cpus().length} cores for up to ${most} replicas, their workers, PostgreSQL and the ` +
        'bench: the ratios say what replicas cost on this machine more than what they gain',
    )
  }
  const pods = new Map<number, Round[]>()
  const jobs = new Map<number, Round[]>()
  try {
    for (let round = 1; round <= settings.rounds; round++) {
      for (const count of settings.replicas) {
        if (settings.measure.has('pods')) {
          console.log(`\n== pod creates, ${count} replica(s), round ${round} of ${settings.rounds}`)
          pods.set(count, [...(pods.get(count) ?? []), await podRound(count)])
        }
        if (settings.measure.has('jobs')) {
          console.log(`\n== jobs, ${count} replica(s), round ${round} of ${settings.rounds}`)
          jobs.set(count, [...(jobs.get(count) ?? []), await jobRound(count)])
        }
      }
    }
  } finally {
    agent.destroy()
  }
  printTable('pod creates', 'creates/s', pods, [
    'every pod RUNNING, s after the last create',
    'full reads of the allocations per create',
  ])
  printTable('/run -> TS worker -> done', 'jobs/s', jobs, ['/run per s, submitting alone'])
  console.log(`\nload average at the end ${loadAverage()}`)
}

await main()
