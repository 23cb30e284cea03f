import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../support/cli.js'
import { json, podLog } from '../support/http.js'
import {
  otherAccountKey,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type TestPlatform,
} from '../support/platform.js'
import { until } from '../support/until.js'

/**
 * `podyard hosts drain <host> --migrate` (docs/fleet.md, "Drain that moves pods"), on two
 * simulated hosts of one data center (the process driver): a member's running pod with a
 * network volume is stopped on the drained host and started on the other with the same id,
 * its volume's files there and its port published again; a GPU pod with a volume on the
 * host stays, with the reason; the pod's system log says where it went.
 */
const FLEET = `
dataCenters:
  - id: EU-RO-1
    name: EU Romania 1
    region: EUROPE
hosts:
  - id: cpu-a
    dataCenterId: EU-RO-1
    cpuFlavors: [cpu3c]
    gpu: { typeId: NVIDIA GeForce RTX 4090, count: 2 }
    vcpus: 16
    memoryGb: 64
    simulated: true
  - id: cpu-b
    dataCenterId: EU-RO-1
    cpuFlavors: [cpu3c]
    gpu: { typeId: NVIDIA GeForce RTX 4090, count: 2 }
    vcpus: 16
    memoryGb: 64
    simulated: true
localHost: false
`

/**
 * Counts its starts in a file of the network volume, prints the count, and answers on its
 * published port with its id and the count. The volume is at /runpod-volume in a sandbox, and
 * at PODYARD_MOUNT_RUNPOD_VOLUME without one (docs/runtime.md, "Mounts").
 */
const COUNT_VISITS = [
  'volume="${PODYARD_MOUNT_RUNPOD_VOLUME:-/runpod-volume}"',
  'echo visit >> "$volume/visits"',
  'echo "visits $(wc -l < "$volume/visits")"',
  `exec node -e 'require("http").createServer((q, r) => r.end(process.env.RUNPOD_POD_ID + " " + require("fs").readFileSync((process.env.PODYARD_MOUNT_RUNPOD_VOLUME || "/runpod-volume") + "/visits", "utf8").trim().split("\\n").length)).listen(Number(process.env.RUNPOD_TCP_PORT_8080))'`,
].join('\n')

interface PodJson {
  id: string
  status: string
  statusReason: string | null
  runtime: { ports: Array<{ private: number; public: number; ip: string }> } | null
}

interface DrainJson {
  host: { id: string; schedule: string }
  podsLeft: Array<{ id: string; notMovedBecause?: string }>
  podsMoved: Array<{ id: string; movedTo: string; status: string }>
}

describe('drain --migrate', () => {
  let platform: TestPlatform
  let member = ''
  const asMember = (p: string, init: Parameters<TestPlatform['call']>[1] = {}) =>
    platform.call(p, { key: member, ...init })
  const podOf = async (id: string) => json<PodJson>(await asMember(`/v2/pods/${id}`))
  const hostOf = async (id: string) =>
    (
      await platform.store.db
        .selectFrom('pods')
        .select('doc')
        .where('id', '=', id)
        .executeTakeFirstOrThrow()
        .then((row) => JSON.parse(String(row.doc)) as { hostId: string })
    ).hostId
  const running = (id: string) =>
    until(
      `pod ${id} RUNNING`,
      () => podOf(id),
      (p) => p.status === 'RUNNING' || p.status === 'ERROR',
      60_000,
    )

  beforeAll(async () => {
    platform = await startTestPlatform({}, { fleetYaml: FLEET })
    member = await otherAccountKey(platform, 'drain-migrate@example.com')
  }, 60_000)

  afterAll(async () => {
    await platform?.close()
  })

  it('moves a running pod with its network volume and port; a pod with a host volume stays', async () => {
    // Both pods on cpu-a: cpu-b takes none while cordoned.
    await json(await platform.call('/v2/admin/hosts/cpu-b/cordon', { method: 'POST' }))
    const volume = await json<{ id: string }>(
      await asMember('/v2/network-volumes', {
        method: 'POST',
        json: { name: 'moves-along', size: 10, dataCenterId: 'EU-RO-1' },
      }),
      201,
    )
    const mover = await json<PodJson>(
      await asMember('/v2/pods', {
        method: 'POST',
        json: {
          name: 'mover',
          image: 'ubuntu',
          cpu: { id: 'cpu3c', vcpuCount: 2 },
          mounts: { network: [{ volumeId: volume.id, path: '/runpod-volume' }] },
          ports: ['8080/http'],
          args: COUNT_VISITS,
        },
      }),
      201,
    )
    const stayer = await json<PodJson>(
      await asMember('/v2/pods', {
        method: 'POST',
        json: {
          name: 'stayer',
          image: 'ubuntu',
          gpu: { id: 'NVIDIA GeForce RTX 4090', count: 1 },
          mounts: { persistent: { size: 10, path: '/workspace' } },
          args: 'exec sleep 600',
        },
      }),
      201,
    )
    expect((await running(mover.id)).status).toBe('RUNNING')
    expect((await running(stayer.id)).status).toBe('RUNNING')
    expect(await hostOf(mover.id)).toBe('cpu-a')
    expect(await hostOf(stayer.id)).toBe('cpu-a')
    await until(
      'the first visit',
      () => podLog(asMember, mover.id),
      (log) => log.includes('visits 1'),
      60_000,
    )
    await json(await platform.call('/v2/admin/hosts/cpu-b/uncordon', { method: 'POST' }))

    const drained = await runCli([
      'hosts',
      'drain',
      'cpu-a',
      '--migrate',
      '--json',
      '--url',
      platform.url,
      '--api-key',
      TEST_ADMIN_KEY,
    ])
    expect(drained.code, drained.stderr).toBe(0)
    const result = JSON.parse(drained.stdout) as DrainJson
    expect(result.host.schedule).toBe('DRAINING')
    expect(result.podsMoved.map((p) => [p.id, p.movedTo])).toEqual([[mover.id, 'cpu-b']])
    expect(result.podsLeft.map((p) => p.id)).toEqual([stayer.id])
    expect(result.podsLeft[0]?.notMovedBecause).toContain('volume at /workspace is on this host')

    // The same pod on cpu-b: its volume's file has both visits, its port published again.
    const moved = await running(mover.id)
    expect(moved.status, moved.statusReason ?? '').toBe('RUNNING')
    expect(await hostOf(mover.id)).toBe('cpu-b')
    await until(
      'the second visit, on cpu-b',
      () => podLog(asMember, mover.id),
      (log) => log.includes('visits 2'),
      60_000,
    )
    const port = moved.runtime?.ports.find((p) => p.private === 8080)
    expect(port?.public).toBeGreaterThan(0)
    const answer = await until(
      'the moved pod answering on its port',
      () =>
        fetch(`http://${port!.ip}:${port!.public}/`, { signal: AbortSignal.timeout(2_000) })
          .then((r) => r.text())
          .catch(() => ''),
      (text) => text !== '',
      30_000,
    )
    expect(answer).toBe(`${mover.id} 2`)
    const system = await podLog(asMember, mover.id, 'system')
    expect(system.join('\n')).toContain(
      'moved from host cpu-a to host cpu-b (cpu-a drained with --migrate)',
    )
    expect((await podOf(stayer.id)).status).toBe('RUNNING')

    // Another account's drain is no drain at all.
    expect(
      (await asMember('/v2/admin/hosts/cpu-b/drain?migrate=true', { method: 'POST' })).status,
    ).toBe(403)
    for (const id of [mover.id, stayer.id])
      expect((await asMember(`/v2/pods/${id}`, { method: 'DELETE' })).status).toBe(204)
  }, 180_000)
})
