import { execFileSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SERVER_ID_SETTING } from '../../src/store/server-id-repo.js'
import { startServe } from '../support/cli.js'
import { json } from '../support/http.js'
import { TEST_ADMIN_KEY } from '../support/platform.js'
import { freshPostgresDatabase, POSTGRES_URL_ENV } from '../support/stores.js'
import { simulatedDockerFleet } from '../support/docker-fleet.js'

/**
 * Two real `podyard serve` processes on one PostgreSQL database, each with a data directory of
 * its own (replicas on two machines), and one Docker engine that both reach: the server id that
 * labels containers is the platform's (in the database), so a pod started through one replica
 * has one container whichever replica leads, across restarts and leadership changes, and its
 * workspace volume is the same one (docs/production.md, docs/runtime.md "The server id").
 * Needs PODYARD_TEST_POSTGRES_URL and PODYARD_TEST_DOCKER=1 (the conformance images).
 */
const postgresUrl = process.env[POSTGRES_URL_ENV]
const enabled = Boolean(postgresUrl) && process.env.PODYARD_TEST_DOCKER === '1'
if (!enabled) {
  console.log(
    `docker replicas skipped: set ${POSTGRES_URL_ENV} and PODYARD_TEST_DOCKER=1 (needs dockerd)`,
  )
}

const IMAGE = 'podyard-conformance/plain:1'
const LEASE_TTL_MS = 1_500
/** Long enough for a new leader's first passes over the pods (it starts with a full one). */
const SETTLE_MS = 3_000

/** A simulated GPU host on this machine's engine: a GPU pod's volume disk is a named volume. */
const FLEET = simulatedDockerFleet()

/** Notes each boot in the volume, then serves it. */
const SERVE_VOLUME =
  'echo "boot $(date +%s%N)" >> /workspace/boots.txt; exec httpd -f -p 8080 -h /workspace'

interface Replica {
  name: string
  dataDir: string
  child: ChildProcess
  url: string
  exited: Promise<number | null>
}

interface PodJson {
  id: string
  status: string
  statusReason: string | null
  runtime: { ports: { private: number; public: number }[] } | null
}

function docker(...args: string[]): string[] {
  return execFileSync('docker', args, { encoding: 'utf8' }).split('\n').filter(Boolean)
}

/** The containers of a workload, whoever labelled them: `<id> <state> <server id>`. */
function containersOf(workloadId: string): { id: string; state: string; server: string }[] {
  return docker(
    'ps',
    '-a',
    '--no-trunc',
    '--filter',
    `label=podyard.workload=${workloadId}`,
    '--format',
    '{{.ID}} {{.State}} {{.Label "podyard.server"}}',
  ).map((line) => {
    const [id, state, server] = line.split(' ')
    return { id: id!, state: state!, server: server! }
  })
}

function volumesOf(workloadId: string): string[] {
  return docker(
    'volume',
    'ls',
    '--filter',
    `label=podyard.workload=${workloadId}`,
    '--format',
    '{{.Name}}',
  )
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe.skipIf(!enabled)('two replicas with data directories of their own, one engine', () => {
  let database: { url: string; drop: () => Promise<void> }
  let fleetDir: string
  const replicas: Replica[] = []
  /** Pods this suite created: their containers and volumes go, whatever happened. */
  const podIds: string[] = []
  /** Every server id seen on a container, for the networks left behind. */
  const serverIds = new Set<string>()

  const start = async (name: string, dataDir: string): Promise<Replica> => {
    const served = await startServe([], {
      PODYARD_STORE_URL: database.url,
      PODYARD_DATA_DIR: dataDir,
      PODYARD_FLEET: path.join(fleetDir, 'fleet.yaml'),
      PODYARD_ADMIN_KEY: TEST_ADMIN_KEY,
      // One key for both, as docs/production.md says for replicas on several machines.
      PODYARD_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
      PODYARD_PORT: '0',
      PODYARD_LOG_LEVEL: 'info',
      PODYARD_CLUSTER_LEASE_TTL_MS: String(LEASE_TTL_MS),
    })
    const replica = { name, dataDir, child: served.child, url: served.url, exited: served.exited }
    replicas.push(replica)
    return replica
  }
  const call = (replica: Replica, p: string, init: { method?: string; json?: unknown } = {}) =>
    fetch(`${replica.url}${p}`, {
      method: init.method ?? 'GET',
      headers: {
        authorization: `Bearer ${TEST_ADMIN_KEY}`,
        ...(init.json === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
    })
  const leads = async (replica: Replica): Promise<boolean> => {
    const text = await (await call(replica, '/metrics')).text()
    const match = /^podyard_cluster_leader\{replica="[^"]+"\} (\d)$/m.exec(text)
    if (!match) throw new Error(`no podyard_cluster_leader in /metrics of ${replica.name}`)
    return match[1] === '1'
  }
  const waitForStatus = async (replica: Replica, id: string, status: string) => {
    const deadline = Date.now() + 30_000
    for (;;) {
      const pod = await json<PodJson>(await call(replica, `/v2/pods/${id}`))
      if (pod.status === status) return pod
      if (Date.now() > deadline)
        throw new Error(`pod ${id} is ${pod.status} (${pod.statusReason}), not ${status}`)
      await sleep(100)
    }
  }
  const boots = async (pod: PodJson) =>
    (await (await fetch(`http://127.0.0.1:${pod.runtime!.ports[0]!.public}/boots.txt`)).text())
      .trim()
      .split('\n')
  const stop = async (replica: Replica, signal: NodeJS.Signals) => {
    replica.child.kill(signal)
    await replica.exited
  }
  /** The one container of the pod, after the replicas had time to act on it. */
  const theContainer = (podId: string) => {
    const containers = containersOf(podId)
    for (const c of containers) serverIds.add(c.server)
    expect(containers, JSON.stringify(containers)).toHaveLength(1)
    return containers[0]!
  }

  beforeAll(async () => {
    database = await freshPostgresDatabase(postgresUrl!)
    fleetDir = mkdtempSync(path.join(tmpdir(), 'podyard-replicas-docker-'))
    writeFileSync(path.join(fleetDir, 'fleet.yaml'), FLEET)
  })

  afterAll(async () => {
    await Promise.all(
      replicas.map(async (r) => {
        if (r.child.exitCode === null && r.child.signalCode === null) await stop(r, 'SIGTERM')
      }),
    )
    for (const id of podIds) {
      const containers = containersOf(id)
      for (const c of containers) serverIds.add(c.server)
      if (containers.length > 0) docker('rm', '-f', ...containers.map((c) => c.id))
      const volumes = volumesOf(id)
      if (volumes.length > 0) docker('volume', 'rm', '-f', ...volumes)
    }
    for (const server of serverIds) {
      const networks = docker('network', 'ls', '-q', '--filter', `label=podyard.server=${server}`)
      if (networks.length > 0) docker('network', 'rm', ...networks)
    }
    for (const r of replicas) rmSync(r.dataDir, { recursive: true, force: true })
    if (fleetDir) rmSync(fleetDir, { recursive: true, force: true })
    await database?.drop()
  })

  it('keeps one container per pod and its volume across leadership changes and restarts', async () => {
    const dirs = [0, 1].map(() => mkdtempSync(path.join(tmpdir(), 'podyard-replica-data-')))
    // Both at once on the empty database, as an orchestrator starts them: one id wins.
    const started = await Promise.all([start('r1', dirs[0]!), start('r2', dirs[1]!)])
    const leading = await Promise.all(started.map(leads))
    let [leader, other] = leading[0] ? started : [started[1]!, started[0]!]
    expect(await leads(other!)).toBe(false)

    // Created through the replica that does not lead; the leader starts it.
    const created = await json<PodJson>(
      await call(other!, '/v2/pods', {
        method: 'POST',
        json: {
          name: 'gpu-replicas',
          image: IMAGE,
          gpu: { id: 'NVIDIA L4', count: 1 },
          ports: ['8080/http'],
          args: SERVE_VOLUME,
          mounts: { persistent: { size: 10, path: '/workspace' } },
        },
      }),
      201,
    )
    podIds.push(created.id)
    const running = await waitForStatus(other!, created.id, 'RUNNING')
    expect(await boots(running)).toHaveLength(1)
    const first = theContainer(created.id)
    expect(first.state).toBe('running')
    const volumes = volumesOf(created.id)
    expect(volumes).toHaveLength(1)
    // The id that labels it is the platform's, in the database.
    const client = new pg.Client({ connectionString: database.url })
    await client.connect()
    const stored = await client
      .query<{ value: string }>('select value from settings where key = $1', [SERVER_ID_SETTING])
      .finally(() => client.end())
    expect(stored.rows.map((r) => r.value)).toEqual([first.server])
    expect(volumes).toEqual([`podyard-${first.server}-${created.id}-workspace`])
    // No data directory keeps an id of its own.
    for (const dir of dirs) expect(existsSync(path.join(dir, 'server-id'))).toBe(false)

    // The leader dies: the other one takes over and adopts the container, not starting another.
    await stop(leader!, 'SIGKILL')
    await expect.poll(() => leads(other!), { timeout: 10_000, interval: 100 }).toBe(true)
    await sleep(SETTLE_MS)
    expect(theContainer(created.id)).toEqual(first)
    expect((await waitForStatus(other!, created.id, 'RUNNING')).status).toBe('RUNNING')
    // And it acts on that container: stopping the pod stops it.
    await json(
      await call(other!, `/v2/pods/${created.id}/action`, {
        method: 'POST',
        json: { action: 'stop' },
      }),
    )
    await waitForStatus(other!, created.id, 'EXITED')
    await expect
      .poll(() => containersOf(created.id), { timeout: 15_000 })
      .toEqual([{ ...first, state: 'exited' }])

    // The killed replica comes back (API only now) and starts the pod again: a new container
    // with the same volume, which kept the first boot.
    const back = await start('r1-again', leader!.dataDir)
    ;[leader, other] = [other!, back]
    expect(await leads(other)).toBe(false)
    await json(
      await call(other, `/v2/pods/${created.id}/action`, {
        method: 'POST',
        json: { action: 'start' },
      }),
    )
    const again = await waitForStatus(other, created.id, 'RUNNING')
    expect(await boots(again)).toHaveLength(2)
    const second = theContainer(created.id)
    expect(second).toMatchObject({ state: 'running', server: first.server })
    expect(second.id).not.toBe(first.id)
    expect(volumesOf(created.id)).toEqual(volumes)

    // A clean handover (SIGTERM), then the leader's restart: still that one container.
    await stop(leader, 'SIGTERM')
    await expect.poll(() => leads(other), { timeout: 10_000, interval: 100 }).toBe(true)
    const restarted = await start('r2-again', dirs[1]!)
    await sleep(SETTLE_MS)
    expect(theContainer(created.id)).toEqual(second)
    expect((await waitForStatus(restarted, created.id, 'RUNNING')).status).toBe('RUNNING')
    expect(await boots(again)).toHaveLength(2)

    // Terminated through the replica that does not lead: nothing is left behind.
    expect((await call(restarted, `/v2/pods/${created.id}`, { method: 'DELETE' })).status).toBe(204)
    await expect
      .poll(() => [...containersOf(created.id), ...volumesOf(created.id)], { timeout: 15_000 })
      .toEqual([])
  }, 150_000)
})
