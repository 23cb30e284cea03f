import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../support/cli.js'
import { EU_RO_1, EU_SE_1, fleetYaml } from '../support/fleet-yaml.js'
import { json } from '../support/http.js'
import { otherAccountKey, TEST_ADMIN_KEY, type TestPlatform } from '../support/platform.js'
import { platformStores } from '../support/platform-stores.js'

/**
 * The fleet's hosts through the admin API and the CLI, on this machine alone: a real host that
 * declares no engine is DOWN and runs nothing (never here instead), the local host is UP; cordon,
 * uncordon and drain change where pods go and what the catalog offers. Remote engines: the
 * multi-host rig suite (test/fleet/multi-host-fleet.test.ts).
 */
const FLEET = fleetYaml({
  dataCenters: [EU_RO_1, EU_SE_1],
  hosts: [
    {
      id: 'real-cpu-1',
      dataCenterId: EU_SE_1.id,
      cpuFlavors: ['cpu3c'],
      vcpus: 8,
      memoryGb: 32,
      simulated: false,
    },
  ],
  localHost: { dataCenterId: EU_RO_1.id, cpuFlavors: ['cpu3c'] },
})

interface HostJson {
  id: string
  state: string
  stateReason: string | null
  schedule: string
  placeable: boolean
  unplaceableReason: string | null
  runtime: string
  podCount: number
}

interface Problem {
  status: number
  detail: string
}

async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 15_000
  for (;;) {
    const value = await read()
    if (done(value)) return value
    if (Date.now() > deadline) throw new Error(`still ${JSON.stringify(value)}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

describe.each(platformStores())('hosts on $name', (store) => {
  let platform: TestPlatform
  const hosts = async () =>
    (await json<{ hosts: HostJson[] }>(await platform.call('/v2/admin/hosts'))).hosts
  const host = async (id: string) => (await hosts()).find((h) => h.id === id)!
  const createPod = (dataCenterIds: string[]) =>
    platform.call('/v2/pods', {
      method: 'POST',
      json: { name: 'p', image: 'x', cpu: { id: 'cpu3c', vcpuCount: 2 }, dataCenterIds },
    })

  beforeAll(async () => {
    platform = await store.start(
      { hosts: { probeIntervalMs: 100, probeTimeoutMs: 2000, failuresBeforeDown: 2 } },
      { fleetYaml: FLEET },
    )
  })

  afterAll(async () => {
    await platform?.close()
  })

  it('shows a real host without an engine DOWN with the reason, and this machine UP', async () => {
    const real = await waitFor(
      () => host('real-cpu-1'),
      (h) => h.state === 'DOWN',
    )
    expect(real.stateReason).toMatch(/declared real \(simulated: false\) but names no engine/)
    expect(real).toMatchObject({ runtime: 'no runtime', placeable: false, schedule: 'ACTIVE' })
    expect(await host('local')).toMatchObject({
      state: 'UP',
      placeable: true,
      runtime: 'this machine (process driver)',
    })
  })

  it('never runs a pod of a real host without an engine anywhere, and says why', async () => {
    const response = await createPod(['EU-SE-1'])
    const problem = await json<Problem>(response, 409)
    expect(problem.detail).toMatch(
      /^no host has 2 free vCPUs of cpu3c .* in EU-SE-1: the hosts that would take it take no new pods now \(real-cpu-1 is DOWN since .*names no engine/,
    )
    // The catalog offers nothing there.
    const dc = await json<{ cpuAvailability: { id: string; availability: string }[] }>(
      await platform.call('/v2/catalog/datacenters/EU-SE-1?include=CPU_AVAILABILITY'),
    )
    expect(dc.cpuAvailability).toEqual([
      { id: 'cpu3c', name: expect.any(String), availability: 'NONE' },
    ])
  })

  it('cordons, drains and uncordons a host, and places pods by it', async () => {
    const cordoned = await json<HostJson>(
      await platform.call('/v2/admin/hosts/local/cordon', { method: 'POST' }),
    )
    expect(cordoned).toMatchObject({
      schedule: 'CORDONED',
      placeable: false,
      unplaceableReason: 'is cordoned',
    })
    expect((await json<Problem>(await createPod(['EU-RO-1']), 409)).detail).toMatch(
      /take no new pods now \(local is cordoned\)/,
    )
    await json(await platform.call('/v2/admin/hosts/local/uncordon', { method: 'POST' }))
    const pod = await json<{ id: string; machine?: unknown }>(await createPod(['EU-RO-1']), 201)

    const drained = await json<{ host: HostJson; podsLeft: { id: string; status: string }[] }>(
      await platform.call('/v2/admin/hosts/local/drain', { method: 'POST' }),
    )
    expect(drained.host).toMatchObject({ schedule: 'DRAINING', placeable: false, podCount: 1 })
    expect(drained.podsLeft.map((p) => p.id)).toEqual([pod.id])
    const one = await json<HostJson & { pods: { id: string }[] }>(
      await platform.call('/v2/admin/hosts/local'),
    )
    expect(one.pods.map((p) => p.id)).toEqual([pod.id])
    // This machine may have room for one pod only: with it gone, only the drain stands in the way.
    expect((await platform.call(`/v2/pods/${pod.id}`, { method: 'DELETE' })).status).toBe(204)
    expect((await json<Problem>(await createPod(['EU-RO-1']), 409)).detail).toMatch(
      /local is draining/,
    )

    const metrics = await (await platform.call('/metrics')).text()
    expect(metrics).toMatch(/^podyard_hosts\{state="DOWN"\} 1$/m)
    expect(metrics).toMatch(/^podyard_hosts\{state="UP"\} 1$/m)
    expect(metrics).toMatch(/^podyard_hosts_schedule\{schedule="DRAINING"\} 1$/m)

    await json(await platform.call('/v2/admin/hosts/local/uncordon', { method: 'POST' }))
    expect((await host('local')).schedule).toBe('ACTIVE')
    await json(await createPod(['EU-RO-1']), 201)
  })

  it('keeps hosts to the admin, and answers 404 for a host it does not have', async () => {
    const other = await otherAccountKey(platform, `hosts-${store.name}@example.com`)
    expect((await platform.call('/v2/admin/hosts', { key: other })).status).toBe(403)
    expect(
      (await platform.call('/v2/admin/hosts/local/cordon', { method: 'POST', key: other })).status,
    ).toBe(403)
    const missing = await json<Problem>(await platform.call('/v2/admin/hosts/nope'), 404)
    expect(missing.detail).toBe('host nope not found')
  })

  it('lists, shows and cordons hosts from the CLI', async () => {
    const flags = ['--url', platform.url, '--api-key', TEST_ADMIN_KEY]
    const list = await runCli(['hosts', 'list', ...flags])
    expect(list.code).toBe(0)
    expect(list.stdout).toMatch(/real-cpu-1\s+EU-SE-1\s+DOWN\s+ACTIVE/)
    expect(list.stdout).toMatch(/local\s+EU-RO-1\s+UP\s+ACTIVE/)
    const cordon = await runCli(['hosts', 'cordon', 'local', ...flags])
    expect(cordon.stdout.trim()).toBe('host local is CORDONED')
    const drain = await runCli(['hosts', 'drain', 'local', ...flags])
    expect(drain.stdout).toContain('host local is DRAINING')
    const get = await runCli(['hosts', 'get', 'real-cpu-1', ...flags])
    expect(get.stdout).toMatch(/state\s+DOWN since .*names no engine/)
    expect((await runCli(['hosts', 'uncordon', 'local', ...flags])).stdout.trim()).toBe(
      'host local is ACTIVE',
    )
    const unknown = await runCli(['hosts', 'get', 'nope', ...flags])
    expect(unknown.code).not.toBe(0)
    expect(unknown.stderr).toContain('host nope not found')
  })
})
