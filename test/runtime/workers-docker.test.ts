import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import Docker from 'dockerode'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPlatform, type Platform } from '../../src/platform.js'
import { startFakeRegistry, type FakeRegistry } from '../support/fake-registry.js'
import { json } from '../support/http.js'
import { callPlatform, stopPlatform, testConfig, type CallInit } from '../support/platform.js'
import { restartableStores } from '../support/restartable-platform.js'
import { freshPostgresDatabase, POSTGRES_URL_ENV } from '../support/stores.js'
import {
  loadWorkerImage,
  WORKER_IMAGE,
  WORKER_IMAGE_CONFIG,
  workerImageTar,
} from '../support/worker-image.js'
import { simulatedDockerFleet } from '../support/docker-fleet.js'

/**
 * Serverless workers as containers on this machine's engine (PODYARD_TEST_DOCKER=1): the local
 * host under `driver: docker` and a simulated docker GPU host run an endpoint's image, the test
 * worker image (node and the TypeScript worker SDK, test/support/worker-image.ts), pulled from a
 * local registry with the endpoint's registry credentials, and serve /runsync.
 */
const enabled = process.env.PODYARD_TEST_DOCKER === '1'
if (!enabled) console.log('docker worker tests skipped: set PODYARD_TEST_DOCKER=1 (needs dockerd)')

const FLEET = simulatedDockerFleet({ localHost: true })

interface WorkerJson {
  id: string
  status: string
  reason: string | null
}

interface JobJson {
  id: string
  status: string
  workerId?: string
  output?: {
    worker: string
    echo: string | null
    volume: string | null
    gpus: string | null
    gpuCount: string | null
  }
}

describe.runIf(enabled).each(restartableStores())(
  'container workers on this engine (%s)',
  (store) => {
    const docker = new Docker()
    let dir: string
    let platform: Platform
    let registry: FakeRegistry
    let database: { url: string; drop(): Promise<void> } | undefined
    const call = (p: string, init?: CallInit) => callPlatform(platform.url, p, init)

    beforeAll(async () => {
      dir = mkdtempSync(path.join(tmpdir(), 'podyard-docker-workers-'))
      writeFileSync(path.join(dir, 'fleet.yaml'), FLEET)
      const { tar } = workerImageTar()
      registry = await startFakeRegistry({
        image: { repository: 'podyard-test/worker', tar, config: WORKER_IMAGE_CONFIG },
      })
      await loadWorkerImage(docker)
      if (store === 'postgres')
        database = await freshPostgresDatabase(process.env[POSTGRES_URL_ENV]!)
      platform = await startPlatform(
        testConfig(dir, {
          fleet: path.join(dir, 'fleet.yaml'),
          driver: 'docker',
          ...(database ? { storeUrl: database.url } : {}),
          workers: { pingIntervalMs: 2_000 },
        }),
        { logger: pino({ level: 'silent' }) },
      )
    }, 120_000)

    afterAll(async () => {
      if (platform) await stopPlatform(platform)
      await registry?.close()
      await database?.drop()
      if (registry)
        execFileSync('docker', ['image', 'rm', '-f', registry.image], { stdio: 'ignore' })
      if (dir) rmSync(dir, { recursive: true, force: true })
    }, 60_000)

    const endpointOf = async (body: Record<string, unknown>) =>
      json<{ id: string }>(await call('/v2/serverless', { method: 'POST', json: body }), 201)
    const workers = async (id: string) =>
      (await json<{ workers: WorkerJson[] }>(await call(`/v2/serverless/${id}/workers`))).workers
    const runsync = async (id: string, input: unknown) =>
      json<JobJson>(await call(`/v2/${id}/runsync?wait=60000`, { method: 'POST', json: { input } }))
    const containerOf = async (workerId: string) =>
      (
        await docker.listContainers({
          all: true,
          filters: { label: [`podyard.workload=${workerId}`] },
        })
      )[0]

    it("pulls the endpoint's image with its registry credentials and serves /runsync from a container", async () => {
      const registryId = (
        await json<{ id: string }>(
          await call('/v2/registries', {
            method: 'POST',
            json: { name: 'local', username: registry.username, password: registry.password },
          }),
          201,
        )
      ).id
      const template = await json<{ id: string }>(
        await call('/v2/templates', {
          method: 'POST',
          json: { name: 'worker', image: registry.image, registry: registryId, serverless: true },
        }),
        201,
      )
      const volume = await json<{ id: string }>(
        await call('/v2/network-volumes', {
          method: 'POST',
          json: { name: 'runs', size: 10, dataCenterId: 'EU-SE-1' },
        }),
        201,
      )
      const endpoint = await endpointOf({
        name: 'containers',
        templateId: template.id,
        cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
        networkVolumes: [volume.id],
        workers: { min: 0, max: 1 },
      })
      const done = await runsync(endpoint.id, { echo: 'hello' })
      expect(done.status, JSON.stringify(done)).toBe('COMPLETED')
      const [worker] = await workers(endpoint.id)
      expect(done.output).toMatchObject({ worker: worker!.id, echo: 'hello', volume: volume.id })
      expect(done.workerId).toBe(worker!.id)

      // A container of the image, labelled as a worker, in the host's network: the job API
      // listens on a loopback address of this machine.
      const container = (await containerOf(worker!.id))!
      expect(container.Image).toBe(registry.image)
      expect(container.Labels).toMatchObject({
        'podyard.kind': 'worker',
        'podyard.endpoint': endpoint.id,
      })
      expect(container.HostConfig.NetworkMode).toBe('host')
      // Its network volume is at /runpod-volume.
      const volumeRoot = path.join(dir, '.podyard', 'volumes', volume.id)
      expect(readFileSync(path.join(volumeRoot, 'runs.log'), 'utf8')).toMatch(
        new RegExp(`\\d+ ${worker!.id} end ${done.id}\\n$`),
      )
      // The pull is the head of the worker's log, then its own output.
      const logs = await (
        await call(
          `/v2/serverless/${endpoint.id}/workers/${worker!.id}/logs?source=container&follow=false`,
        )
      ).text()
      expect(logs).toContain(`pulling image ${registry.image}`)
      expect(logs).toContain(`pulled image ${registry.image}`)
      expect(logs).toContain(`container worker ${worker!.id} of ${endpoint.id} is taking jobs`)
      expect(logs).not.toContain(registry.password)
    }, 180_000)

    it('gives a GPU worker on a simulated docker host its virtual GPUs', async () => {
      const endpoint = await endpointOf({
        name: 'gpu',
        image: WORKER_IMAGE,
        gpu: { pools: ['AMPERE_24'], count: 2 },
        workers: { min: 0, max: 1 },
      })
      const done = await runsync(endpoint.id, { echo: 'gpu' })
      expect(done.status, JSON.stringify(done)).toBe('COMPLETED')
      expect(done.output).toMatchObject({ gpus: '0,1', gpuCount: '2', echo: 'gpu' })
      const container = (await containerOf(done.workerId!))!
      expect(container.Image).toBe(WORKER_IMAGE)
    }, 120_000)
  },
)
