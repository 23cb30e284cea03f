import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { probeBubblewrap } from '../../src/runtime/process/bubblewrap.js'
import { DEFAULT_SANDBOX_UID_BASE } from '../../src/runtime/process/sandbox-users.js'
import { CONTAINED_LIMITS, type ContainedLimit } from '../../src/shared/contained-limits.js'
import { runCli } from '../support/cli.js'
import { EU_SE_1, fleetYaml, type TestDataCenter } from '../support/fleet-yaml.js'
import {
  otherAccountKey,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type CallInit,
} from '../support/platform.js'
import { until } from '../support/until.js'

/**
 * A data center whose network volumes live on shared storage (`networkVolumeRoot`): a plain
 * directory every host there mounts, so no host bounds a volume at its size. Its hosts say so
 * (`volume` in `unenforcedLimits`, the CLI, the start banner), and another account's pods and
 * workers that mount a volume there are refused with the reason unless the operator accepts it
 * (`containment.acceptUnenforced: [volume]`); its workloads without a volume, and the admin's,
 * run. Every other limit is accepted here, so that the suite runs wherever bubblewrap does.
 */

const bubblewrap = await probeBubblewrap({
  searchPath: process.env.PATH,
  probeUid: DEFAULT_SANDBOX_UID_BASE,
})
if (!bubblewrap.ok) console.log('volume size unenforced: left out here:', bubblewrap.reason)

const SHARED_ROOT = mkdtempSync(path.join(tmpdir(), 'podyard-shared-volumes-'))
const SHARED: TestDataCenter = {
  id: 'EU-RO-1',
  name: 'EU Romania 1',
  region: 'EUROPE',
  networkVolumeRoot: SHARED_ROOT,
}
const FLEET = fleetYaml({
  dataCenters: [SHARED, EU_SE_1],
  localHost: { dataCenterId: SHARED.id, cpuFlavors: ['cpu3c'] },
})
const ALL_BUT_VOLUME = CONTAINED_LIMITS.filter((limit) => limit !== 'volume')
const SHARED_REASON =
  'the network volumes of data center EU-RO-1 are directories on its shared storage ' +
  '(networkVolumeRoot), which no host bounds: their sizes are billed, not enforced (docs/volumes.md)'

interface PodJson {
  id: string
  status?: string
  statusReason?: string | null
}

async function json<T>(response: Response, status = 200): Promise<T> {
  const text = await response.text()
  expect(response.status, text).toBe(status)
  return (text ? JSON.parse(text) : undefined) as T
}

async function setUp(acceptUnenforced: readonly ContainedLimit[]) {
  const platform = await startTestPlatform(
    { sandbox: 'bubblewrap', containment: { acceptUnenforced: [...acceptUnenforced] } },
    { fleetYaml: FLEET },
  )
  const member = await otherAccountKey(platform, 'shared-volume@example.com')
  const as =
    (key: string): Caller =>
    (p, init = {}) =>
      platform.call(p, { key, ...init })
  return { platform, member: as(member), admin: as(TEST_ADMIN_KEY) }
}

/** Calls the platform as one account. */
type Caller = (pathAndQuery: string, init?: CallInit) => Promise<Response>

async function createVolume(call: Caller): Promise<string> {
  const body = { name: 'shared', size: 10, dataCenterId: SHARED.id }
  return (
    await json<{ id: string }>(
      await call('/v2/network-volumes', { method: 'POST', json: body }),
      201,
    )
  ).id
}

async function createPod(call: Caller, name: string, volumeId?: string): Promise<string> {
  const body = {
    name,
    image: 'ubuntu',
    cpu: { id: 'cpu3c', vcpuCount: 2 },
    dataCenterIds: [SHARED.id],
    args: 'exec sleep 600',
    ...(volumeId ? { mounts: { network: [{ volumeId, path: '/runpod-volume' }] } } : {}),
  }
  return (await json<PodJson>(await call('/v2/pods', { method: 'POST', json: body }), 201)).id
}

function settled(call: Caller, id: string): Promise<PodJson> {
  return until(
    `pod ${id} to run or fail`,
    async () => json<PodJson>(await call(`/v2/pods/${id}`)),
    (pod) => pod.status === 'RUNNING' || pod.status === 'ERROR',
    60_000,
  )
}

afterAll(() => rmSync(SHARED_ROOT, { recursive: true, force: true }))

describe.runIf(bubblewrap.ok)('network volumes on shared storage', () => {
  let env: Awaited<ReturnType<typeof setUp>>

  beforeAll(async () => {
    env = await setUp(ALL_BUT_VOLUME)
  }, 60_000)

  afterAll(() => env?.platform.closeWithWorkloads(), 60_000)

  it('are reported unenforced by the hosts of their data center, in the API, the CLI and the banner', async () => {
    const { platform, admin } = env
    const host = await json<{
      unenforcedLimits: { limit: string; reason: string; accepted: boolean }[]
    }>(await admin('/v2/admin/hosts/local'))
    expect(host.unenforcedLimits.find((u) => u.limit === 'volume')).toEqual({
      limit: 'volume',
      reason: SHARED_REASON,
      accepted: false,
    })
    const shown = await runCli([
      'hosts',
      'get',
      'local',
      '--url',
      platform.url,
      '--api-key',
      TEST_ADMIN_KEY,
    ])
    expect(shown.code, shown.stderr).toBe(0)
    expect(shown.stdout).toContain(
      `unenforced  volume: ${SHARED_REASON}; only the admin account's workloads that mount a network volume start here (containment.acceptUnenforced)`,
    )
    expect(platform.banner).toContain(
      `unenforced    volume: ${SHARED_REASON}; only the admin account's workloads that mount a network volume start (containment.acceptUnenforced)`,
    )
  })

  it("refuses a member's pod that mounts a volume there, with the reason, and runs its other pods and the admin's", async () => {
    const { member, admin } = env
    const volumeId = await createVolume(member)
    const refused = await settled(member, await createPod(member, 'on-volume', volumeId))
    expect(refused.status).toBe('ERROR')
    expect(refused.statusReason).toBe(
      `not started: this host does not enforce the volume limit (volume: ${SHARED_REASON}), ` +
        "which only the admin account's workloads may run without; the operator can accept the " +
        'risk for every account with containment.acceptUnenforced: [volume] (docs/security.md)',
    )
    const plain = await settled(member, await createPod(member, 'no-volume'))
    expect(plain.status, plain.statusReason ?? '').toBe('RUNNING')
    // This machine's vCPUs are few: one pod at a time.
    await json(await member(`/v2/pods/${plain.id}`, { method: 'DELETE' }), 204)

    const adminVolume = await createVolume(admin)
    const admins = await settled(admin, await createPod(admin, 'admins', adminVolume))
    expect(admins.status, admins.statusReason ?? '').toBe('RUNNING')
    await json(await admin(`/v2/pods/${admins.id}`, { method: 'DELETE' }), 204)
  }, 120_000)

  it("keeps a member's workers that mount a volume there THROTTLED with the reason", async () => {
    const { member } = env
    const volumeId = await createVolume(member)
    const endpoint = await json<{ id: string }>(
      await member('/v2/serverless', {
        method: 'POST',
        json: {
          name: 'on-shared-volume',
          image: 'x',
          args: 'exec sleep 600',
          cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
          networkVolumes: [volumeId],
          workers: { min: 1, max: 1 },
        },
      }),
      201,
    )
    const worker = await until(
      'the worker to be refused',
      async () =>
        (
          await json<{ workers: { status: string; reason: string | null }[] }>(
            await member(`/v2/serverless/${endpoint.id}/workers`),
          )
        ).workers[0],
      (w) => w?.reason?.startsWith('not started:') === true,
      60_000,
    )
    expect(worker).toMatchObject({ status: 'THROTTLED' })
    expect(worker!.reason).toContain(`does not enforce the volume limit (volume: ${SHARED_REASON})`)
  }, 90_000)
})

describe.runIf(bubblewrap.ok)('network volumes on shared storage, the risk accepted', () => {
  let env: Awaited<ReturnType<typeof setUp>>

  beforeAll(async () => {
    env = await setUp(CONTAINED_LIMITS)
  }, 60_000)

  afterAll(() => env?.platform.closeWithWorkloads(), 60_000)

  it("runs a member's pod on a volume there, and the host shows the limit accepted", async () => {
    const { member, admin } = env
    const host = await json<{ unenforcedLimits: { limit: string; accepted: boolean }[] }>(
      await admin('/v2/admin/hosts/local'),
    )
    expect(host.unenforcedLimits).toContainEqual({
      limit: 'volume',
      reason: SHARED_REASON,
      accepted: true,
    })
    const volumeId = await createVolume(member)
    const pod = await settled(member, await createPod(member, 'on-volume', volumeId))
    expect(pod.status, pod.statusReason ?? '').toBe('RUNNING')
  }, 90_000)
})
