import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Config } from '../../src/config/schema.js'
import { startPlatform, type Platform } from '../../src/platform.js'
import { json } from '../support/http.js'
import {
  holdRig,
  rigFleetYaml,
  localDocker,
  multiHostEnabled,
  readRigLayout,
  rigUnavailableReason,
  startEngine,
  stopEngine,
  type RigHost,
  type RigLayout,
} from '../support/multi-host-rig.js'
import { until as untilDone } from '../support/until.js'
import { callPlatform, stopPlatform, testConfig, type CallInit } from '../support/platform.js'
import { restartableStores } from '../support/restartable-platform.js'
import { freshPostgresDatabase, POSTGRES_URL_ENV } from '../support/stores.js'
import { loadWorkerImage, WORKER_IMAGE } from '../support/worker-image.js'

/**
 * Serverless workers as containers on the multi-host rig's three engines (gpu-node-1 and -2
 * over SSH, gpu-node-3 over TCP+TLS; test/support/multi-host-rig.sh), through the HTTP API:
 * the test worker image (node and the TypeScript worker SDK) serving an endpoint's jobs from
 * two hosts, adopted after a server restart, replaced when its host's engine is killed (its
 * jobs completed exactly once, never run by two workers at once), and moved off a draining host.
 * The server listens on the rig bridge's address, which the hosts reach. Opt-in with
 * PODYARD_TEST_MULTIHOST=1; once asked to run, a rig that does not answer fails the suite.
 */
const enabled = multiHostEnabled()
if (!enabled)
  console.log('multi-host worker tests skipped: set PODYARD_TEST_MULTIHOST=1 (needs the rig up)')

interface WorkerJson {
  id: string
  status: string
  reason: string | null
}

interface JobJson {
  id: string
  status: string
  workerId?: string
  output?: { worker: string; volume: string | null }
}

interface HostJson {
  id: string
  state: string
}

/** Rig operations (engines, SSH sessions) are slow: a longer wait than the default. */
const until = <T>(
  what: string,
  read: () => Promise<T>,
  done: (v: T) => boolean,
  timeoutMs = 90_000,
) => untilDone(what, read, done, timeoutMs)

/** A port free now on `address`, so that the server can listen on the same one after a restart. */
function freePortOn(address: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, address, () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
}

/** One run of a job as the worker noted it in the shared volume: `<ms> <worker> <what> <job>`. */
interface Run {
  at: number
  worker: string
  what: 'start' | 'end' | 'abort'
  jobId: string
}

describe.runIf(enabled).each(restartableStores())(
  'container workers on three hosts (%s)',
  (store) => {
    let layout: RigLayout
    let dir: string
    let volumeRoot: string
    let port: number
    let database: { url: string; drop(): Promise<void> } | undefined
    let platform: Platform | undefined
    let release: (() => void) | undefined
    let endpointId: string
    let volumeId: string
    const call = (p: string, init?: CallInit) => callPlatform(platform!.url, p, init)
    const start = async (overrides: Partial<Config> = {}) => {
      platform = await startPlatform(
        testConfig(dir, {
          fleet: path.join(dir, 'fleet.yaml'),
          host: layout.bridge.address,
          port,
          ...(database ? { storeUrl: database.url } : {}),
          hosts: { probeIntervalMs: 500, probeTimeoutMs: 8_000, failuresBeforeDown: 2 },
          workers: { pingIntervalMs: 2_000, stopGraceMs: 5_000 },
          ...overrides,
        }),
        { logger: pino({ level: 'silent' }) },
      )
    }
    const hosts = async () =>
      (await json<{ hosts: HostJson[] }>(await call('/v2/admin/hosts'))).hosts
    const allUp = () => until('hosts UP', hosts, (l) => l.every((h) => h.state === 'UP'))
    const workers = async (id = endpointId) =>
      (await json<{ workers: WorkerJson[] }>(await call(`/v2/serverless/${id}/workers`))).workers
    const ready = (list: WorkerJson[]) => list.filter((w) => ['IDLE', 'RUNNING'].includes(w.status))
    const job = async (id: string) => json<JobJson>(await call(`/v2/${endpointId}/status/${id}`))
    const submit = async (input: Record<string, unknown>) =>
      (
        await json<{ id: string }>(
          await call(`/v2/${endpointId}/run`, { method: 'POST', json: { input } }),
        )
      ).id
    const allCompleted = (ids: string[]) =>
      until(
        `jobs ${ids.join(', ')} COMPLETED`,
        () => Promise.all(ids.map(job)),
        (jobs) => jobs.every((j) => j.status === 'COMPLETED'),
        120_000,
      )
    /** The rig host whose engine runs the worker's container, if any. */
    const hostOf = async (workerId: string): Promise<RigHost | undefined> => {
      for (const host of layout.hosts) {
        const found = await localDocker(host)
          .listContainers({ filters: { label: [`podyard.workload=${workerId}`] } })
          .catch(() => [])
        if (found.length > 0) return host
      }
      return undefined
    }
    const containerOf = async (host: RigHost, workerId: string) =>
      (
        await localDocker(host).listContainers({
          all: true,
          filters: { label: [`podyard.workload=${workerId}`] },
        })
      )[0]
    const runs = (): Run[] => {
      let text = ''
      try {
        text = readFileSync(path.join(volumeRoot, volumeId, 'runs.log'), 'utf8')
      } catch {
        return []
      }
      return text
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => {
          const [at, worker, what, jobId] = line.split(' ')
          return { at: Number(at), worker: worker!, what: what as Run['what'], jobId: jobId! }
        })
    }
    /** Each job ran to its end exactly once, by the worker its result names. */
    const completedOnce = async (ids: string[]) => {
      const done = await allCompleted(ids)
      const log = runs()
      for (const finished of done) {
        const ends = log.filter((r) => r.jobId === finished.id && r.what === 'end')
        expect(
          ends.map((r) => r.worker),
          finished.id,
        ).toEqual([finished.output!.worker])
        expect(finished.workerId).toBe(finished.output!.worker)
      }
      return done
    }

    beforeAll(async () => {
      release = await holdRig()
      const reason = await rigUnavailableReason()
      if (reason) throw new Error(`PODYARD_TEST_MULTIHOST=1 but the rig is not usable: ${reason}`)
      layout = readRigLayout()
      // Every engine gets the image from this machine (the engines reach no registry).
      for (const host of layout.hosts) await loadWorkerImage(localDocker(host))
      dir = mkdtempSync(path.join(tmpdir(), 'podyard-fleet-workers-'))
      volumeRoot = path.join(dir, 'eu-ro-1-shared')
      mkdirSync(path.join(dir, '.podyard'))
      writeFileSync(path.join(dir, 'fleet.yaml'), rigFleetYaml(layout, volumeRoot))
      port = await freePortOn(layout.bridge.address)
      if (store === 'postgres')
        database = await freshPostgresDatabase(process.env[POSTGRES_URL_ENV]!)
    }, 1_080_000)

    afterAll(async () => {
      try {
        // Every engine answers again before the workers' containers are removed through it.
        if (layout) {
          for (const host of layout.hosts) await startEngine(layout, host).catch(() => undefined)
        }
        if (platform) await stopPlatform(platform)
        await database?.drop()
        if (dir) rmSync(dir, { recursive: true, force: true })
      } finally {
        release?.()
      }
    }, 180_000)

    it('starts no worker on a remote host with a loopback job API address, and says why', async () => {
      await start({ host: '127.0.0.1', port: 0 })
      await allUp()
      const endpoint = await json<{ id: string }>(
        await call('/v2/serverless', {
          method: 'POST',
          json: {
            name: 'unreachable',
            image: WORKER_IMAGE,
            cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
            workers: { min: 1, max: 1 },
          },
        }),
        201,
      )
      const [throttled] = await until(
        'the worker THROTTLED with the reason',
        () => workers(endpoint.id),
        (l) => l[0]?.reason?.includes('cannot reach the job API') === true,
      )
      expect(throttled!.status).toBe('THROTTLED')
      for (const host of layout.hosts) {
        expect(throttled!.reason).toContain(
          `${host.name} cannot reach the job API at ${platform!.url} (a loopback address; set workers.jobApiUrl`,
        )
      }
      expect(await hostOf(throttled!.id)).toBeUndefined()
      expect((await call(`/v2/serverless/${endpoint.id}`, { method: 'DELETE' })).status).toBe(204)
      await platform!.close()
      platform = undefined
    }, 120_000)

    it("serves an endpoint's jobs from containers on two hosts", async () => {
      await start()
      await allUp()
      volumeId = (
        await json<{ id: string }>(
          await call('/v2/network-volumes', {
            method: 'POST',
            json: { name: 'runs', size: 10, dataCenterId: 'EU-RO-1' },
          }),
          201,
        )
      ).id
      endpointId = (
        await json<{ id: string }>(
          await call('/v2/serverless', {
            method: 'POST',
            json: {
              name: 'fleet-workers',
              image: WORKER_IMAGE,
              cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
              networkVolumes: [volumeId],
              workers: { min: 2, max: 2 },
            },
          }),
          201,
        )
      ).id
      const list = await until('two workers ready', workers, (l) => ready(l).length === 2)
      const placed = await Promise.all(list.map((w) => hostOf(w.id)))
      expect(new Set(placed.map((h) => h?.name)).size).toBe(2)

      const ids: string[] = []
      for (let n = 0; n < 8; n++) ids.push(await submit({ ms: 400, n }))
      const done = await completedOnce(ids)
      expect(new Set(done.map((j) => j.output!.worker))).toEqual(new Set(list.map((w) => w.id)))
      for (const finished of done) expect(finished.output!.volume).toBe(volumeId)
    }, 240_000)

    it('adopts the worker containers after a server restart', async () => {
      const before = ready(await workers())
      const containers = new Map<string, { id: string; created: number }>()
      for (const worker of before) {
        const host = (await hostOf(worker.id))!
        const container = (await containerOf(host, worker.id))!
        containers.set(worker.id, { id: container.Id, created: container.Created })
      }
      await platform!.close()
      await start()
      await allUp()
      // The same workers, in the same containers: adopted, not replaced.
      const after = await until(
        'the same workers ready again',
        workers,
        (l) => ready(l).length === 2 && l.length === 2,
      )
      expect(after.map((w) => w.id).sort()).toEqual(before.map((w) => w.id).sort())
      for (const worker of after) {
        const host = (await hostOf(worker.id))!
        const container = (await containerOf(host, worker.id))!
        expect({ id: container.Id, created: container.Created }).toEqual(containers.get(worker.id))
        expect(container.State).toBe('running')
      }
      await completedOnce([await submit({ ms: 100 })])
    }, 180_000)

    it('replaces the worker of a host whose engine is killed; its jobs complete exactly once', async () => {
      const ids: string[] = []
      for (let n = 0; n < 6; n++) ids.push(await submit({ ms: 8_000, n }))
      // Both workers hold a job.
      await until(
        'both workers running',
        workers,
        (l) => l.filter((w) => w.status === 'RUNNING').length === 2,
      )
      const survivors = new Set(ready(await workers()).map((w) => w.id))
      const [lost] = ready(await workers())
      const lostHost = (await hostOf(lost!.id))!
      const started = await until(
        `a run of ${lost!.id} noted`,
        async () => runs().find((r) => r.worker === lost!.id && ids.includes(r.jobId)),
        (r) => r !== undefined,
      )
      const heldByLost = started!.jobId
      await stopEngine(layout, lostHost)

      const failed = await until(
        `worker ${lost!.id} UNHEALTHY`,
        async () => (await workers()).find((w) => w.id === lost!.id),
        (w) => w?.status === 'UNHEALTHY',
      )
      expect(failed!.reason).toMatch(
        new RegExp(`^host ${lostHost.name} lost at \\d{4}-\\d\\d-\\d\\dT\\S+Z \\(`),
      )
      expect((await hosts()).find((h) => h.id === lostHost.name)?.state).toBe('DOWN')
      // A replacement on the host left.
      const replaced = await until(
        'a replacement ready',
        workers,
        (l) => ready(l).length === 2 && ready(l).some((w) => !survivors.has(w.id)),
      )
      const replacement = ready(replaced).find((w) => !survivors.has(w.id))!
      const replacementHost = await hostOf(replacement.id)
      expect(replacementHost?.name).toBeDefined()
      expect(replacementHost!.name).not.toBe(lostHost.name)

      const done = await completedOnce(ids)
      // The lost worker's job ran again elsewhere, and never on two workers at once: the lost
      // worker, still running on its host (its engine died, not the container), was stopped from
      // it before another worker started it.
      const rerun = done.find((j) => j.id === heldByLost)!
      expect(rerun.output!.worker).not.toBe(lost!.id)
      const log = runs().filter((r) => r.jobId === heldByLost)
      const lostRun = log.filter((r) => r.worker === lost!.id)
      expect(lostRun.map((r) => r.what)).toEqual(['start', 'abort'])
      const nextStart = log.find((r) => r.worker !== lost!.id && r.what === 'start')!
      expect(lostRun[1]!.at).toBeLessThanOrEqual(nextStart.at)

      // The engine is back: the lost worker's container, which ran on (it noted its abort), goes.
      await startEngine(layout, lostHost)
      await until('gpu host UP again', hosts, (l) => l.every((h) => h.state === 'UP'))
      await until(
        `the lost worker's container removed from ${lostHost.name}`,
        () => containerOf(lostHost, lost!.id),
        (c) => c === undefined,
      )
    }, 300_000)

    it('moves the workers off a draining host, after their replacement is placed', async () => {
      const current = ready(await workers())
      const [leaving] = current
      const drainedHost = (await hostOf(leaving!.id))!
      const ids: string[] = []
      for (let n = 0; n < 4; n++) ids.push(await submit({ ms: 1_500, n }))
      const drained = await json<{ host: { schedule: string } }>(
        await call(`/v2/admin/hosts/${drainedHost.name}/drain`, { method: 'POST' }),
      )
      expect(drained.host.schedule).toBe('DRAINING')
      const moved = await until(
        `the workers off ${drainedHost.name}`,
        async () => {
          const list = ready(await workers())
          return { list, hosts: await Promise.all(list.map((w) => hostOf(w.id))) }
        },
        ({ list, hosts: on }) =>
          list.length === 2 && !list.some((w) => w.id === leaving!.id) && on.every(Boolean),
      )
      expect(moved.hosts.map((h) => h!.name)).not.toContain(drainedHost.name)
      await until(
        `no worker container left on ${drainedHost.name}`,
        () => containerOf(drainedHost, leaving!.id),
        (c) => c === undefined,
      )
      await completedOnce(ids)
      // What the platform did, in order (the workers' system logs, in the store): the
      // replacement was placed before the leaving worker was marked and stopped.
      const replacement = moved.list.find((w) => !current.some((c) => c.id === w.id))!
      const events = await platform!.store.db
        .selectFrom('pod_events')
        .select(['pod_id', 'line'])
        .where('pod_id', 'in', [leaving!.id, replacement.id])
        .orderBy('seq')
        .execute()
      const order = events.map((e) => `${e.pod_id === leaving!.id ? 'leaving' : 'new'}: ${e.line}`)
      const at = (prefix: string) => order.findIndex((line) => line.startsWith(prefix))
      expect(at('new: placed on host ')).toBeGreaterThanOrEqual(0)
      expect(at(`leaving: moving off host ${drainedHost.name} (draining)`)).toBeGreaterThan(
        at('new: placed on host '),
      )
      expect(at(`leaving: STOPPED: its host ${drainedHost.name} is draining`)).toBeGreaterThan(
        at(`leaving: moving off host ${drainedHost.name}`),
      )
      await json(await call(`/v2/admin/hosts/${drainedHost.name}/uncordon`, { method: 'POST' }))
    }, 240_000)
  },
)
