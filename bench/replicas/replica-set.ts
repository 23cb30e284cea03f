/**
 * Replicas for bench/replicas (bench/README.md; docs/production.md, "Several replicas"): `count`
 * `podyard serve` child processes on one fresh PostgreSQL database, started one after the
 * other (so the first takes the leader lease), sharing one data directory as replicas on one
 * machine do, each with its own log. Two kinds:
 *
 * - `record`: bench/fleet's server (bench/fleet/fleet-server.ts through bench/bench-server.ts)
 *   on a simulated fleet whose hosts run under the recording driver, REST quotas lifted;
 * - `serve`: bench/jobs' server (`bin/podyard.js serve` of the built dist/, through
 *   bench/jobs/bench-server.ts) with the job API limits lifted by its config file.
 *
 * Also what the bench reads of them: which one leads (`podyard_cluster_leader` in /metrics),
 * each one's CPU, and the CPU of the PostgreSQL processes of this machine.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { startBenchServer } from '../bench-server.js'
import {
  freshDatabase,
  request,
  sleep,
  startServer,
  type BenchServer,
} from '../jobs/bench-server.js'

export type ReplicaKind = 'record' | 'serve'

export interface Replica {
  /** 1, 2, 3: the order they started in. */
  number: number
  /** Its server as bench/jobs' helpers take it (serverErrors reads its url and log). */
  server: BenchServer
  pid: number
}

export interface ReplicaSet {
  replicas: Replica[]
  /** The replica that runs the reconcile loops. */
  leader: Replica
  /** Its id, as `podyard_cluster_leader{replica=...}` names it (`<host>-<pid>-<random>`). */
  leaderId: string
  databaseUrl: string
  /** The shared data directory (the fleet file is in it). */
  dataDir: string
  /** Stops every replica (SIGTERM, waited for), drops the database, removes the directories. */
  close(): Promise<void>
}

export interface ReplicaSetOptions {
  kind: ReplicaKind
  count: number
  /** A PostgreSQL URL whose role may create databases. */
  adminUrl: string
  /** The simulated fleet (`record` only), written to `<dataDir>/fleet.json`. */
  fleet?: unknown
  /** PODYARD_LOG_LEVEL of `serve` replicas (`record` ones log warnings only). */
  logLevel: string
  /** Keep the data directories (logs) after close(). */
  keep: boolean
}

/** How long a replica set may take to name its one leader. */
const LEADER_WAIT_MS = 30_000

/** Starts the replicas; on a failure, stops those started and drops the database. */
export async function startReplicaSet(options: ReplicaSetOptions): Promise<ReplicaSet> {
  const database = await freshDatabase(options.adminUrl)
  const dataDir = mkdtempSync(path.join(tmpdir(), `podyard-bench-replicas-${options.kind}-`))
  const replicas: Replica[] = []
  const logDirs: string[] = []
  const close = async () => {
    try {
      await Promise.all(replicas.map((replica) => replica.server.stop()))
      await database.drop()
    } finally {
      if (!options.keep) {
        for (const dir of [dataDir, ...logDirs]) rmSync(dir, { recursive: true, force: true })
      }
    }
  }
  try {
    const fleetFile = path.join(dataDir, 'fleet.json')
    if (options.fleet !== undefined) writeFileSync(fleetFile, JSON.stringify(options.fleet))
    // Replicas on one machine share the data directory (docs/production.md): its encryption
    // key, which the endpoints' worker keys are derived with, is the same on every replica.
    const shared = { PODYARD_DATA_DIR: dataDir, PODYARD_STORE_URL: database.url }
    for (let number = 1; number <= options.count; number++) {
      const server =
        options.kind === 'record'
          ? await startRecordReplica(number, database.url, {
              env: { ...shared, PODYARD_FLEET: fleetFile },
              keep: options.keep,
            })
          : await startServeReplica(number, database.url, shared, options.logLevel)
      logDirs.push(server.dataDir)
      replicas.push({ number, server, pid: server.child.pid! })
    }
    const { leader, leaderId } = await findLeader(replicas)
    return { replicas, leader, leaderId, databaseUrl: database.url, dataDir, close }
  } catch (error) {
    await close()
    throw error
  }
}

/** bench/fleet's server with `--record`; its own directory holds its log only. */
async function startRecordReplica(
  number: number,
  databaseUrl: string,
  options: { env: Record<string, string>; keep: boolean },
): Promise<BenchServer> {
  const server = await startBenchServer({
    name: `replica-${number}`,
    args: ['--record'],
    env: () => ({ ...options.env, PODYARD_SANDBOX: 'none' }),
    keep: options.keep,
  })
  // The shape bench/jobs' helpers take; stop() removes the log's directory, close() the rest.
  return {
    child: server.child,
    url: server.url,
    dataDir: server.dataDir,
    storeUrl: databaseUrl,
    stop: server.stop,
  }
}

/** bench/jobs' `podyard serve`; its own directory holds its log and config file. */
async function startServeReplica(
  number: number,
  databaseUrl: string,
  env: Record<string, string>,
  logLevel: string,
): Promise<BenchServer> {
  const logDir = mkdtempSync(path.join(tmpdir(), `podyard-bench-replica-${number}-`))
  try {
    return await startServer({ dataDir: logDir, storeUrl: databaseUrl, logLevel, env })
  } catch (error) {
    rmSync(logDir, { recursive: true, force: true })
    throw error
  }
}

/** Whether a replica leads, and its id, from its /metrics. */
async function leads(replica: Replica): Promise<{ id: string; leads: boolean } | undefined> {
  const text = (await request('GET', `${replica.server.url}/metrics`)).text
  const match = /^podyard_cluster_leader\{replica="([^"]+)"\} (\d)$/m.exec(text)
  return match ? { id: match[1]!, leads: match[2] === '1' } : undefined
}

/** Waits (bounded) until exactly one replica says it leads. */
async function findLeader(replicas: Replica[]): Promise<{ leader: Replica; leaderId: string }> {
  const deadline = Date.now() + LEADER_WAIT_MS
  for (;;) {
    const answers = await Promise.all(replicas.map(leads))
    const leading = replicas.filter((_, i) => answers[i]?.leads)
    if (leading.length === 1) {
      const leader = leading[0]!
      return { leader, leaderId: answers[replicas.indexOf(leader)]!.id }
    }
    if (Date.now() > deadline) {
      throw new Error(
        `${leading.length} of ${replicas.length} replicas lead after ${LEADER_WAIT_MS} ms`,
      )
    }
    await sleep(200)
  }
}

/** A replica that does not lead, where there is one: the bench's own polls go there. */
export function observerOf(set: ReplicaSet): Replica {
  return set.replicas.find((replica) => replica !== set.leader) ?? set.leader
}

/** A client backend's process title: `postgres: [<cluster>: ]<user> <database> <client> ...`. */
const BACKEND_TITLE = /^postgres: (?:\S+: )?\S+ (\S+) (?:\S+\(\d+\)|\[local\])/

/**
 * CPU seconds (user + system) the PostgreSQL processes of this machine have used so far for
 * `database`, and how many there are: the backends of its connections (from their process
 * titles) and the server's own processes (the postmaster, WAL writer, checkpointer,
 * autovacuum...), which work for every database, but not other databases' backends (the
 * server may be shared). A backend that ends between two reads takes its CPU with it; the
 * replicas' pooled connections last. 0 processes: the database is on another machine, or its
 * processes are not readable.
 */
export function postgresCpu(database: string): { seconds: number; processes: number } {
  let seconds = 0
  let processes = 0
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== 'postgres') continue
      const title = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ')
      const backendOf = BACKEND_TITLE.exec(title)?.[1]
      if (backendOf !== undefined && backendOf !== database) continue
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      seconds += (Number(fields[11]) + Number(fields[12])) / 100
      processes += 1
    } catch {
      // gone, or not ours to read
    }
  }
  return { seconds, processes }
}
