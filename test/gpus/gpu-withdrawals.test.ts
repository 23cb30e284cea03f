import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { startPlatform, type Platform } from '../../src/platform.js'
import { openStore } from '../../src/store/open-store.js'
import { fakeNvidiaSmi, type FakeNvidiaSmi } from '../support/fake-nvidia-smi.js'
import { json } from '../support/http.js'
import {
  callPlatform,
  otherAccountKey,
  stopPlatform,
  TEST_ADMIN_KEY,
  testConfig,
} from '../support/platform.js'
import { removeDataDir } from '../support/processes.js'
import { startReplica, stopReplicas, type Replica } from '../support/replica-process.js'
import { freshPostgresDatabase, POSTGRES_URL_ENV } from '../support/stores.js'
import { until } from '../support/until.js'

/**
 * A withdrawn GPU stays withdrawn for a restarted server and for every replica on the same
 * database, until the operator resets it (docs/gpus.md, "Resetting a GPU"). A stand-in
 * nvidia-smi on PATH (test/support/fake-nvidia-smi.ts) plays the GPUs; the platform is real.
 */
const H100 = 'NVIDIA H100 80GB HBM3'

/** One --query-gpu line of the sampler in its field order (GPU_QUERY_FIELDS). */
function line(index: number, ecc: number): string {
  const bus = index === 0 ? '00000000:19:00.0' : '00000000:3B:00.0'
  return `${index}, GPU-${index}, ${bus}, 10, 20, 100, 81559, 50, 300.5, 0x0000000000000001, ${ecc}, No`
}
const healthy = `${line(0, 0)}\n${line(1, 0)}\n`
const eccOnGpu0 = `${line(0, 2)}\n${line(1, 0)}\n`

interface HostJson {
  state: string
  stateReason: string | null
  gpus: Array<{ index: number; health: string; reason: string | null; sampledAt: string | null }>
}

const gpuPod = (name: string, count: number) => ({
  method: 'POST',
  json: { name, image: 'ubuntu', gpu: { id: H100, count }, disk: 1, args: 'sleep 600' },
})

describe('a withdrawn GPU after a restart (SQLite)', () => {
  let smi: FakeNvidiaSmi | undefined
  let platform: Platform | undefined
  let dataDir: string | undefined
  const savedPath = process.env.PATH

  afterEach(async () => {
    process.env.PATH = savedPath
    if (platform) await stopPlatform(platform)
    if (dataDir) removeDataDir(dataDir)
    if (smi) rmSync(smi.dir, { recursive: true, force: true })
  })

  it('stays withdrawn, and takes no pods, until the operator resets it', async () => {
    smi = fakeNvidiaSmi([H100, H100])
    smi.setQuery(eccOnGpu0)
    process.env.PATH = smi.path
    dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-gpu-withdrawals-'))
    const config = testConfig(dataDir, { fleet: 'none', sandbox: 'none' })
    const start = () => startPlatform(config, { logger: pino({ level: 'silent' }) })
    platform = await start()
    const member = await otherAccountKey(platform, 'gpu-withdrawals@example.com')
    const call = (p: string, init: Parameters<typeof callPlatform>[2] = {}) =>
      callPlatform(platform!.url, p, init)
    const host = async () => json<HostJson>(await call('/v2/admin/hosts/local'))

    await until('GPU 0 withdrawn', host, (h) => h.state === 'DEGRADED')
    await stopPlatform(platform)
    platform = undefined

    // The counters read clean after the restart (a driver reload, say), but nobody checked the
    // card: the withdrawal, not the next reading, decides.
    smi.setQuery(healthy)
    platform = await start()
    const read = await until('both GPUs read again', host, (h) =>
      h.gpus.every((g) => g.sampledAt !== null),
    )
    expect(read.state).toBe('DEGRADED')
    expect(read.stateReason).toBe('GPU 0 withdrawn: 2 uncorrectable ECC errors')
    expect(read.gpus.map((g) => g.health)).toEqual(['WITHDRAWN', 'HEALTHY'])
    const refused = await json<{ detail: string }>(
      await call('/v2/pods', { ...gpuPod('two-gpus', 2), key: member }),
      409,
    )
    expect(refused.detail).toMatch(/no host has 2 free NVIDIA H100 80GB HBM3/)

    expect(
      (await call('/v2/admin/hosts/local/gpus/0/reset', { method: 'POST', key: member })).status,
    ).toBe(403)
    expect((await call('/v2/admin/hosts/local/gpus/0/reset', { method: 'POST' })).status).toBe(200)
    expect((await host()).state).toBe('UP')
    const pod = await json<{ id: string }>(
      await call('/v2/pods', { ...gpuPod('two-gpus', 2), key: member }),
      201,
    )
    expect((await call(`/v2/pods/${pod.id}`, { method: 'DELETE', key: member })).status).toBe(204)
  }, 90_000)
})

const postgresUrl = process.env[POSTGRES_URL_ENV]
if (!postgresUrl) {
  console.log(`gpu withdrawals on two replicas: skipped: set ${POSTGRES_URL_ENV}`)
}

describe.skipIf(!postgresUrl)('a withdrawn GPU on two replicas (PostgreSQL)', () => {
  const children: ChildProcess[] = []
  const fakes: FakeNvidiaSmi[] = []
  let database: { url: string; drop: () => Promise<void> } | undefined
  let dataDir: string | undefined

  afterAll(async () => {
    await stopReplicas(children)
    if (dataDir) removeDataDir(dataDir)
    for (const fake of fakes) rmSync(fake.dir, { recursive: true, force: true })
    await database?.drop()
  })

  it('a replica that did not read the fault places no pod on the GPU, shows it, and resets it', async () => {
    database = await freshPostgresDatabase(postgresUrl!)
    dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-gpu-replicas-'))
    const env = {
      PODYARD_STORE_URL: database.url,
      PODYARD_DATA_DIR: dataDir,
      PODYARD_ADMIN_KEY: TEST_ADMIN_KEY,
      PODYARD_PORT: '0',
      PODYARD_FLEET: 'none',
      PODYARD_SANDBOX: 'none',
      PODYARD_LOG_LEVEL: 'info',
      PODYARD_CLUSTER_SYNC_INTERVAL_MS: '200',
    }
    // `a` reads GPU 0's errors; `b`'s sampler does not (here: its stand-in reads clean), so
    // all `b` knows of the fault is what `a` wrote to the store.
    const [smiA, smiB] = [fakeNvidiaSmi([H100, H100]), fakeNvidiaSmi([H100, H100])]
    fakes.push(smiA, smiB)
    smiA.setQuery(eccOnGpu0)
    smiB.setQuery(healthy)
    const a: Replica = await startReplica('a', { ...env, PATH: smiA.path }, children)
    const b: Replica = await startReplica('b', { ...env, PATH: smiB.path }, children)
    const store = await openStore(database.url)
    const member = await otherAccountKey({ store }, 'gpu-replicas@example.com').finally(() =>
      store.close(),
    )
    const hostOn = async (r: Replica) =>
      json<HostJson>(await callPlatform(r.url, '/v2/admin/hosts/local'))

    await until(
      'a withdraws GPU 0',
      () => hostOn(a),
      (h) => h.state === 'DEGRADED',
    )
    const seen = await until(
      'b shows it',
      () => hostOn(b),
      (h) => h.state === 'DEGRADED',
    )
    expect(seen.stateReason).toBe('GPU 0 withdrawn: 2 uncorrectable ECC errors')
    expect(seen.gpus[0]).toMatchObject({ health: 'WITHDRAWN' })
    const refused = await json<{ detail: string }>(
      await callPlatform(b.url, '/v2/pods', { ...gpuPod('on-b', 2), key: member }),
      409,
    )
    expect(refused.detail).toMatch(/no host has 2 free NVIDIA H100 80GB HBM3/)

    // Fixed (a driver reload cleared the counters); the operator resets it through `b`.
    smiA.setQuery(healthy)
    expect(
      (await callPlatform(b.url, '/v2/admin/hosts/local/gpus/0/reset', { method: 'POST' })).status,
    ).toBe(200)
    await until(
      'a takes it back',
      () => hostOn(a),
      (h) => h.state === 'UP',
      10_000,
    )
    const pod = await json<{ id: string }>(
      await callPlatform(a.url, '/v2/pods', { ...gpuPod('on-a', 2), key: member }),
      201,
    )
    expect(
      (await callPlatform(a.url, `/v2/pods/${pod.id}`, { method: 'DELETE', key: member })).status,
    ).toBe(204)
  }, 120_000)
})
