import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/load-config.js'
import type { Config } from '../../src/config/schema.js'
import { startPlatform, type Platform } from '../../src/platform.js'
import { DockerDriver } from '../../src/runtime/docker/docker-driver.js'
import { KyselyServerIdRepo } from '../../src/store/server-id-repo.js'
import { runCli } from '../support/cli.js'
import { startFakeRegistry } from '../support/fake-registry.js'
import { json } from '../support/http.js'
import {
  otherAccountKey,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type TestPlatform,
} from '../support/platform.js'
import { simulatedDockerFleet } from '../support/docker-fleet.js'

/**
 * Pods on the docker driver through the real HTTP API, against a real Docker engine with the
 * local test images (test/support/docker-test-images.sh). Skipped without PODYARD_TEST_DOCKER=1.
 */
const enabled = process.env.PODYARD_TEST_DOCKER === '1'
if (!enabled) console.log('docker pod tests skipped: set PODYARD_TEST_DOCKER=1 (needs dockerd)')

const IMAGE = 'podyard-conformance/plain:1'

interface PodJson {
  id: string
  status: string
  statusReason: string | null
  runtime: { ports: { private: number; public: number }[] } | null
}

/** `docker ps -a` / `docker volume ls` names carrying a label, to prove nothing is left. */
function dockerNames(kind: 'container' | 'volume', label: string): string[] {
  const args =
    kind === 'container'
      ? ['ps', '-a', '--filter', `label=${label}`, '--format', '{{.Names}}']
      : ['volume', 'ls', '--filter', `label=${label}`, '--format', '{{.Name}}']
  return execFileSync('docker', args, { encoding: 'utf8' }).split('\n').filter(Boolean)
}

async function waitForStatus(
  call: (p: string) => Promise<Response>,
  id: string,
  status: string,
  timeoutMs = 30_000,
): Promise<PodJson> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const pod = await json<PodJson>(await call(`/v2/pods/${id}`))
    if (pod.status === status) return pod
    if (Date.now() > deadline)
      throw new Error(`pod ${id} is ${pod.status} (${pod.statusReason}), not ${status}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/** A busybox httpd serving the persistent volume, after noting this boot in it. */
const SERVE_VOLUME =
  'echo "boot $(date +%s%N)" >> /workspace/boots.txt; exec httpd -f -p 8080 -h /workspace'

/**
 * A simulated GPU host under the docker driver: this machine has no GPU, but a GPU pod (the only
 * kind with a persistent volume disk) runs in a container with virtual GPU indices.
 */
const SIMULATED_GPU_FLEET = simulatedDockerFleet()

describe('choosing the docker driver', () => {
  it('serve --driver docker refuses to start, saying so, when the engine does not answer', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'podyard-docker-down-'))
    try {
      const refused = await runCli(
        ['serve', '--port', '0', '--data-dir', dir, '--fleet', 'none', '--driver', 'docker'],
        { PODYARD_DOCKER_SOCKET: path.join(dir, 'no-dockerd.sock') },
      )
      expect(refused.code).toBe(2)
      expect(refused.stderr).toMatch(
        /^podyard: the docker driver is configured but the Docker engine at .*no-dockerd\.sock does not answer/,
      )
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe.skipIf(!enabled)('pods on the docker driver', () => {
  const cleanups: (() => Promise<void>)[] = []
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  })

  it('create -> RUNNING with a reachable port -> stop -> start with the volume intact -> terminate', async () => {
    const platform: TestPlatform = await startTestPlatform({ fleet: 'none', driver: 'docker' })
    cleanups.push(() => platform.close())
    const serverId = (await new KyselyServerIdRepo(platform.store.db).get())!
    const call = (p: string, init?: Parameters<TestPlatform['call']>[1]) => platform.call(p, init)

    // A CPU pod's persistent storage is a network volume (bound from the host); a GPU pod's
    // volume disk is a named Docker volume (docker-driver.test.ts), and this machine has no GPU.
    const volume = await json<{ id: string }>(
      await call('/v2/network-volumes', {
        method: 'POST',
        json: { name: 'data', size: 10, dataCenterId: 'LOCAL-1' },
      }),
      201,
    )
    const created = await json<PodJson>(
      await call('/v2/pods', {
        method: 'POST',
        json: {
          name: 'web',
          image: IMAGE,
          cpu: { id: 'cpu3c', vcpuCount: 2 },
          ports: ['8080/http'],
          args: SERVE_VOLUME,
          mounts: { network: [{ volumeId: volume.id, path: '/workspace' }] },
        },
      }),
      201,
    )
    const running = await waitForStatus(call, created.id, 'RUNNING')
    const port = running.runtime!.ports[0]!.public
    const first = await (await fetch(`http://127.0.0.1:${port}/boots.txt`)).text()
    expect(first.trim().split('\n')).toHaveLength(1)
    const podLabel = `podyard.workload=${created.id}`
    expect(dockerNames('container', podLabel)).toHaveLength(1)
    // The network volume is the host directory itself.
    const onHost = path.join(platform.dataDir, '.podyard', 'volumes', volume.id, 'boots.txt')
    expect(readFileSync(onHost, 'utf8')).toBe(first)

    await json(
      await call(`/v2/pods/${created.id}/action`, { method: 'POST', json: { action: 'stop' } }),
    )
    await waitForStatus(call, created.id, 'EXITED')
    await expect
      .poll(() =>
        fetch(`http://127.0.0.1:${port}/`).then(
          () => 'up',
          () => 'gone',
        ),
      )
      .toBe('gone')

    await startKeepsBootsAndTerminateLeavesNothing(call, created.id, first, serverId)
  })

  it("runs RunPod's JSON args (dstack's form) as the container's entrypoint and command", async () => {
    const platform = await startTestPlatform({ fleet: 'none', driver: 'docker' })
    cleanups.push(() => platform.close())
    const call = (p: string, init?: Parameters<TestPlatform['call']>[1]) => platform.call(p, init)
    const form = {
      cmd: ['echo "from json" && echo "to stderr" >&2 && exec sleep 300'],
      entrypoint: ['/bin/sh', '-c'],
    }
    const created = await json<PodJson>(
      await call('/v2/pods', {
        method: 'POST',
        json: {
          name: 'json-args',
          image: IMAGE,
          cpu: { id: 'cpu3c', vcpuCount: 2 },
          args: JSON.stringify(form),
        },
      }),
      201,
    )
    // Run as a shell line, this text fails at once ("{cmd:: not found") and the pod never runs.
    await waitForStatus(call, created.id, 'RUNNING')
    const logs = async () => {
      const text = await (
        await call(`/v2/pods/${created.id}/logs?follow=false&source=container`)
      ).text()
      return [...text.matchAll(/"line":"([^"]*)"/g)].map((match) => match[1])
    }
    await expect.poll(logs, { timeout: 20_000 }).toEqual(['from json', 'to stderr'])
    const [name] = dockerNames('container', `podyard.workload=${created.id}`)
    const config = JSON.parse(
      execFileSync('docker', ['inspect', '--format', '{{json .Config}}', name!], {
        encoding: 'utf8',
      }),
    ) as { Entrypoint: string[]; Cmd: string[] }
    expect(config.Entrypoint.slice(-2)).toEqual(['/bin/sh', '-c'])
    expect(config.Cmd).toEqual(form.cmd)
    await call(`/v2/pods/${created.id}`, { method: 'DELETE' })
  })

  it("caps a tenant's container log on disk (workloadLogs.maxMb): json-file, two files of half", async () => {
    const platform = await startTestPlatform({
      fleet: 'none',
      driver: 'docker',
      workloadLogs: { maxMb: 1 },
      // A member's pod runs whether or not the engine sizes container disks (overlay2 on ext4
      // does not): this test is about its log (containment-docker.test.ts: the disk).
      containment: { acceptUnenforced: ['disk'] },
    })
    cleanups.push(() => platform.close())
    const tenant = await otherAccountKey(platform, 'docker-flood@example.com')
    const call = (p: string, init?: Parameters<TestPlatform['call']>[1]) =>
      platform.call(p, { key: tenant, ...init })
    // 300 000 lines: 2 MB of output, about 25 MB as Docker's json-file lines.
    const created = await json<PodJson>(
      await call('/v2/pods', {
        method: 'POST',
        json: {
          name: 'flood',
          image: IMAGE,
          cpu: { id: 'cpu3c', vcpuCount: 2 },
          args: 'seq 1 300000; exec sleep 300',
        },
      }),
      201,
    )
    await waitForStatus(call, created.id, 'RUNNING')
    const [name] = dockerNames('container', `podyard.workload=${created.id}`)
    const inspection = JSON.parse(
      execFileSync('docker', ['inspect', name!], { encoding: 'utf8' }),
    )[0] as { LogPath: string; HostConfig: { LogConfig: unknown } }
    expect(inspection.HostConfig.LogConfig).toEqual({
      Type: 'json-file',
      Config: { 'max-size': '524288', 'max-file': '2' },
    })
    const tail = async () => {
      const text = await (
        await call(`/v2/pods/${created.id}/logs?follow=false&source=container&tail=3`)
      ).text()
      return [...text.matchAll(/"line":"([^"]*)"/g)].map((match) => match[1])
    }
    await expect.poll(tail, { timeout: 30_000 }).toEqual(['299998', '299999', '300000'])
    // Docker looks after each write: a file may pass max-size by one line.
    const onDisk = [inspection.LogPath, `${inspection.LogPath}.1`]
      .filter((file) => existsSync(file))
      .reduce((sum, file) => sum + statSync(file).size, 0)
    expect(existsSync(`${inspection.LogPath}.1`)).toBe(true)
    expect(onDisk).toBeLessThanOrEqual(1024 * 1024 + 1024)
  })

  it('a GPU pod on a simulated docker host keeps its persistent volume across stop -> start', async () => {
    const platform = await startTestPlatform({}, { fleetYaml: SIMULATED_GPU_FLEET })
    cleanups.push(() => platform.close())
    const serverId = (await new KyselyServerIdRepo(platform.store.db).get())!
    const call = (p: string, init?: Parameters<TestPlatform['call']>[1]) => platform.call(p, init)

    const created = await json<PodJson>(
      await call('/v2/pods', {
        method: 'POST',
        json: {
          name: 'gpu-web',
          image: IMAGE,
          gpu: { id: 'NVIDIA L4', count: 1 },
          ports: ['8080/http'],
          args:
            'echo "gpus=$CUDA_VISIBLE_DEVICES/$NVIDIA_VISIBLE_DEVICES" > /workspace/gpus.txt; ' +
            SERVE_VOLUME,
          mounts: { persistent: { size: 10, path: '/workspace' } },
        },
      }),
      201,
    )
    const running = await waitForStatus(call, created.id, 'RUNNING')
    const port = running.runtime!.ports[0]!.public
    const first = await (await fetch(`http://127.0.0.1:${port}/boots.txt`)).text()
    expect(first.trim().split('\n')).toHaveLength(1)
    // The virtual GPU index, as under the process driver; no device was requested.
    expect(await (await fetch(`http://127.0.0.1:${port}/gpus.txt`)).text()).toMatch(
      /^gpus=([01])\/\1\n$/,
    )
    const podLabel = `podyard.workload=${created.id}`
    expect(dockerNames('container', podLabel)).toHaveLength(1)
    // The volume disk is a named Docker volume, not a host directory of the pod.
    expect(dockerNames('volume', podLabel)).toHaveLength(1)

    await json(
      await call(`/v2/pods/${created.id}/action`, { method: 'POST', json: { action: 'stop' } }),
    )
    await waitForStatus(call, created.id, 'EXITED')
    await startKeepsBootsAndTerminateLeavesNothing(call, created.id, first, serverId)
  })

  it('takes away the tenant network made for a container that did not start', async () => {
    const platform = await startTestPlatform(
      { containment: { acceptUnenforced: ['disk'] } },
      { fleetYaml: SIMULATED_GPU_FLEET },
    )
    cleanups.push(() => platform.close())
    const serverId = (await new KyselyServerIdRepo(platform.store.db).get())!
    const member = await otherAccountKey(platform, 'docker-failed-start@example.com')
    const call = (p: string, init: Parameters<TestPlatform['call']>[1] = {}) =>
      platform.call(p, { ...init, key: member })
    const networks = () =>
      execFileSync(
        'docker',
        ['network', 'ls', '--filter', `label=podyard.server=${serverId}`, '--format', '{{.Name}}'],
        { encoding: 'utf8' },
      )
        .split('\n')
        .filter(Boolean)

    // Its volume over a file of the image: the engine creates the container, then refuses to
    // start it ("... /etc/passwd is not directory").
    const created = await json<PodJson>(
      await call('/v2/pods', {
        method: 'POST',
        json: {
          name: 'never-starts',
          image: IMAGE,
          gpu: { id: 'NVIDIA L4', count: 1 },
          args: 'exec sleep 300',
          mounts: { persistent: { size: 10, path: '/etc/passwd' } },
        },
      }),
      201,
    )
    const failed = await waitForStatus(call, created.id, 'ERROR', 60_000)
    expect(failed.statusReason).toMatch(/not directory/)
    expect(dockerNames('container', `podyard.workload=${created.id}`)).toEqual([])
    await expect.poll(networks, { timeout: 20_000 }).toEqual([])
    await call(`/v2/pods/${created.id}`, { method: 'DELETE' })
  })

  it("pulls a private image with the pod's registry; a refused one is the pod's ERROR reason", async () => {
    const registry = await startFakeRegistry()
    const platform = await startTestPlatform({ fleet: 'none', driver: 'docker' })
    cleanups.push(async () => {
      await platform.close()
      await registry.close()
      execFileSync('docker', ['image', 'rm', '-f', registry.image], { stdio: 'ignore' })
    })
    const call = (p: string, init?: Parameters<TestPlatform['call']>[1]) => platform.call(p, init)
    const registryOf = async (password: string) =>
      (
        await json<{ id: string }>(
          await call('/v2/registries', {
            method: 'POST',
            json: { name: `r-${password}`, username: registry.username, password },
          }),
          201,
        )
      ).id
    const podOf = async (name: string, image: string, registryId?: string) =>
      json<PodJson>(
        await call('/v2/pods', {
          method: 'POST',
          json: {
            name,
            image,
            cpu: { id: 'cpu3c', vcpuCount: 2 },
            ...(registryId ? { registry: registryId } : {}),
          },
        }),
        201,
      )

    // One after the other: this machine's host has room for one 2-vCPU pod, and ERROR frees it.
    const wrongPassword = `wrong-${process.pid}`
    const refused = await podOf(
      'refused',
      registry.image.replace(':1', ':other'),
      await registryOf(wrongPassword),
    )
    const refusedPod = await waitForStatus(call, refused.id, 'ERROR')
    expect(refusedPod.statusReason).toMatch(
      /^could not start: could not pull image 127\.0\.0\.1:\d+\/podyard-test\/pulled:other: the registry refused the pod's registry credentials \(/,
    )
    expect(refusedPod.statusReason).not.toContain(wrongPassword)
    const absent = await podOf('absent', `${registry.host}/podyard-test/absent:1`)
    const absentPod = await waitForStatus(call, absent.id, 'ERROR')
    expect(absentPod.statusReason).toMatch(
      /^could not start: could not pull image .*podyard-test\/absent:1: the registry wants credentials/,
    )
    const good = await podOf('good', registry.image, await registryOf(registry.password))
    await waitForStatus(call, good.id, 'RUNNING')
    const logs = await (await call(`/v2/pods/${good.id}/logs?follow=false`)).text()
    expect(logs).toContain('pulled image ran')
  })

  it('adopts its containers after a restart, removes orphans, never touches others', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'podyard-docker-adopt-'))
    // A data directory of a server from before the id moved into the database: its id is kept.
    const legacyId = `legacy-${process.pid}`
    writeFileSync(path.join(dir, 'server-id'), `${legacyId}\n`)
    const config: Config = {
      ...loadConfig({ cwd: dir, env: {}, flags: {} }),
      dataDir: dir,
      storeUrl: `sqlite:${path.join(dir, 'podyard.db')}`,
      port: 0,
      adminKey: TEST_ADMIN_KEY,
      logLevel: 'silent',
      fleet: 'none',
      driver: 'docker',
    }
    const logger = pino({ level: 'silent' })
    let platform: Platform | undefined = await startPlatform(config, { logger })
    const serverId = (await new KyselyServerIdRepo(platform.store.db).get())!
    expect(serverId).toBe(legacyId)
    const ours = new DockerDriver({ serverId })
    const foreign = new DockerDriver({ serverId: `${serverId}-foreign` })
    cleanups.push(async () => {
      await platform?.close()
      for (const driver of [ours, foreign]) {
        for (const workload of await driver.list()) await driver.remove(workload.id)
        await driver.close()
      }
      rmSync(dir, { recursive: true, force: true })
    })
    const call = (p: string, init: RequestInit & { json?: unknown } = {}) =>
      fetch(`${platform!.url}${p}`, {
        ...init,
        headers: {
          authorization: `Bearer ${TEST_ADMIN_KEY}`,
          ...(init.json === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
      })

    const created = await json<PodJson>(
      await call('/v2/pods', {
        method: 'POST',
        json: {
          name: 'kept',
          image: IMAGE,
          cpu: { id: 'cpu3c', vcpuCount: 2 },
          args: 'exec sleep 300',
        },
      }),
      201,
    )
    await waitForStatus(call, created.id, 'RUNNING')
    const before = await ours.inspect(created.id)
    await platform.close()
    platform = undefined
    // The database has the id now: the file is no longer needed.
    rmSync(path.join(dir, 'server-id'))

    // While the server is down: a pod container of ours whose pod does not exist, and a pod
    // container of another server.
    const spec = {
      image: IMAGE,
      command: 'exec sleep 300',
      env: {},
      containerDiskPath: '/nonexistent',
      diskGb: 1,
      mounts: [
        { hostPath: '/nonexistent', containerPath: '/workspace', kind: 'persistent' as const },
      ],
      ports: [],
      gpuIndices: [],
      vcpus: 1,
      memoryGb: 1,
      labels: { 'podyard.kind': 'pod', 'podyard.generation': '1' },
    }
    await ours.start({ ...spec, id: 'orphan-pod' })
    await foreign.start({ ...spec, id: 'foreign-pod' })
    expect(dockerNames('volume', 'podyard.workload=orphan-pod')).toHaveLength(1)

    platform = await startPlatform(config, { logger })
    // The container goes first, then its volume: wait for both.
    await expect
      .poll(
        async () => [
          ...dockerNames('container', 'podyard.workload=orphan-pod'),
          ...dockerNames('volume', 'podyard.workload=orphan-pod'),
        ],
        { timeout: 15_000 },
      )
      .toEqual([])
    // The pod's own container was adopted, not replaced.
    expect((await waitForStatus(call, created.id, 'RUNNING')).status).toBe('RUNNING')
    expect(await ours.inspect(created.id)).toEqual(before)
    expect((await foreign.inspect('foreign-pod'))?.phase).toBe('running')
  })
})

/**
 * Starts the stopped pod again and checks that its volume kept the first boot's line (the
 * container is new, the volume is not), then terminates it and waits until no container or
 * volume of this server is left.
 */
async function startKeepsBootsAndTerminateLeavesNothing(
  call: (p: string, init?: Parameters<TestPlatform['call']>[1]) => Promise<Response>,
  podId: string,
  firstBoots: string,
  serverId: string,
): Promise<void> {
  await json(await call(`/v2/pods/${podId}/action`, { method: 'POST', json: { action: 'start' } }))
  const again = await waitForStatus(call, podId, 'RUNNING')
  const port = again.runtime!.ports[0]!.public
  const boots = await (await fetch(`http://127.0.0.1:${port}/boots.txt`)).text()
  expect(boots.startsWith(firstBoots)).toBe(true)
  expect(boots.trim().split('\n')).toHaveLength(2)

  expect((await call(`/v2/pods/${podId}`, { method: 'DELETE' })).status).toBe(204)
  await expect
    .poll(
      () => [
        ...dockerNames('container', `podyard.server=${serverId}`),
        ...dockerNames('volume', `podyard.server=${serverId}`),
      ],
      { timeout: 15_000 },
    )
    .toEqual([])
}
