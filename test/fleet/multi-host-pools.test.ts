import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPlatform, type Platform } from '../../src/platform.js'
import { json } from '../support/http.js'
import {
  holdRig,
  multiHostEnabled,
  readRigLayout,
  rigFleetYaml,
  rigUnavailableReason,
  type RigLayout,
} from '../support/multi-host-rig.js'
import {
  callPlatform,
  otherAccountKey,
  stopPlatform,
  testConfig,
  type CallInit,
} from '../support/platform.js'
import { until } from '../support/until.js'

/**
 * Pools and labels on the multi-host rig's real engines (test/support/multi-host-rig.sh), over
 * the HTTP API as member accounts: gpu-node-3 (TCP+TLS) is reserved to pool team-a and
 * gpu-node-1 (SSH) labelled ib=true. Another account's pod asking for the pool is refused with
 * the reason; the bound account's pod runs on gpu-node-3; a pod asking ib=true runs on
 * gpu-node-1; an account at its pod quota is refused (403, the quota and its use named) until
 * the admin raises it. Opt-in with PODYARD_TEST_MULTIHOST=1, as multi-host-fleet.test.ts.
 */
const enabled = multiHostEnabled()
if (!enabled)
  console.log('multi-host pools tests skipped: set PODYARD_TEST_MULTIHOST=1 (needs the rig up)')

const IMAGE = 'podyard-conformance/hello:1'

interface PodJson {
  id: string
  status: string
  statusReason: string | null
  runtime: { ports: Array<{ private: number; public: number; ip: string }> } | null
}

/** The rig's fleet with labels on two of its hosts. */
function labelledFleet(layout: RigLayout, volumeRoot: string): string {
  const labelled: Record<string, string> = {
    'gpu-node-3': '{ pool: team-a }',
    'gpu-node-1': "{ ib: 'true' }",
  }
  return rigFleetYaml(layout, volumeRoot)
    .split('\n')
    .flatMap((line) => {
      const host = /^ {2}- id: (\S+)$/.exec(line)?.[1]
      return host && labelled[host] ? [line, `    labels: ${labelled[host]}`] : [line]
    })
    .join('\n')
}

describe.runIf(enabled)('pools, labels and quotas on three real hosts', () => {
  let layout: RigLayout
  let dir: string
  let platform: Platform
  let release: (() => void) | undefined
  let teamKey: string
  let otherKey: string
  const call = (p: string, init?: CallInit) => callPlatform(platform.url, p, init)
  const created: Array<{ id: string; key: string }> = []
  const createPod = async (key: string, name: string, hostLabels: string[]) => {
    const response = await call('/v2/pods', {
      method: 'POST',
      key,
      json: {
        name,
        image: IMAGE,
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        args: 'sleep 600',
        hostLabels,
      },
    })
    const body = (await response.json()) as PodJson & { detail?: string }
    if (response.status === 201) created.push({ id: body.id, key })
    return { status: response.status, body }
  }
  const hostOf = async (key: string, id: string) => {
    const running = await until(
      `pod ${id} RUNNING`,
      async () => json<PodJson>(await call(`/v2/pods/${id}`, { key })),
      (p) => ['RUNNING', 'ERROR'].includes(p.status),
      120_000,
    )
    expect(running.status, running.statusReason ?? '').toBe('RUNNING')
    const { hosts } = await json<{ hosts: Array<{ id: string }> }>(await call('/v2/admin/hosts'))
    for (const host of hosts) {
      const detail = await json<{ pods: Array<{ id: string }> }>(
        await call(`/v2/admin/hosts/${host.id}`),
      )
      if (detail.pods.some((p) => p.id === id)) return host.id
    }
    return undefined
  }

  beforeAll(async () => {
    release = await holdRig()
    const reason = await rigUnavailableReason()
    if (reason) throw new Error(`PODYARD_TEST_MULTIHOST=1 but the rig is not usable: ${reason}`)
    layout = readRigLayout()
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-pools-'))
    mkdirSync(path.join(dir, '.podyard'))
    writeFileSync(
      path.join(dir, 'fleet.yaml'),
      labelledFleet(layout, path.join(dir, 'eu-ro-1-shared')),
    )
    platform = await startPlatform(
      testConfig(dir, {
        fleet: path.join(dir, 'fleet.yaml'),
        hosts: { probeIntervalMs: 500, probeTimeoutMs: 8_000, failuresBeforeDown: 2 },
        // The rig's engines (overlay2 on ext4) cannot size a container disk, and podyard sets
        // no disk write limit on another machine's engine; members' pods start there only with
        // the risk accepted (docs/security.md).
        containment: { acceptUnenforced: ['disk', 'diskWrite'] },
      }),
      { logger: pino({ level: 'silent' }) },
    )
    teamKey = await otherAccountKey(platform, 'rig-team-a@example.com')
    otherKey = await otherAccountKey(platform, 'rig-other@example.com')
    await until(
      'hosts UP',
      async () =>
        (await json<{ hosts: Array<{ state: string }> }>(await call('/v2/admin/hosts'))).hosts,
      (hosts) => hosts.every((h) => h.state === 'UP'),
      90_000,
    )
  }, 960_000)

  afterAll(async () => {
    try {
      for (const pod of created)
        await call(`/v2/pods/${pod.id}`, { method: 'DELETE', key: pod.key }).catch(() => undefined)
      if (platform) await stopPlatform(platform)
      if (dir) rmSync(dir, { recursive: true, force: true })
    } finally {
      release?.()
    }
  }, 120_000)

  it('refuses another account the pool, and runs the bound account on the pool host', async () => {
    const refused = await createPod(otherKey, 'outsider', ['pool=team-a'])
    expect(refused.status, JSON.stringify(refused.body)).toBe(409)
    expect(refused.body.detail).toBe(
      'no host in pool team-a is open to this account (it is bound to no pool), and no other host with pool=team-a offers CPU flavor cpu3c in the SECURE cloud',
    )

    const teamId = (await json<{ id: string }>(await call('/v2/account', { key: teamKey }))).id
    await json(
      await call(`/v2/admin/accounts/${teamId}/pools`, {
        method: 'PUT',
        json: { pools: ['team-a'] },
      }),
    )
    const member = await createPod(teamKey, 'member', ['pool=team-a'])
    expect(member.status, JSON.stringify(member.body)).toBe(201)
    expect(await hostOf(teamKey, member.body.id)).toBe('gpu-node-3')
  }, 240_000)

  it('places a pod asking ib=true on the host labelled so', async () => {
    const pod = await createPod(otherKey, 'infiniband', ['ib=true'])
    expect(pod.status, JSON.stringify(pod.body)).toBe(201)
    expect(await hostOf(otherKey, pod.body.id)).toBe('gpu-node-1')
  }, 240_000)

  it('holds an account to its pod quota: refused at the quota, placed once the admin raised it', async () => {
    // The other account holds one pod (the one above); gpu-node-2 is the host left free.
    const otherId = (await json<{ id: string }>(await call('/v2/account', { key: otherKey }))).id
    const setPods = async (pods: number) =>
      json(await call(`/v2/admin/accounts/${otherId}/quotas`, { method: 'PATCH', json: { pods } }))
    await setPods(1)
    const refused = await createPod(otherKey, 'over-quota', [])
    expect(refused.status, JSON.stringify(refused.body)).toBe(403)
    expect(refused.body.detail).toBe(
      'quota pods exceeded: create pod "over-quota" needs 1 more pods, the account uses 1 of its quota of 1; free some or ask the admin to raise the quota',
    )

    await setPods(2)
    const raised = await createPod(otherKey, 'within-quota', [])
    expect(raised.status, JSON.stringify(raised.body)).toBe(201)
    expect(await hostOf(otherKey, raised.body.id)).toBe('gpu-node-2')
  }, 240_000)
})
