import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPlatform, type Platform } from '../../src/platform.js'
import { startFakeRegistry, type FakeRegistry } from '../support/fake-registry.js'
import { json } from '../support/http.js'
import {
  holdRig,
  localDocker,
  multiHostEnabled,
  readRigLayout,
  rigFleetYaml,
  rigUnavailableReason,
  type RigHost,
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
import { WORKER_IMAGE_CONFIG, workerImageTar } from '../support/worker-image.js'

/**
 * Images ahead of time on the multi-host rig's engines (docs/fleet.md, "Images ahead of time"),
 * over the HTTP API as a member account: a registry on the rig's network (a test registry on
 * the bridge's address, behind basic auth, which the rig's engines pull from over plain HTTP)
 * serves a worker image; creating an endpoint pulls it on the hosts that may run its workers
 * (gpu-node-1 and gpu-node-2, over SSH) and not on gpu-node-3, which is reserved to a pool the
 * member is not bound to; each engine then has the image, and the first job's worker starts
 * without a pull. The endpoint is made before the hosts are first found UP, as just after a
 * start, so the pulls are the leader's catch-up's. Opt-in with PODYARD_TEST_MULTIHOST=1, as
 * multi-host-fleet.test.ts.
 */
const enabled = multiHostEnabled()
if (!enabled)
  console.log('multi-host image tests skipped: set PODYARD_TEST_MULTIHOST=1 (needs the rig up)')

interface HostImageJson {
  hostId: string
  image: string
  state: string
  reason: string | null
}

/** The rig's fleet, gpu-node-3 reserved to pool `elsewhere`. */
function fleetWithPool(layout: RigLayout, volumeRoot: string): string {
  return rigFleetYaml(layout, volumeRoot)
    .split('\n')
    .flatMap((line) =>
      line === '  - id: gpu-node-3' ? [line, '    labels: { pool: elsewhere }'] : [line],
    )
    .join('\n')
}

describe.runIf(enabled)("an endpoint's image pulled ahead of time on the rig's engines", () => {
  let layout: RigLayout
  let dir: string
  let platform: Platform
  let registry: FakeRegistry
  let release: (() => void) | undefined
  let member: string
  let endpointId: string
  const call = (p: string, init: CallInit = {}) =>
    callPlatform(platform.url, p, { ...init, key: member })

  /** Whether the host's engine has the image now. */
  const hasImage = (host: RigHost, image: string) =>
    localDocker(host)
      .getImage(image)
      .inspect()
      .then(
        () => true,
        () => false,
      )

  beforeAll(async () => {
    release = await holdRig()
    const reason = await rigUnavailableReason()
    if (reason) throw new Error(`PODYARD_TEST_MULTIHOST=1 but the rig is not usable: ${reason}`)
    layout = readRigLayout()
    const { tar } = workerImageTar()
    registry = await startFakeRegistry({
      address: layout.bridge.address,
      image: { repository: 'podyard-test/rig-prepulled', tar, config: WORKER_IMAGE_CONFIG },
    })
    // Left by an earlier run: each engine must pull it here.
    for (const host of layout.hosts) {
      await localDocker(host)
        .getImage(registry.image)
        .remove({ force: true })
        .catch(() => undefined)
    }
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-rig-images-'))
    mkdirSync(path.join(dir, '.podyard'))
    writeFileSync(path.join(dir, 'fleet.yaml'), fleetWithPool(layout, path.join(dir, 'shared')))
    platform = await startPlatform(
      testConfig(dir, {
        fleet: path.join(dir, 'fleet.yaml'),
        // The workers on the rig's engines call the job API at the bridge's address.
        host: layout.bridge.address,
        hosts: { probeIntervalMs: 500, probeTimeoutMs: 8_000, failuresBeforeDown: 2 },
        workers: { pingIntervalMs: 2_000 },
        // The rig's engines cannot size a container disk nor know their disk's device here.
        containment: { acceptUnenforced: ['disk', 'diskWrite'] },
      }),
      { logger: pino({ level: 'silent' }) },
    )
    member = await otherAccountKey(platform, 'rig-images@example.com')
  }, 180_000)

  afterAll(async () => {
    if (platform) await stopPlatform(platform)
    await registry?.close()
    for (const host of layout?.hosts ?? []) {
      await localDocker(host)
        .getImage(registry.image)
        .remove({ force: true })
        .catch(() => undefined)
    }
    if (dir) rmSync(dir, { recursive: true, force: true })
    release?.()
  }, 120_000)

  it('pulls it on the eligible hosts before any job, not on the pool-reserved one, and the first worker starts without a pull', async () => {
    // Made at once, before the first probes have found the hosts UP (as just after a start):
    // the leader's catch-up pulls the image once they are.
    const registryId = (
      await json<{ id: string }>(
        await call('/v2/registries', {
          method: 'POST',
          json: { name: 'rig', username: registry.username, password: registry.password },
        }),
        201,
      )
    ).id
    endpointId = (
      await json<{ id: string }>(
        await call('/v2/serverless', {
          method: 'POST',
          json: {
            name: 'rig-prepulled',
            image: registry.image,
            registry: registryId,
            cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
            workers: { min: 0, max: 1 },
          },
        }),
        201,
      )
    ).id
    const rows = await until(
      "the endpoint's image on its hosts",
      async () =>
        (
          await json<{ imageReadiness: HostImageJson[] }>(
            await call(`/v2/serverless/${endpointId}`),
          )
        ).imageReadiness,
      (r) => r.length > 0 && r.every((row) => row.state === 'PRESENT' || row.state === 'FAILED'),
      180_000,
    )
    expect(rows.map((r) => [r.hostId, r.state, r.reason]).sort()).toEqual([
      ['gpu-node-1', 'PRESENT', null],
      ['gpu-node-2', 'PRESENT', null],
    ])
    const [node1, node2, node3] = ['gpu-node-1', 'gpu-node-2', 'gpu-node-3'].map((name) =>
      layout.hosts.find((h) => h.name === name)!,
    )
    expect(await hasImage(node1!, registry.image)).toBe(true)
    expect(await hasImage(node2!, registry.image)).toBe(true)
    expect(await hasImage(node3!, registry.image)).toBe(false)

    // The first job: its worker starts on a host that has the image. The registry is closed
    // first, so a pull at the worker's start would fail the job.
    await registry.close()
    const started = Date.now()
    const done = await json<{ status: string; output?: unknown }>(
      await call(`/v2/${endpointId}/runsync?wait=120000`, {
        method: 'POST',
        json: { input: { echo: 'pulled ahead' } },
      }),
    )
    expect(done.status, JSON.stringify(done)).toBe('COMPLETED')
    console.log(
      `rig: first job of an endpoint whose image was pulled ahead: ${Date.now() - started} ms (worker cold start included, no pull)`,
    )
  }, 420_000)
})
