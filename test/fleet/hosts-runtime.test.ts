import { randomBytes } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../support/cli.js'
import { CPU_FLEET_WITH_LOCAL_HOST } from '../support/fleet-yaml.js'
import { json } from '../support/http.js'
import {
  callPlatform,
  otherAccountKey,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type TestPlatform,
} from '../support/platform.js'
import { platformStores } from '../support/platform-stores.js'
import { freshPostgresDatabase, POSTGRES_URL_ENV } from '../support/stores.js'

/**
 * Hosts added, changed and removed at runtime through the admin API and the CLI
 * (docs/fleet.md, "Adding a machine"): a pod of a member account is placed on a host added
 * while the server runs, removing it is refused while the pod is there, `fleet apply` shows its
 * diff before it changes anything; on PostgreSQL a second replica's fleet follows without a
 * restart. The hosts are simulated (the process driver on this machine); remote engines are
 * reached the same way as the fleet file's (test/fleet/multi-host-fleet.test.ts).
 */
const FLEET = CPU_FLEET_WITH_LOCAL_HOST

const RUNTIME_HOST = {
  id: 'runtime-cpu-1',
  dataCenterId: 'EU-SE-1',
  cpuFlavors: ['cpu3c'],
  vcpus: 8,
  memoryGb: 32,
}

interface HostJson {
  id: string
  dataCenterId: string
  vcpus: number
  state: string
  runtime: string
  pods?: { id: string }[]
}
interface Problem {
  status: number
  detail: string
}

const podIn = (dataCenterId: string) => ({
  name: 'on-a-runtime-host',
  image: 'x',
  cpu: { id: 'cpu3c', vcpuCount: 2 },
  dataCenterIds: [dataCenterId],
})

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 20_000
  for (;;) {
    const value = await read()
    if (done(value)) return value
    if (Date.now() > deadline) throw new Error(`still ${JSON.stringify(value)}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

describe.each(platformStores())('hosts managed at runtime on $name', (store) => {
  let platform: TestPlatform
  let member: string
  const hostIds = async () =>
    (await json<{ hosts: HostJson[] }>(await platform.call('/v2/admin/hosts'))).hosts.map(
      (h) => h.id,
    )

  beforeAll(async () => {
    platform = await store.start({}, { fleetYaml: FLEET })
    member = await otherAccountKey(platform, `hosts-runtime-${store.name}@example.com`)
  })

  afterAll(async () => {
    await platform?.close()
  })

  it('adds a host, places a member pod on it, refuses its removal until the pod is gone', async () => {
    // Nothing in EU-SE-1 yet.
    expect(
      (
        await json<Problem>(
          await platform.call('/v2/pods', { method: 'POST', json: podIn('EU-SE-1'), key: member }),
          409,
        )
      ).detail,
    ).toMatch(/^no host has 2 free vCPUs of cpu3c .* in EU-SE-1/)

    const added = await json<HostJson>(
      await platform.call('/v2/admin/hosts', { method: 'POST', json: RUNTIME_HOST }),
      201,
    )
    expect(added).toMatchObject({ id: 'runtime-cpu-1', dataCenterId: 'EU-SE-1', vcpus: 8 })
    expect(added).toMatchObject({ runtime: 'this machine (process driver)', addedAtRuntime: true })
    const listed = (
      await json<{ hosts: (HostJson & { addedAtRuntime: boolean })[] }>(
        await platform.call('/v2/admin/hosts'),
      )
    ).hosts
    expect(listed.find((h) => h.id === 'file-cpu-1')?.addedAtRuntime).toBe(false)
    expect(await hostIds()).toContain('runtime-cpu-1')

    const pod = await json<{ id: string }>(
      await platform.call('/v2/pods', { method: 'POST', json: podIn('EU-SE-1'), key: member }),
      201,
    )
    const host = await json<HostJson>(await platform.call('/v2/admin/hosts/runtime-cpu-1'))
    expect(host.pods?.map((p) => p.id)).toEqual([pod.id])

    // With the pod there, its capacity may grow but not shrink, and where it runs cannot change.
    const shrunk = await json<Problem>(
      await platform.call('/v2/admin/hosts/runtime-cpu-1', { method: 'PATCH', json: { vcpus: 1 } }),
      409,
    )
    expect(shrunk.detail).toContain('vcpus: 8 -> 1')
    expect(shrunk.detail).toContain(`still has pod ${pod.id}`)
    const moved = await json<Problem>(
      await platform.call('/v2/admin/hosts/runtime-cpu-1', {
        method: 'PATCH',
        json: { dataCenterId: 'EU-RO-1' },
      }),
      409,
    )
    expect(moved.detail).toContain('dataCenterId: "EU-SE-1" -> "EU-RO-1"')
    expect(
      (
        await platform.call('/v2/admin/hosts/runtime-cpu-1', {
          method: 'PATCH',
          json: { vcpus: 1 },
          key: member,
        })
      ).status,
    ).toBe(403)
    const grown = await json<HostJson>(
      await platform.call('/v2/admin/hosts/runtime-cpu-1', {
        method: 'PATCH',
        json: { vcpus: 12 },
      }),
    )
    expect(grown.vcpus).toBe(12)
    expect(grown.pods?.map((p) => p.id)).toEqual([pod.id])

    const refused = await json<Problem>(
      await platform.call('/v2/admin/hosts/runtime-cpu-1', { method: 'DELETE' }),
      409,
    )
    expect(refused.detail).toContain(`host runtime-cpu-1 still has pod ${pod.id}`)
    expect(refused.detail).toContain('podyard hosts drain runtime-cpu-1')

    await json(await platform.call('/v2/admin/hosts/runtime-cpu-1/drain', { method: 'POST' }))
    expect(
      (await platform.call(`/v2/pods/${pod.id}`, { method: 'DELETE', key: member })).status,
    ).toBe(204)
    await until(
      () => platform.call('/v2/admin/hosts/runtime-cpu-1', { method: 'DELETE' }),
      (r) => r.status === 204,
    )
    expect(await hostIds()).not.toContain('runtime-cpu-1')
    expect((await platform.call('/v2/admin/hosts/runtime-cpu-1')).status).toBe(404)
    await json(
      await platform.call('/v2/pods', { method: 'POST', json: podIn('EU-SE-1'), key: member }),
      409,
    )
    // Added again, it starts afresh: not DRAINING as it was removed.
    const again = await json<HostJson & { schedule: string }>(
      await platform.call('/v2/admin/hosts', { method: 'POST', json: RUNTIME_HOST }),
      201,
    )
    expect(again.schedule).toBe('ACTIVE')
    expect(
      (await platform.call('/v2/admin/hosts/runtime-cpu-1', { method: 'DELETE' })).status,
    ).toBe(204)
  })

  it('validates what it is given and keeps the configured fleet read-only', async () => {
    const unknownDc = await json<Problem>(
      await platform.call('/v2/admin/hosts', {
        method: 'POST',
        json: { ...RUNTIME_HOST, id: 'bad-1', dataCenterId: 'XX-1' },
      }),
      422,
    )
    expect(unknownDc.detail).toBe('invalid host: dataCenterId: unknown data center "XX-1"')
    const shortGpu = await json<Problem>(
      await platform.call('/v2/admin/hosts', {
        method: 'POST',
        json: { ...RUNTIME_HOST, id: 'bad-2', gpu: { typeId: 'RTX 4090', count: 1 } },
      }),
      422,
    )
    expect(shortGpu.detail).toBe(
      'invalid host: gpu.typeId: unknown GPU type "RTX 4090" (did you mean "NVIDIA GeForce RTX 4090"?)',
    )
    const fileHost = await json<Problem>(
      await platform.call('/v2/admin/hosts', {
        method: 'POST',
        json: { ...RUNTIME_HOST, id: 'file-cpu-1' },
      }),
      409,
    )
    expect(fileHost.detail).toMatch(/host file-cpu-1 is declared in the configured fleet/)
    expect((await platform.call('/v2/admin/hosts/local', { method: 'DELETE' })).status).toBe(409)
    expect(
      (await platform.call('/v2/admin/hosts/file-cpu-1', { method: 'PATCH', json: { vcpus: 2 } }))
        .status,
    ).toBe(409)

    await json(
      await platform.call('/v2/admin/hosts', {
        method: 'POST',
        json: { ...RUNTIME_HOST, id: 'patched-1' },
      }),
      201,
    )
    const again = await json<Problem>(
      await platform.call('/v2/admin/hosts', {
        method: 'POST',
        json: { ...RUNTIME_HOST, id: 'patched-1' },
      }),
      409,
    )
    expect(again.detail).toBe('host patched-1 exists already')
    const patched = await json<HostJson>(
      await platform.call('/v2/admin/hosts/patched-1', { method: 'PATCH', json: { vcpus: 16 } }),
    )
    expect(patched).toMatchObject({ id: 'patched-1', vcpus: 16, dataCenterId: 'EU-SE-1' })
    // A member account never manages hosts.
    expect(
      (
        await platform.call('/v2/admin/hosts', {
          method: 'POST',
          json: { ...RUNTIME_HOST, id: 'members-1' },
          key: member,
        })
      ).status,
    ).toBe(403)
    expect(
      (await platform.call('/v2/admin/hosts/patched-1', { method: 'DELETE', key: member })).status,
    ).toBe(403)
    expect((await platform.call('/v2/admin/hosts/patched-1', { method: 'DELETE' })).status).toBe(
      204,
    )
  })

  it('adds, updates and removes from the CLI, and applies a fleet file as a diff', async () => {
    const flags = ['--url', platform.url, '--api-key', TEST_ADMIN_KEY]
    const add = await runCli([
      'hosts',
      'add',
      'cli-cpu-1',
      '--data-center',
      'EU-SE-1',
      '--vcpus',
      '4',
      '--memory-gb',
      '16',
      '--cpu-flavors',
      'cpu3c',
      ...flags,
    ])
    expect(add.stderr).toBe('')
    expect(add.stdout).toContain('host cli-cpu-1 added (this machine (process driver))')
    const update = await runCli(['hosts', 'update', 'cli-cpu-1', '--vcpus', '8', ...flags])
    expect(update.stdout.trim()).toBe('host cli-cpu-1 updated')

    const file = path.join(platform.dataDir, 'team-fleet.yaml')
    writeFileSync(
      file,
      [
        'hosts:',
        '  - { id: cli-cpu-1, dataCenterId: EU-SE-1, cpuFlavors: [cpu3c], vcpus: 8, memoryGb: 32 }',
        '  - { id: gpu-node-7, dataCenterId: EU-SE-1, gpu: { typeId: NVIDIA GeForce RTX 4090, count: 2 }, vcpus: 32, memoryGb: 128 }',
      ].join('\n'),
    )
    const diff = await runCli(['fleet', 'apply', file, ...flags])
    expect(diff.code).toBe(0)
    expect(diff.stdout).toContain('~ update  cli-cpu-1')
    expect(diff.stdout).toContain('memoryGb: 16 -> 32')
    expect(diff.stdout).toContain('+ add     gpu-node-7')
    expect(diff.stdout).toContain('run again with --yes to apply')
    expect(await hostIds()).not.toContain('gpu-node-7')

    const applied = await runCli(['fleet', 'apply', file, '--yes', ...flags])
    expect(applied.stdout).toContain('applied 2 changes')
    expect(await hostIds()).toEqual(expect.arrayContaining(['cli-cpu-1', 'gpu-node-7']))
    const gpus = await json<{ gpuTypes?: unknown; id?: string }[]>(
      await platform.call('/v2/catalog/gpus'),
    )
    expect(JSON.stringify(gpus)).toContain('NVIDIA GeForce RTX 4090')
    expect((await runCli(['fleet', 'apply', file, ...flags])).stdout).toContain('no changes')

    writeFileSync(file, 'hosts: []\n')
    const removal = await runCli(['fleet', 'apply', file, '--yes', ...flags])
    expect(removal.stdout).toContain('- remove  cli-cpu-1')
    expect(removal.stdout).toContain('- remove  gpu-node-7')
    expect(await hostIds()).not.toContain('gpu-node-7')

    const refused = await runCli(['hosts', 'remove', 'file-cpu-1', ...flags])
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toContain('is declared in the configured fleet')
    // Each CLI run is a process of its own: seven of them on a loaded machine.
  }, 120_000)

  it('checks SSH access step by step and prints the authorized_keys line', async () => {
    const flags = ['--url', platform.url, '--api-key', TEST_ADMIN_KEY]
    const key = path.join(platform.dataDir, 'id_ed25519')
    const knownHosts = path.join(platform.dataDir, 'known_hosts')
    const add = (target: string) =>
      runCli([
        'hosts',
        'add',
        'ssh-node-1',
        '--data-center',
        'EU-SE-1',
        '--vcpus',
        '4',
        '--memory-gb',
        '16',
        '--cpu-flavors',
        'cpu3c',
        '--ssh',
        target,
        '--ssh-key',
        key,
        '--known-hosts',
        knownHosts,
        ...flags,
      ])
    const noKey = await add('podyard@127.0.0.1')
    expect(noKey.code).not.toBe(0)
    expect(noKey.stderr).toContain(`step 2, the key: ${key} does not exist`)
    expect(noKey.stderr).toContain(
      `fix: create it: ssh-keygen -t ed25519 -N '' -C podyard -f ${key}`,
    )

    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'podyard', '-f', key])
    const publicKey = readFileSync(`${key}.pub`, 'utf8').trim().split(' ').slice(0, 2).join(' ')
    writeFileSync(knownHosts, `192.0.2.9 ${publicKey}\n`)
    const noHostKey = await add('podyard@127.0.0.1')
    expect(noHostKey.stderr).toContain(
      `step 3, the host key: ${knownHosts} has no key for 127.0.0.1`,
    )
    expect(noHostKey.stderr).toContain('fix: ssh-keyscan -t ed25519 127.0.0.1 >>')
    expect(await hostIds()).not.toContain('ssh-node-1')

    // Any key stands in for the host's: what is checked is that the file has one for it.
    writeFileSync(knownHosts, `127.0.0.1 ${publicKey}\n`)
    const added = await add('podyard@127.0.0.1')
    expect(added.stderr).toBe('')
    expect(added.stdout).toContain(
      `  command="docker system dial-stdio",restrict ${publicKey} podyard`,
    )
    expect(added.stdout).toContain('host ssh-node-1 added (ssh://podyard@127.0.0.1)')
    expect((await platform.call('/v2/admin/hosts/ssh-node-1', { method: 'DELETE' })).status).toBe(
      204,
    )
  }, 120_000)
})

const postgresUrl = process.env[POSTGRES_URL_ENV]

describe.skipIf(!postgresUrl)('hosts added at runtime on two replicas (PostgreSQL)', () => {
  let database: { url: string; drop: () => Promise<void> }
  let a: TestPlatform
  let b: TestPlatform
  let member: string
  const hostIdsOf = async (replica: TestPlatform) =>
    (await json<{ hosts: HostJson[] }>(await replica.call('/v2/admin/hosts'))).hosts.map(
      (h) => h.id,
    )

  beforeAll(async () => {
    database = await freshPostgresDatabase(postgresUrl!)
    const config = {
      storeUrl: database.url,
      cluster: { leaseTtlMs: 1_500, syncIntervalMs: 200 },
      // One key for both, as replicas share it.
      encryptionKey: randomBytes(32).toString('base64'),
    }
    a = await startTestPlatform(config, { fleetYaml: FLEET })
    b = await startTestPlatform(config, { fleetYaml: FLEET })
    member = await otherAccountKey(a, 'hosts-replicas@example.com')
  })

  afterAll(async () => {
    await b?.close()
    await a?.close()
    await database?.drop()
  })

  it("changes the other replica's fleet without a restart", async () => {
    await json(await a.call('/v2/admin/hosts', { method: 'POST', json: RUNTIME_HOST }), 201)
    await until(
      () => hostIdsOf(b),
      (ids) => ids.includes('runtime-cpu-1'),
    )
    // Placed by the replica that did not add it, for a member account.
    const pod = await json<{ id: string }>(
      await callPlatform(b.url, '/v2/pods', {
        method: 'POST',
        json: podIn('EU-SE-1'),
        key: member,
      }),
      201,
    )
    const onHost = await json<HostJson>(await a.call('/v2/admin/hosts/runtime-cpu-1'))
    expect(onHost.pods?.map((p) => p.id)).toEqual([pod.id])
    expect((await b.call('/v2/admin/hosts/runtime-cpu-1', { method: 'DELETE' })).status).toBe(409)

    expect((await b.call(`/v2/pods/${pod.id}`, { method: 'DELETE', key: member })).status).toBe(204)
    await until(
      () => b.call('/v2/admin/hosts/runtime-cpu-1', { method: 'DELETE' }),
      (r) => r.status === 204,
    )
    await until(
      () => hostIdsOf(a),
      (ids) => !ids.includes('runtime-cpu-1'),
    )
    await json(
      await callPlatform(a.url, '/v2/pods', {
        method: 'POST',
        json: podIn('EU-SE-1'),
        key: member,
      }),
      409,
    )
  })
})
