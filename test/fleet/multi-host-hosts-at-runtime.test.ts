import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPlatform, type Platform } from '../../src/platform.js'
import { runCli } from '../support/cli.js'
import { json } from '../support/http.js'
import {
  holdRig,
  multiHostEnabled,
  readRigLayout,
  rigFleetYaml,
  rigHost,
  rigUnavailableReason,
  type RigLayout,
} from '../support/multi-host-rig.js'
import {
  callPlatform,
  otherAccountKey,
  stopPlatform,
  TEST_ADMIN_KEY,
  testConfig,
  type CallInit,
} from '../support/platform.js'
import { freshPostgresDatabase, POSTGRES_URL_ENV } from '../support/stores.js'
import { until as untilDone } from '../support/until.js'

/**
 * Machines added while podyard runs (docs/fleet.md, "Adding a machine"), on the multi-host
 * rig's real engines: the fleet file names gpu-node-1 only; an operator adds gpu-node-2 over
 * SSH and gpu-node-3 over TCP+TLS with `podyard hosts add`, a member's pods run on all three,
 * and gpu-node-3 goes again with `podyard hosts remove` once its pod is terminated, leaving
 * nothing of podyard on its engine. Opt-in with PODYARD_TEST_MULTIHOST=1.
 *
 * With PODYARD_TEST_POSTGRES_URL set (as in CI) two replicas share one PostgreSQL database:
 * the operator adds and removes machines through the first, the member's pods are created
 * through the second, and both see each machine UP, so a machine added at runtime (over SSH,
 * TLS, or TLS issued by podyard) is used by both replicas without a restart.
 */
const enabled = multiHostEnabled()

const IMAGE = 'podyard-conformance/hello:1'
const SERVE =
  'mkdir -p /srv && echo "$RUNPOD_POD_ID" > /srv/index.html && exec httpd -f -p 8080 -h /srv'

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
}

const RIG_SCRIPT = path.join(import.meta.dirname, '..', 'support', 'multi-host-rig.sh')

const until = <T>(what: string, read: () => Promise<T>, done: (v: T) => boolean) =>
  untilDone(what, read, done, 90_000)

describe.runIf(enabled)('machines added and removed while podyard runs', () => {
  let layout: RigLayout
  let dir: string
  /** The operator's replica; `second` is the member's (the same one without PostgreSQL). */
  let platform: Platform
  let second: Platform
  let database: { url: string; drop: () => Promise<void> } | undefined
  let member = ''
  let release: (() => void) | undefined
  const call = (p: string, init: CallInit = {}) => callPlatform(platform.url, p, init)
  const asMember = (p: string, init: CallInit = {}) =>
    callPlatform(second.url, p, { key: member, ...init })
  const hostsOf = async (replica: Platform) =>
    (await json<{ hosts: HostJson[] }>(await callPlatform(replica.url, '/v2/admin/hosts'))).hosts
  /** The hosts as the operator's replica sees them, once the member's replica agrees on each. */
  const hosts = async () => {
    const [mine, theirs] = await Promise.all([hostsOf(platform), hostsOf(second)])
    const same = (h: HostJson) => theirs.find((t) => t.id === h.id)?.state === h.state
    return mine.length === theirs.length && mine.every(same) ? mine : []
  }
  const cli = (...args: string[]) =>
    runCli(args, { PODYARD_URL: platform.url, PODYARD_API_KEY: TEST_ADMIN_KEY })
  const pods: PodJson[] = []
  let issuedTls = false

  beforeAll(async () => {
    release = await holdRig()
    const reason = await rigUnavailableReason()
    if (reason) throw new Error(`PODYARD_TEST_MULTIHOST=1 but the rig is not usable: ${reason}`)
    layout = readRigLayout()
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-hosts-at-runtime-'))
    mkdirSync(path.join(dir, '.podyard'))
    const first = { ...layout, hosts: [rigHost(layout, 'gpu-node-1')] }
    writeFileSync(path.join(dir, 'fleet.yaml'), rigFleetYaml(first, path.join(dir, 'shared')))
    const postgresUrl = process.env[POSTGRES_URL_ENV]
    database = postgresUrl ? await freshPostgresDatabase(postgresUrl) : undefined
    const shared = database && {
      storeUrl: database.url,
      cluster: { leaseTtlMs: 1_500, syncIntervalMs: 200 },
      // Replicas share the key that seals the hosts' credentials.
      encryptionKey: randomBytes(32).toString('base64'),
    }
    const start = (dataDir: string) =>
      startPlatform(
        testConfig(dataDir, {
          fleet: path.join(dir, 'fleet.yaml'),
          hosts: { probeIntervalMs: 500, probeTimeoutMs: 8_000, failuresBeforeDown: 2 },
          // The rig's engines store on overlay2 over ext4, which bounds no container disk, and
          // are other machines' engines, whose disk writes podyard does not limit.
          containment: { acceptUnenforced: ['disk', 'diskWrite'] },
          ...shared,
        }),
        { logger: pino({ level: 'silent' }) },
      )
    platform = await start(dir)
    if (shared) {
      const secondDir = path.join(dir, 'second-replica')
      mkdirSync(path.join(secondDir, '.podyard'), { recursive: true })
      second = await start(secondDir)
    } else {
      second = platform
    }
    member = await otherAccountKey(platform, 'hosts-at-runtime@example.com')
  }, 960_000)

  afterAll(async () => {
    try {
      // gpu-node-3's engine back on the rig's own TLS files, whatever the last test did.
      if (issuedTls) execFileSync('bash', [RIG_SCRIPT, 'tls-files', 'rig'], { stdio: 'pipe' })
      if (second && second !== platform) await stopPlatform(second)
      if (platform) await stopPlatform(platform)
      await database?.drop()
      if (dir) rmSync(dir, { recursive: true, force: true })
    } finally {
      release?.()
    }
  }, 120_000)

  it('adds a machine over SSH and one over TCP+TLS with podyard hosts add; both come UP', async () => {
    const common = ['--data-center', 'EU-RO-1', '--cpu-flavors', 'cpu3c', '--vcpus', '2']
    const ssh = rigHost(layout, 'gpu-node-2')
    const added = await cli(
      'hosts',
      'add',
      ssh.name,
      ...common,
      '--memory-gb',
      '8',
      '--public-ip',
      ssh.address,
      '--docker-url',
      ssh.dockerUrl,
      '--ssh-key',
      layout.ssh.privateKeyFile,
      '--known-hosts',
      layout.ssh.knownHostsFile,
    )
    expect(added.code, added.stderr).toBe(0)
    const tls = rigHost(layout, 'gpu-node-3')
    const addedTls = await cli(
      'hosts',
      'add',
      tls.name,
      ...common,
      '--memory-gb',
      '8',
      '--public-ip',
      tls.address,
      '--docker-url',
      tls.dockerUrl,
      '--tls-ca',
      layout.tls.caFile,
      '--tls-cert',
      layout.tls.certFile,
      '--tls-key',
      layout.tls.keyFile,
    )
    expect(addedTls.code, addedTls.stderr).toBe(0)
    const list = await until('three hosts UP', hosts, (l) =>
      ['gpu-node-1', 'gpu-node-2', 'gpu-node-3'].every(
        (id) => l.find((h) => h.id === id)?.state === 'UP',
      ),
    )
    expect(list.map((h) => h.id).sort()).toEqual(['gpu-node-1', 'gpu-node-2', 'gpu-node-3'])
  }, 120_000)

  it("runs a member's pods on the machines added, each reachable at its address", async () => {
    for (let i = 0; i < 3; i++) {
      pods.push(
        await json<PodJson>(
          await asMember('/v2/pods', {
            method: 'POST',
            json: {
              name: `added-${i}`,
              image: IMAGE,
              cpu: { id: 'cpu3c', vcpuCount: 2 },
              ports: ['8080/http'],
              args: SERVE,
            },
          }),
          201,
        ),
      )
    }
    const placed: string[] = []
    for (const created of pods) {
      const running = await until(
        `pod ${created.id} RUNNING`,
        () => asMember(`/v2/pods/${created.id}`).then((r) => json<PodJson>(r)),
        (p) => ['RUNNING', 'ERROR'].includes(p.status),
      )
      expect(running.status, running.statusReason ?? '').toBe('RUNNING')
      const port = running.runtime!.ports[0]!
      placed.push(layout.hosts.find((h) => h.address === port.ip)!.name)
      const response = await fetch(`http://${port.ip}:${port.public}/`, {
        signal: AbortSignal.timeout(5_000),
      })
      expect((await response.text()).trim()).toBe(created.id)
    }
    // Two vCPUs each, two per machine: one pod on each.
    expect(placed.sort()).toEqual(['gpu-node-1', 'gpu-node-2', 'gpu-node-3'])
  }, 240_000)

  it('removes a machine with podyard hosts remove once its pod is gone, leaving nothing on its engine', async () => {
    const tls = rigHost(layout, 'gpu-node-3')
    let podThere: PodJson | undefined
    for (const p of pods) {
      const seen = await json<PodJson>(await asMember(`/v2/pods/${p.id}`))
      if (seen.runtime?.ports[0]?.ip === tls.address) podThere = seen
    }
    expect(podThere, 'a pod on gpu-node-3').toBeDefined()
    const refused = await cli('hosts', 'remove', tls.name)
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toContain(podThere!.id)

    const docker = (...args: string[]) =>
      execFileSync('docker', ['-H', `unix://${tls.socketPath}`, ...args], { encoding: 'utf8' })
    expect(docker('ps', '-a', '--filter', 'label=podyard.workload', '-q').trim()).not.toBe('')
    expect((await asMember(`/v2/pods/${podThere!.id}`, { method: 'DELETE' })).status).toBe(204)
    await until(
      'the pod container gone from gpu-node-3',
      async () => docker('ps', '-a', '--filter', 'label=podyard.workload', '-q').trim(),
      (ids) => ids === '',
    )
    const removed = await cli('hosts', 'remove', tls.name)
    expect(removed.code, removed.stderr).toBe(0)
    const left = await until('gpu-node-3 gone from both replicas', hosts, (l) => l.length === 2)
    expect(left.map((h) => h.id).sort()).toEqual(['gpu-node-1', 'gpu-node-2'])
    expect((await call(`/v2/admin/hosts/${tls.name}`)).status).toBe(404)
    expect((await callPlatform(second.url, `/v2/admin/hosts/${tls.name}`)).status).toBe(404)
    // The other machines' pods are untouched.
    for (const p of pods.filter((p) => p.id !== podThere!.id)) {
      const seen = await json<PodJson>(await asMember(`/v2/pods/${p.id}`))
      expect(seen.status).toBe('RUNNING')
    }
  }, 180_000)

  it('adds it again over TLS issued by podyard: the engine started with the files podyard hosts add --tls wrote', async () => {
    const tls = rigHost(layout, 'gpu-node-3')
    const out = path.join(dir, 'gpu-node-3-tls')
    const added = await cli(
      'hosts',
      'add',
      tls.name,
      '--data-center',
      'EU-RO-1',
      '--cpu-flavors',
      'cpu3c',
      '--vcpus',
      '2',
      '--memory-gb',
      '8',
      '--public-ip',
      tls.address,
      '--tls',
      `${tls.address}:2376`,
      '--tls-out',
      out,
    )
    expect(added.code, added.stderr).toBe(0)
    expect(added.stdout).toContain(`host ${tls.name} added (${tls.dockerUrl})`)
    // The operator's step on the machine: dockerd restarted with the files (live-restore).
    issuedTls = true
    execFileSync('bash', [RIG_SCRIPT, 'tls-files', out], { stdio: 'pipe' })
    await until('gpu-node-3 UP over the issued certificates', hosts, (l) =>
      l.some((h) => h.id === tls.name && h.state === 'UP'),
    )

    // The two other machines hold a pod each: a member's new pod can only go here.
    const created = await json<PodJson>(
      await asMember('/v2/pods', {
        method: 'POST',
        json: {
          name: 'issued-tls',
          image: IMAGE,
          cpu: { id: 'cpu3c', vcpuCount: 2 },
          ports: ['8080/http'],
          args: SERVE,
        },
      }),
      201,
    )
    const running = await until(
      `pod ${created.id} RUNNING`,
      () => asMember(`/v2/pods/${created.id}`).then((r) => json<PodJson>(r)),
      (p) => ['RUNNING', 'ERROR'].includes(p.status),
    )
    expect(running.status, running.statusReason ?? '').toBe('RUNNING')
    const port = running.runtime!.ports[0]!
    expect(port.ip).toBe(tls.address)
    const response = await fetch(`http://${port.ip}:${port.public}/`, {
      signal: AbortSignal.timeout(5_000),
    })
    expect((await response.text()).trim()).toBe(created.id)

    expect((await asMember(`/v2/pods/${created.id}`, { method: 'DELETE' })).status).toBe(204)
    const docker = (...args: string[]) =>
      execFileSync('docker', ['-H', `unix://${tls.socketPath}`, ...args], { encoding: 'utf8' })
    await until(
      'the pod container gone from gpu-node-3',
      async () => docker('ps', '-a', '--filter', 'label=podyard.workload', '-q').trim(),
      (ids) => ids === '',
    )
    const removed = await cli('hosts', 'remove', tls.name)
    expect(removed.code, removed.stderr).toBe(0)
    // The member's replica lets go of the machine at its next look at the hosts (syncIntervalMs).
    await until('gpu-node-3 gone from both replicas again', hosts, (l) => l.length === 2)
  }, 240_000)
})
