import { execFileSync, spawn } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../support/cli.js'
import { simulatedDockerFleet } from '../support/docker-fleet.js'
import { startFakeRegistry, type FakeRegistry } from '../support/fake-registry.js'
import { json } from '../support/http.js'
import {
  otherAccountKey,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type TestPlatform,
} from '../support/platform.js'
import { until } from '../support/until.js'
import { WORKER_IMAGE_CONFIG, workerImageTar } from '../support/worker-image.js'

/**
 * Images ahead of time on this machine's engine (PODYARD_TEST_DOCKER=1): an endpoint's image is
 * pulled from a registry on 127.0.0.1 (with the account's registry credentials) on the hosts
 * that may run its workers as soon as the endpoint is created, before any job; a worker's cold
 * start there then does no pull (the engine reports no pull event); the admin lists and starts
 * pulls over REST and the CLI; a registry the operator runs (Debian's docker-registry, on
 * 127.0.0.1) serves an endpoint's image pushed there once.
 */
const enabled = process.env.PODYARD_TEST_DOCKER === '1'
if (!enabled) console.log('image pre-pull tests skipped: set PODYARD_TEST_DOCKER=1 (needs dockerd)')

/** A TCP port free on 127.0.0.1 now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0))
    })
  })
}

interface HostImageJson {
  hostId: string
  startedAt: string
  image: string
  state: string
  reason: string | null
  bytesDone: number | null
  bytesTotal: number | null
}

describe.runIf(enabled)('images pulled ahead of time', () => {
  const docker = new Docker()
  let platform: TestPlatform
  let registry: FakeRegistry
  let busyboxRegistry: FakeRegistry
  let member: string
  let endpointId: string
  let registryId: string

  beforeAll(async () => {
    const { tar } = workerImageTar()
    registry = await startFakeRegistry({
      image: { repository: 'podyard-test/prepulled-worker', tar, config: WORKER_IMAGE_CONFIG },
    })
    busyboxRegistry = await startFakeRegistry()
    platform = await startTestPlatform(
      {
        driver: 'docker',
        workers: { pingIntervalMs: 2_000 },
        // The member's workers run on this engine, whose overlay2 cannot bound a disk.
        containment: { acceptUnenforced: ['disk'] },
      },
      { fleetYaml: simulatedDockerFleet({ localHost: true }) },
    )
    member = await otherAccountKey(platform, 'images-member@example.com')
  }, 180_000)

  afterAll(async () => {
    if (platform) await platform.close()
    for (const r of [registry, busyboxRegistry]) {
      if (!r) continue
      await r.close()
      execFileSync('docker', ['image', 'rm', '-f', r.image], { stdio: 'ignore' })
    }
  }, 60_000)

  /** The engine's pull events of `image` since `since` (seconds), as `docker events` reports. */
  const pullEvents = async (image: string, since: number): Promise<number> => {
    const stream = (await docker.getEvents({
      since,
      until: Math.ceil(Date.now() / 1000) + 1,
      filters: { type: ['image'], event: ['pull'] },
    })) as unknown as NodeJS.ReadableStream
    let text = ''
    for await (const chunk of stream) text += chunk.toString()
    return text
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as { id?: string; Actor?: { ID?: string } })
      .filter((e) => (e.Actor?.ID ?? e.id ?? '').startsWith(image.replace(/:1$/, ''))).length
  }

  const readiness = async (): Promise<HostImageJson[]> =>
    (
      await json<{ imageReadiness: HostImageJson[] }>(
        await platform.call(`/v2/serverless/${endpointId}`, { key: member }),
      )
    ).imageReadiness

  it("pulls a new endpoint's image on its hosts before the first job, and the worker's cold start pulls nothing", async () => {
    const since = Math.floor(Date.now() / 1000) - 1
    registryId = (
      await json<{ id: string }>(
        await platform.call('/v2/registries', {
          method: 'POST',
          key: member,
          json: { name: 'local', username: registry.username, password: registry.password },
        }),
        201,
      )
    ).id
    endpointId = (
      await json<{ id: string }>(
        await platform.call('/v2/serverless', {
          method: 'POST',
          key: member,
          json: {
            name: 'prepulled',
            image: registry.image,
            registry: registryId,
            cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
            workers: { min: 0, max: 1 },
          },
        }),
        201,
      )
    ).id
    // No job yet: the pull is the platform's own, ahead of time.
    const rows = await until(
      "the endpoint's image on its hosts",
      readiness,
      (r) => r.length > 0 && r.every((row) => row.state === 'PRESENT'),
      120_000,
    )
    expect(rows.map((r) => r.hostId)).toContain('local')
    expect(rows.every((r) => r.image === registry.image)).toBe(true)
    await docker.getImage(registry.image).inspect()
    expect(await pullEvents(registry.image, since)).toBeGreaterThan(0)
    const workers = await json<{ workers: unknown[] }>(
      await platform.call(`/v2/serverless/${endpointId}/workers`, { key: member }),
    )
    expect(workers.workers).toHaveLength(0)

    // The worker's cold start: the image is there, so the engine pulls nothing.
    const beforeJob = Math.floor(Date.now() / 1000)
    const done = await json<{ status: string }>(
      await platform.call(`/v2/${endpointId}/runsync?wait=90000`, {
        method: 'POST',
        key: member,
        json: { input: { echo: 'warm image' } },
      }),
    )
    expect(done.status, JSON.stringify(done)).toBe('COMPLETED')
    expect(await pullEvents(registry.image, beforeJob)).toBe(0)
  }, 240_000)

  it("pulls an endpoint's image on a host that takes placements again later, without anyone asking", async () => {
    const admin = (...args: string[]) =>
      runCli([...args, '--url', platform.url, '--api-key', TEST_ADMIN_KEY])
    const cordoned = await admin('hosts', 'cordon', 'local')
    expect(cordoned.code, cordoned.stderr).toBe(0)
    const auth = await json<{ id: string }>(
      await platform.call('/v2/registries', {
        method: 'POST',
        key: member,
        json: {
          name: 'while-cordoned',
          username: busyboxRegistry.username,
          password: busyboxRegistry.password,
        },
      }),
      201,
    )
    const endpoint = await json<{ id: string }>(
      await platform.call('/v2/serverless', {
        method: 'POST',
        key: member,
        json: {
          name: 'made-while-cordoned',
          image: busyboxRegistry.image,
          registry: auth.id,
          cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
          workers: { min: 0, max: 1 },
        },
      }),
      201,
    )
    const readinessOf = async () =>
      (
        await json<{ imageReadiness: HostImageJson[] }>(
          await platform.call(`/v2/serverless/${endpoint.id}`, { key: member }),
        )
      ).imageReadiness
    // Its only host takes no placements: nothing is pulled, and no host is listed.
    expect(await readinessOf()).toEqual([])
    const uncordoned = await admin('hosts', 'uncordon', 'local')
    expect(uncordoned.code, uncordoned.stderr).toBe(0)
    // The leader's catch-up pulls it there once the host takes placements again.
    const rows = await until(
      "the endpoint's image on the uncordoned host",
      readinessOf,
      (r) => r.some((row) => row.hostId === 'local' && row.state === 'PRESENT'),
      60_000,
    )
    expect(rows).toEqual([
      expect.objectContaining({ hostId: 'local', image: busyboxRegistry.image, reason: null }),
    ])
    await platform.call(`/v2/serverless/${endpoint.id}`, { method: 'DELETE', key: member })
  }, 120_000)

  it('lists the images on each host for the admin, and to nobody else', async () => {
    const { images } = await json<{ images: HostImageJson[] }>(
      await platform.call('/v2/admin/hosts/images?hostId=local'),
    )
    expect(images).toContainEqual(
      expect.objectContaining({ hostId: 'local', image: registry.image, state: 'PRESENT' }),
    )
    expect((await platform.call('/v2/admin/hosts/images', { key: member })).status).toBe(403)
    const pull = await platform.call('/v2/admin/hosts/images/pull', {
      method: 'POST',
      key: member,
      json: { image: busyboxRegistry.image },
    })
    expect(pull.status).toBe(403)
    const cli = await runCli([
      'hosts',
      'images',
      '--host',
      'local',
      '--url',
      platform.url,
      '--api-key',
      TEST_ADMIN_KEY,
    ])
    expect(cli.code, cli.stderr).toBe(0)
    expect(cli.stdout).toMatch(
      new RegExp(`local\\s+${registry.image.replace(/[.]/g, '\\.')}\\s+PRESENT`),
    )
  }, 60_000)

  it("pulls a pod's image on a chosen host from the CLI with the admin's registry auth, and reports a failed pull", async () => {
    const flags = ['--url', platform.url, '--api-key', TEST_ADMIN_KEY]
    const auth = await json<{ id: string }>(
      await platform.call('/v2/registries', {
        method: 'POST',
        json: {
          name: 'admin-local',
          username: busyboxRegistry.username,
          password: busyboxRegistry.password,
        },
      }),
      201,
    )
    const pulled = await runCli([
      'hosts',
      'pull',
      busyboxRegistry.image,
      '--host',
      'local',
      '--registry-auth',
      auth.id,
      ...flags,
    ])
    expect(pulled.code, pulled.stderr).toBe(0)
    expect(pulled.stdout).toMatch(/local: PRESENT/)
    await docker.getImage(busyboxRegistry.image).inspect()

    // Without the credentials the registry refuses: FAILED with the engine's reason, exit 1.
    execFileSync('docker', ['image', 'rm', '-f', busyboxRegistry.image], { stdio: 'ignore' })
    const refused = await runCli([
      'hosts',
      'pull',
      busyboxRegistry.image,
      '--host',
      'local',
      ...flags,
    ])
    expect(refused.code).toBe(1)
    expect(refused.stdout).toMatch(/local: FAILED/)
    expect(refused.stderr).toMatch(/the pull failed on local/)
    expect(`${refused.stdout}${refused.stderr}`).not.toContain(busyboxRegistry.password)

    const missing = await runCli([
      'hosts',
      'pull',
      busyboxRegistry.image,
      '--host',
      'nope',
      ...flags,
    ])
    expect(missing.code).toBe(4)
    expect(missing.stderr).toMatch(/host nope not found/)
  }, 120_000)

  it("pulls an endpoint's image from a registry the operator runs (Debian's docker-registry), as air-gapped hosts do", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'podyard-airgap-registry-'))
    const port = await freePort()
    writeFileSync(
      path.join(dir, 'config.yml'),
      [
        'version: 0.1',
        'storage:',
        '  filesystem:',
        `    rootdirectory: ${path.join(dir, 'data')}`,
        'http:',
        `  addr: 127.0.0.1:${port}`,
        '',
      ].join('\n'),
    )
    const registryProcess = spawn('docker-registry', ['serve', path.join(dir, 'config.yml')], {
      stdio: 'ignore',
    })
    const image = `127.0.0.1:${port}/team/airgapped-${process.pid}:1`
    try {
      await until(
        'the registry to answer',
        () =>
          fetch(`http://127.0.0.1:${port}/v2/`).then(
            (r) => r.status,
            () => 0,
          ),
        (status) => status === 200,
        30_000,
      )
      // Pushed there once, from a machine that has the image; the hosts pull it from there.
      const root = path.join(dir, 'root')
      mkdirSync(path.join(root, 'bin'), { recursive: true })
      copyFileSync('/bin/busybox', path.join(root, 'bin', 'busybox'))
      symlinkSync('busybox', path.join(root, 'bin', 'sh'))
      execFileSync('sh', ['-c', `tar -C "${root}" -c bin | docker import - "${image}"`])
      execFileSync('docker', ['push', image], { stdio: 'ignore' })
      execFileSync('docker', ['image', 'rm', '-f', image], { stdio: 'ignore' })

      const endpoint = await json<{ id: string }>(
        await platform.call('/v2/serverless', {
          method: 'POST',
          key: member,
          json: {
            name: 'airgapped',
            image,
            cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
            workers: { max: 1 },
          },
        }),
        201,
      )
      const rows = await until(
        "the registry's image on the endpoint's hosts",
        async () =>
          (
            await json<{ imageReadiness: HostImageJson[] }>(
              await platform.call(`/v2/serverless/${endpoint.id}`, { key: member }),
            )
          ).imageReadiness,
        (r) => r.length > 0 && r.every((row) => row.state !== 'PULLING' && row.state !== 'ABSENT'),
        60_000,
      )
      expect(rows.map((r) => [r.hostId, r.state, r.reason])).toContainEqual([
        'local',
        'PRESENT',
        null,
      ])
      await docker.getImage(image).inspect()
    } finally {
      registryProcess.kill('SIGTERM')
      execFileSync('docker', ['image', 'rm', '-f', image], { stdio: 'ignore' })
      rmSync(dir, { recursive: true, force: true })
    }
  }, 120_000)

  it("pulls again when REST changes an endpoint's image and when GraphQL saveEndpoint creates one", async () => {
    const imagePresent = () =>
      docker
        .getImage(busyboxRegistry.image)
        .inspect()
        .then(
          () => true,
          () => false,
        )
    const removeImage = () =>
      execFileSync('docker', ['image', 'rm', '-f', busyboxRegistry.image], { stdio: 'ignore' })
    const auth = await json<{ id: string }>(
      await platform.call('/v2/registries', {
        method: 'POST',
        key: member,
        json: {
          name: 'busybox',
          username: busyboxRegistry.username,
          password: busyboxRegistry.password,
        },
      }),
      201,
    )
    removeImage()
    await json(
      await platform.call(`/v2/serverless/${endpointId}`, {
        method: 'PATCH',
        key: member,
        json: { image: busyboxRegistry.image, registry: auth.id },
      }),
    )
    await until('the changed image on the host', imagePresent, (present) => present, 60_000)
    const rows = await until(
      'the changed image ready',
      readiness,
      (r) => r.some((row) => row.hostId === 'local' && row.state === 'PRESENT'),
      30_000,
    )
    expect(rows.every((r) => r.image === busyboxRegistry.image)).toBe(true)

    removeImage()
    const template = await json<{ id: string }>(
      await platform.call('/v2/templates', {
        method: 'POST',
        key: member,
        json: {
          name: 'busybox',
          image: busyboxRegistry.image,
          registry: auth.id,
          serverless: true,
        },
      }),
      201,
    )
    expect(await imagePresent()).toBe(false)
    const saved = await platform.call('/graphql', {
      method: 'POST',
      key: member,
      json: {
        query: `mutation { saveEndpoint(input: { name: "from-graphql", templateId: "${template.id}", instanceIds: ["cpu3c-2-4"] }) { id } }`,
      },
    })
    const body = (await saved.json()) as {
      data?: { saveEndpoint: { id: string } }
      errors?: unknown
    }
    expect(body.errors).toBeUndefined()
    await until(
      "the GraphQL endpoint's image on the host",
      imagePresent,
      (present) => present,
      60_000,
    )
  }, 180_000)

  it("pulls only on the hosts that may run the endpoint's workers: its GPU type or CPU flavor", async () => {
    const hostsOf = async (body: Record<string, unknown>) => {
      const created = await json<{ id: string }>(
        await platform.call('/v2/serverless', {
          method: 'POST',
          key: member,
          json: { image: registry.image, registry: registryId, workers: { max: 1 }, ...body },
        }),
        201,
      )
      const rows = await until(
        'the readiness of the endpoint',
        async () =>
          (
            await json<{ imageReadiness: HostImageJson[] }>(
              await platform.call(`/v2/serverless/${created.id}`, { key: member }),
            )
          ).imageReadiness,
        (r) => r.every((row) => row.state === 'PRESENT'),
        60_000,
      )
      return rows.map((r) => r.hostId).sort()
    }
    // The simulated L4 host (AMPERE_24) takes the GPU endpoint's workers, this machine the CPU one's.
    expect(await hostsOf({ name: 'l4', gpu: { pools: ['AMPERE_24'] } })).toEqual(['sim-l4-1'])
    expect(await hostsOf({ name: 'cpu', cpu: [{ id: 'cpu3c', vcpuCount: 2 }] })).toEqual(['local'])
    const { images } = await json<{ images: HostImageJson[] }>(
      await platform.call(`/v2/admin/hosts/images?image=${encodeURIComponent(registry.image)}`),
    )
    expect(images.map((r) => [r.hostId, r.state])).toEqual([
      ['local', 'PRESENT'],
      ['sim-l4-1', 'PRESENT'],
    ])
  }, 120_000)

  it('joins a pull in flight: a second pull of the image on the host starts none of its own', async () => {
    const slow = await startFakeRegistry({ blobDelayMs: 1_500 })
    try {
      const auth = await json<{ id: string }>(
        await platform.call('/v2/registries', {
          method: 'POST',
          key: member,
          json: { name: 'slow', username: slow.username, password: slow.password },
        }),
        201,
      )
      const created = await json<{ id: string }>(
        await platform.call('/v2/serverless', {
          method: 'POST',
          key: member,
          json: {
            name: 'slow',
            image: slow.image,
            registry: auth.id,
            cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
            workers: { max: 1 },
          },
        }),
        201,
      )
      const readinessOf = async () =>
        (
          await json<{ imageReadiness: HostImageJson[] }>(
            await platform.call(`/v2/serverless/${created.id}`, { key: member }),
          )
        ).imageReadiness.find((r) => r.hostId === 'local')
      const first = await until(
        'the pull to start',
        readinessOf,
        (row) => row?.state === 'PULLING',
        30_000,
      )
      const joined = await json<{ images: Array<HostImageJson & { startedAt: string }> }>(
        await platform.call('/v2/admin/hosts/images/pull', {
          method: 'POST',
          json: { image: slow.image, hostIds: ['local'] },
        }),
        202,
      )
      expect(joined.images).toEqual([
        expect.objectContaining({ hostId: 'local', state: 'PULLING', startedAt: first!.startedAt }),
      ])
      const done = await until(
        'the pull to end',
        readinessOf,
        (row) => row?.state === 'PRESENT',
        60_000,
      )
      expect(done!.startedAt).toBe(first!.startedAt)
    } finally {
      await slow.close()
      execFileSync('docker', ['image', 'rm', '-f', slow.image], { stdio: 'ignore' })
    }
  }, 120_000)
})
