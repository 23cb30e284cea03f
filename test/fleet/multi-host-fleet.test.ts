import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPlatform, type Platform } from '../../src/platform.js'
import { json } from '../support/http.js'
import {
  holdRig,
  rigFleetYaml,
  multiHostEnabled,
  readRigLayout,
  rigHost,
  rigUnavailableReason,
  startEngine,
  stopEngine,
  type RigLayout,
} from '../support/multi-host-rig.js'
import { until as untilDone } from '../support/until.js'
import {
  callPlatform,
  stopPlatform,
  TEST_ADMIN_KEY,
  testConfig,
  type CallInit,
} from '../support/platform.js'
import { restartableStores } from '../support/restartable-platform.js'
import { freshPostgresDatabase, POSTGRES_URL_ENV } from '../support/stores.js'

/**
 * A fleet of three real hosts, the multi-host rig's engines (test/support/multi-host-rig.sh):
 * gpu-node-1 and -2 over SSH, gpu-node-3 over TCP+TLS, all in one data center whose network
 * volumes are one shared directory. Through the HTTP API: pods on every host, reachable at each
 * host's address; a lost engine and its return; a server restart. Opt-in with
 * PODYARD_TEST_MULTIHOST=1; once asked to run, a rig that does not answer fails the suite.
 */
const enabled = multiHostEnabled()
if (!enabled)
  console.log('multi-host fleet tests skipped: set PODYARD_TEST_MULTIHOST=1 (needs the rig up)')

const IMAGE = 'podyard-conformance/hello:1'
/** Serves "<pod id> <boot stamp>" on 8080 and notes the pod in the shared volume. */
const SERVE =
  'mkdir -p /srv && echo "$RUNPOD_POD_ID $RUNPOD_PUBLIC_IP $(date +%s%N)" > /srv/index.html && ' +
  'echo "$RUNPOD_POD_ID" >> /workspace/pods.txt && exec httpd -f -p 8080 -h /srv'

interface PodJson {
  id: string
  status: string
  statusReason: string | null
  runtime: { ports: Array<{ private: number; public: number; ip: string }> } | null
}

interface HostJson {
  id: string
  state: string
  stateReason: string | null
  runtime: string
  publicIp: string
  reported: { cpus: number; runtimes: string[]; serverVersion: string } | null
}

/** Rig operations (engines, SSH sessions) are slow: a longer wait than the default. */
const until = <T>(
  what: string,
  read: () => Promise<T>,
  done: (v: T) => boolean,
  timeoutMs = 60_000,
) => untilDone(what, read, done, timeoutMs)

async function fetchText(url: string): Promise<string> {
  const response = await fetch(url, { signal: AbortSignal.timeout(5_000) })
  return (await response.text()).trim()
}

describe.runIf(enabled).each(restartableStores())('a fleet of three hosts on %s', (store) => {
  let layout: RigLayout
  let dir: string
  let volumeRoot: string
  let database: { url: string; drop(): Promise<void> } | undefined
  let platform: Platform
  let release: (() => void) | undefined
  const call = (p: string, init?: CallInit) => callPlatform(platform.url, p, init)
  const hosts = async () => (await json<{ hosts: HostJson[] }>(await call('/v2/admin/hosts'))).hosts
  const pod = (id: string) => call(`/v2/pods/${id}`).then((r) => json<PodJson>(r))
  const start = async () => {
    platform = await startPlatform(
      testConfig(dir, {
        fleet: path.join(dir, 'fleet.yaml'),
        ...(database ? { storeUrl: database.url } : {}),
        hosts: { probeIntervalMs: 500, probeTimeoutMs: 8_000, failuresBeforeDown: 2 },
      }),
      { logger: pino({ level: 'silent' }) },
    )
  }
  const pods: PodJson[] = []
  const served = new Map<string, string>()

  beforeAll(async () => {
    release = await holdRig()
    const reason = await rigUnavailableReason()
    if (reason) throw new Error(`PODYARD_TEST_MULTIHOST=1 but the rig is not usable: ${reason}`)
    layout = readRigLayout()
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-fleet-'))
    volumeRoot = path.join(dir, 'eu-ro-1-shared')
    mkdirSync(path.join(dir, '.podyard'))
    writeFileSync(path.join(dir, 'fleet.yaml'), rigFleetYaml(layout, volumeRoot))
    if (store === 'postgres') database = await freshPostgresDatabase(process.env[POSTGRES_URL_ENV]!)
    await start()
  }, 960_000)

  afterAll(async () => {
    try {
      // Every engine answers again before the pods' containers are removed through it.
      if (layout) await startEngine(layout, rigHost(layout, 'gpu-node-2')).catch(() => undefined)
      if (platform) await stopPlatform(platform)
      await database?.drop()
      if (dir) rmSync(dir, { recursive: true, force: true })
    } finally {
      release?.()
    }
  }, 120_000)

  it('probes every host over its transport and sees it UP', async () => {
    const list = await until('hosts UP', hosts, (l) => l.every((h) => h.state === 'UP'))
    for (const host of layout.hosts) {
      const seen = list.find((h) => h.id === host.name)!
      expect(seen).toMatchObject({ runtime: host.dockerUrl, publicIp: host.address })
      expect(seen.reported?.runtimes).toContain('runc')
      expect(seen.reported?.cpus).toBeGreaterThan(0)
    }
  }, 90_000)

  it('places pods on all three hosts, each reachable at its host address', async () => {
    const volume = await json<{ id: string }>(
      await call('/v2/network-volumes', {
        method: 'POST',
        json: { name: 'shared', size: 10, dataCenterId: 'EU-RO-1' },
      }),
      201,
    )
    for (let i = 0; i < 3; i++) {
      pods.push(
        await json<PodJson>(
          await call('/v2/pods', {
            method: 'POST',
            json: {
              name: `web-${i}`,
              image: IMAGE,
              cpu: { id: 'cpu3c', vcpuCount: 2 },
              ports: ['8080/http'],
              args: SERVE,
              mounts: { network: [{ volumeId: volume.id, path: '/workspace' }] },
            },
          }),
          201,
        ),
      )
    }
    const placed = new Set<string>()
    for (const created of pods) {
      const running = await until(
        `pod ${created.id} RUNNING`,
        () => pod(created.id),
        (p) => ['RUNNING', 'ERROR'].includes(p.status),
      )
      expect(running.status, running.statusReason ?? '').toBe('RUNNING')
      const port = running.runtime!.ports[0]!
      const host = layout.hosts.find((h) => h.address === port.ip)
      expect(host, `port ip ${port.ip}`).toBeDefined()
      placed.add(host!.name)
      const text = await fetchText(`http://${port.ip}:${port.public}/`)
      expect(text).toMatch(new RegExp(`^${created.id} ${port.ip} \\S+$`))
      served.set(created.id, text)
    }
    expect([...placed].sort()).toEqual(['gpu-node-1', 'gpu-node-2', 'gpu-node-3'])
    // One data center, one shared volume directory: every host wrote to the same file.
    const noted = readFileSync(path.join(volumeRoot, volume.id, 'pods.txt'), 'utf8')
    expect(noted.trim().split('\n').sort()).toEqual(pods.map((p) => p.id).sort())

    // GraphQL names the host that serves the port too.
    const response = await fetch(`${platform.url}/graphql`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${TEST_ADMIN_KEY}`,
      },
      body: JSON.stringify({
        query: `{ pod(input: {podId: "${pods[0]!.id}"}) { runtime { ports { ip publicPort } } } }`,
      }),
    })
    const body = (await response.json()) as {
      data: { pod: { runtime: { ports: Array<{ ip: string; publicPort: number }> } } }
    }
    const rest = await pod(pods[0]!.id)
    expect(body.data.pod.runtime.ports[0]).toEqual({
      ip: rest.runtime!.ports[0]!.ip,
      publicPort: rest.runtime!.ports[0]!.public,
    })
  }, 240_000)

  it('adopts the containers of every host after a server restart', async () => {
    await platform.close()
    await start()
    await until('hosts UP', hosts, (l) => l.every((h) => h.state === 'UP'))
    for (const created of pods) {
      const seen = await pod(created.id)
      expect(seen.status).toBe('RUNNING')
      const port = seen.runtime!.ports[0]!
      // The same boot stamp: adopted, not restarted.
      expect(await fetchText(`http://${port.ip}:${port.public}/`)).toBe(served.get(created.id))
    }
  }, 120_000)

  it('puts the pods of a host whose engine is killed in ERROR, and adopts them when it returns', async () => {
    const node2 = rigHost(layout, 'gpu-node-2')
    const lost = pods.find((p) => served.get(p.id)!.includes(` ${node2.address} `))!
    await stopEngine(layout, node2)
    const down = await until(
      'gpu-node-2 DOWN',
      async () => (await hosts()).find((h) => h.id === 'gpu-node-2')!,
      (h) => h.state === 'DOWN',
    )
    expect(down.stateReason).toContain(node2.dockerUrl)
    const failed = await until(
      `pod ${lost.id} ERROR`,
      () => pod(lost.id),
      (p) => p.status === 'ERROR',
    )
    expect(failed.statusReason).toMatch(
      new RegExp(
        `^host gpu-node-2 lost at \\d{4}-\\d\\d-\\d\\dT\\S+Z \\(${node2.dockerUrl.replace(/[.]/g, '\\.')}: `,
      ),
    )
    for (const other of pods.filter((p) => p !== lost))
      expect((await pod(other.id)).status).toBe('RUNNING')

    await startEngine(layout, node2)
    const back = await until(
      `pod ${lost.id} RUNNING`,
      () => pod(lost.id),
      (p) => p.status !== 'ERROR',
    )
    expect(back.status).toBe('RUNNING')
    expect((await hosts()).find((h) => h.id === 'gpu-node-2')?.state).toBe('UP')
    const port = back.runtime!.ports[0]!
    expect(await fetchText(`http://${port.ip}:${port.public}/`)).toBe(served.get(lost.id))
  }, 180_000)

  it('drains a host: no new placements there, its pods listed', async () => {
    const drained = await json<{ host: { schedule: string }; podsLeft: Array<{ id: string }> }>(
      await call('/v2/admin/hosts/gpu-node-1/drain', { method: 'POST' }),
    )
    expect(drained.host.schedule).toBe('DRAINING')
    const onNode1 = pods.filter((p) => served.get(p.id)!.includes(' 10.213.0.11 '))
    expect(drained.podsLeft.map((p) => p.id)).toEqual(onNode1.map((p) => p.id))
    // gpu-node-1's pod goes; its room is not offered while it drains.
    expect((await call(`/v2/pods/${onNode1[0]!.id}`, { method: 'DELETE' })).status).toBe(204)
    const refused = await json<{ detail: string }>(
      await call('/v2/pods', {
        method: 'POST',
        json: { name: 'late', image: IMAGE, cpu: { id: 'cpu3c', vcpuCount: 2 } },
      }),
      409,
    )
    expect(refused.detail).toContain('gpu-node-1 is draining')
    await json(await call('/v2/admin/hosts/gpu-node-1/uncordon', { method: 'POST' }))
  }, 60_000)

  it('drains a host with migrate: its pod starts on another host with the same id and volume', async () => {
    const onNode3 = pods.find((p) => served.get(p.id)!.includes(' 10.213.0.13 '))!
    const drained = await json<{
      podsMoved: Array<{ id: string; movedTo: string }>
      podsLeft: Array<{ id: string }>
    }>(await call('/v2/admin/hosts/gpu-node-3/drain?migrate=true', { method: 'POST' }))
    // gpu-node-1 is the one host with room (its pod went in the drain above).
    expect(drained.podsMoved).toEqual([
      expect.objectContaining({ id: onNode3.id, movedTo: 'gpu-node-1' }),
    ])
    expect(drained.podsLeft).toEqual([])
    const moved = await until(
      `pod ${onNode3.id} RUNNING on gpu-node-1`,
      () => pod(onNode3.id),
      (p) =>
        p.status === 'ERROR' ||
        (p.status === 'RUNNING' && p.runtime?.ports[0]?.ip === '10.213.0.11'),
    )
    expect(moved.status, moved.statusReason ?? '').toBe('RUNNING')
    const port = moved.runtime!.ports[0]!
    expect(await fetchText(`http://${port.ip}:${port.public}/`)).toMatch(
      new RegExp(`^${onNode3.id} 10\\.213\\.0\\.11 \\S+$`),
    )
    // The network volume followed it: the pod noted itself a second time in the shared file.
    const [volumeId] = readdirSync(volumeRoot).filter((name) => !name.includes('.'))
    const noted = readFileSync(path.join(volumeRoot, volumeId!, 'pods.txt'), 'utf8')
    expect(
      noted
        .trim()
        .split('\n')
        .filter((id) => id === onNode3.id),
    ).toHaveLength(2)
    // Nothing of it is left on gpu-node-3's engine.
    const node3 = rigHost(layout, 'gpu-node-3')
    const left = execFileSync(
      'docker',
      [
        '-H',
        `unix://${node3.socketPath}`,
        'ps',
        '-a',
        '--filter',
        `label=podyard.workload=${onNode3.id}`,
        '-q',
      ],
      { encoding: 'utf8' },
    )
    expect(left.trim()).toBe('')
    await json(await call('/v2/admin/hosts/gpu-node-3/uncordon', { method: 'POST' }))
  }, 120_000)
})
