import { spawn, type ChildProcess } from 'node:child_process'
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { probeBubblewrap } from '../../src/runtime/process/bubblewrap.js'
import { ProcessDriver } from '../../src/runtime/process/process-driver.js'
import { DEFAULT_SANDBOX_UID_BASE } from '../../src/runtime/process/sandbox-users.js'
import { runCli, startServe } from '../support/cli.js'
import {
  otherAccountKey,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type TestPlatform,
} from '../support/platform.js'
import { until } from '../support/until.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

/**
 * What an attacker with an ordinary API key could do with a pod before its fixes, tried
 * again (docs/security.md). The pod's command tries each item and prints READ/DENIED per item
 * to its log, which the test reads through the API as the attacker.
 */
const ATTACK = [
  'probe() { if head -c 1 "$2" > /dev/null 2>&1; then echo "READ $1"; else echo "DENIED $1"; fi; }',
  'probe encryption-key "$T_DATA/encryption.key"',
  'probe database "$T_DATA/podyard.db"',
  'probe server-environ "/proc/$T_PID/environ"',
  'probe other-volume "$T_VOLUME_FILE"',
  'probe shadow /etc/shadow',
  'if ls "$T_DATA" > /dev/null 2>&1; then echo "READ data-dir"; else echo "DENIED data-dir"; fi',
  'tr "\\000" "\\n" < "/proc/$T_PID/environ" 2> /dev/null | grep PODYARD_ADMIN_KEY',
  'if kill -TERM "$T_PID" 2> /dev/null; then echo "READ signal"; else echo "DENIED signal"; fi',
  'echo attack-done',
  // Past the start-up grace, so that the pod is RUNNING rather than ERROR ("exited while starting").
  'exec sleep 300',
].join('\n')
const ATTACK_ITEMS = [
  'encryption-key',
  'database',
  'server-environ',
  'other-volume',
  'shadow',
  'data-dir',
  'signal',
]

const SERVER_ADMIN_KEY = 'pyd_security-test-admin-key-0123456789'

const bubblewrap = await probeBubblewrap({
  searchPath: process.env.PATH,
  probeUid: DEFAULT_SANDBOX_UID_BASE,
})
if (!bubblewrap.ok) {
  console.log(`security: the sandboxed attack is left out: ${bubblewrap.reason}`)
}

/** Where a test platform keeps its data: `./.podyard` of the directory it was started in. */
const dataDirOf = (platform: TestPlatform) => path.join(platform.dataDir, '.podyard')

interface Api {
  url: string
  call(
    pathAndQuery: string,
    key: string,
    init?: { method?: string; json?: unknown },
  ): Promise<{
    status: number
    body: Json
  }>
}

function apiAt(url: string): Api {
  return {
    url,
    call: async (pathAndQuery, key, init = {}) => {
      const response = await fetch(`${url}${pathAndQuery}`, {
        method: init.method ?? 'GET',
        headers: {
          authorization: `Bearer ${key}`,
          ...(init.json === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
      })
      const text = await response.text()
      let body: Json = text
      try {
        body = text === '' ? null : JSON.parse(text)
      } catch {
        // server-sent events: kept as text
      }
      return { status: response.status, body }
    },
  }
}

/** The admin's network volume, with a file in it no other account may read. */
async function adminVolumeWithSecret(api: Api, adminKey: string, dataDir: string) {
  const created = await api.call('/v2/network-volumes', adminKey, {
    method: 'POST',
    json: { name: 'admin-data', size: 10, dataCenterId: 'EU-RO-1' },
  })
  expect(created.status, JSON.stringify(created.body)).toBe(201)
  const id = created.body.id as string
  const file = path.join(dataDir, 'volumes', id, 'secret.txt')
  writeFileSync(file, 'the admin volume secret\n')
  return { id, file }
}

async function podLog(api: Api, key: string, podId: string): Promise<string[]> {
  const read = await api.call(`/v2/pods/${podId}/logs?follow=false&tail=200&source=container`, key)
  expect(read.status).toBe(200)
  return String(read.body)
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => (JSON.parse(l.slice('data: '.length)) as { line: string }).line)
}

/** Runs the attack as a pod of `key`'s account: the pod once it ran the attack or ended, its log. */
async function attackPod(
  api: Api,
  key: string,
  env: Record<string, string>,
): Promise<{ pod: Json; log: string[] }> {
  const created = await api.call('/v2/pods', key, {
    method: 'POST',
    json: {
      name: 'attack',
      image: 'ubuntu',
      cpu: { id: 'cpu3c', vcpuCount: 2 },
      args: ATTACK,
      env,
    },
  })
  expect(created.status, JSON.stringify(created.body)).toBe(201)
  const id = created.body.id as string
  const seen = await until(
    'the attack pod to run its attack or end',
    async () => {
      const pod = (await api.call(`/v2/pods/${id}`, key)).body
      return { pod, log: await podLog(api, key, id) }
    },
    ({ pod, log }) =>
      pod.status === 'EXITED' ||
      pod.status === 'ERROR' ||
      (pod.status === 'RUNNING' && log.includes('attack-done')),
  )
  return seen
}

/** Workloads outlive their server by design: a test leaves none behind. */
async function removeWorkloads(dataDir: string): Promise<void> {
  const driver = new ProcessDriver({
    stateDir: path.join(dataDir, 'runtime', 'process'),
    sandbox: 'none',
  })
  for (const workload of await driver.list()) await driver.remove(workload.id)
  await driver.close()
}

describe.runIf(bubblewrap.ok)('a pod of another account, in the bubblewrap sandbox', () => {
  let dataDir: string
  let server: Awaited<ReturnType<typeof startServe>>
  let serverEnded: string | undefined
  let api: Api
  let attackerKey: string

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-security-'))
    // A real server process, with the admin key in its environment, as an operator starts it.
    server = await startServe(['--port', '0', '--data-dir', dataDir, '--log-level', 'warn'], {
      PODYARD_ADMIN_KEY: SERVER_ADMIN_KEY,
    })
    api = apiAt(server.url)
    // A server that ends during the tests is a finding in itself: say how, with what it printed.
    void server.exited.then((code) => {
      serverEnded = `the server exited with ${code}:\n${server.stdout()}\n${server.stderr()}`
    })
    // The attacker's account, made as an operator makes one: through the admin API.
    const created = await api.call('/v2/admin/accounts', SERVER_ADMIN_KEY, {
      method: 'POST',
      json: { email: 'attacker@example.com' },
    })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    attackerKey = created.body.apiKey.key as string
  }, 60_000)

  beforeEach(() => {
    expect(serverEnded).toBeUndefined()
  })

  afterAll(async () => {
    server?.child.kill('SIGTERM')
    await server?.exited
    if (dataDir) {
      await removeWorkloads(dataDir)
      rmSync(dataDir, { recursive: true, force: true })
    }
  })

  it('says in the banner that workloads are sandboxed', () => {
    expect(server.banner).toMatch(/sandbox\s+bubblewrap/)
  })

  it('reads nothing of the platform or of other accounts, and cannot signal the server', async () => {
    const volume = await adminVolumeWithSecret(api, SERVER_ADMIN_KEY, dataDir)
    const { pod, log } = await attackPod(api, attackerKey, {
      T_DATA: dataDir,
      T_PID: String(server.child.pid),
      T_VOLUME_FILE: volume.file,
    })
    expect(pod.status, pod.statusReason).toBe('RUNNING')
    expect(log).toContain('attack-done')
    for (const item of ATTACK_ITEMS) expect(log, item).toContain(`DENIED ${item}`)
    expect(log.join('\n')).not.toContain(SERVER_ADMIN_KEY)
    expect(server.child.exitCode).toBeNull()
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200)
  })

  it('is refused, over the API, the network volume and the pods of another account', async () => {
    const volume = await adminVolumeWithSecret(api, SERVER_ADMIN_KEY, dataDir)
    expect((await api.call(`/v2/network-volumes/${volume.id}`, attackerKey)).status).toBe(404)
    const pod = await api.call('/v2/pods', attackerKey, {
      method: 'POST',
      json: {
        name: 'mount-theirs',
        image: 'ubuntu',
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        mounts: { network: [{ volumeId: volume.id, path: '/runpod-volume' }] },
      },
    })
    expect(pod.status, JSON.stringify(pod.body)).toBeGreaterThanOrEqual(400)
    expect(pod.status).toBeLessThan(500)
    const endpoint = await api.call('/v2/serverless', attackerKey, {
      method: 'POST',
      json: {
        name: 'mount-theirs',
        image: 'x',
        cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
        networkVolumes: [volume.id],
      },
    })
    expect(endpoint.status, JSON.stringify(endpoint.body)).toBeGreaterThanOrEqual(400)
    expect(endpoint.status).toBeLessThan(500)
    const adminPod = await api.call('/v2/pods', SERVER_ADMIN_KEY, {
      method: 'POST',
      json: { name: 'admin', image: 'ubuntu', cpu: { id: 'cpu3c', vcpuCount: 2 } },
    })
    expect(adminPod.status).toBe(201)
    for (const route of [`/v2/pods/${adminPod.body.id}`, `/v2/pods/${adminPod.body.id}/logs`]) {
      expect((await api.call(route, attackerKey)).status, route).toBe(404)
    }
  })
})

describe('without a usable sandbox (bubblewrap forced missing)', () => {
  let platform: TestPlatform
  let api: Api
  let attackerKey: string
  let decoy: ChildProcess

  beforeAll(async () => {
    platform = await startTestPlatform({ bwrapPath: '/nonexistent/bwrap', sandbox: 'auto' })
    api = apiAt(platform.url)
    attackerKey = await otherAccountKey(platform, 'attacker@example.com')
    // Stands in for the server as the target of an unsandboxed pod's signal and environ read.
    decoy = spawn('sleep', ['300'], {
      env: { PATH: process.env.PATH, PODYARD_ADMIN_KEY: 'decoy-admin-key' },
      stdio: 'ignore',
    })
  })

  afterAll(async () => {
    decoy?.kill('SIGKILL')
    await platform?.close()
  })

  it('says in the banner that workloads are not sandboxed and whose are refused', () => {
    expect(platform.banner).toMatch(/sandbox\s+NONE: bubblewrap is not usable here/)
    expect(platform.banner).toMatch(/other accounts' are refused/)
  })

  it("refuses another account's pod: ERROR with the reason, nothing started", async () => {
    const { pod, log } = await attackPod(api, attackerKey, {
      T_DATA: dataDirOf(platform),
      T_PID: String(decoy.pid),
      T_VOLUME_FILE: '/nonexistent',
    })
    expect(pod.status).toBe('ERROR')
    expect(pod.statusReason).toMatch(
      /^not started: this host runs workloads without a sandbox \(bubblewrap is not usable here: .*\), which only the admin account's workloads may do; the operator can install bubblewrap, use the docker driver, or set sandbox: none/,
    )
    expect(log).toEqual([])
    const workloads = await platform.drivers[0]!.list()
    expect(workloads.map((w) => w.id)).not.toContain(pod.id)
    expect(decoy.exitCode).toBeNull()
  })

  it("keeps another account's serverless workers THROTTLED with the same reason", async () => {
    const created = await api.call('/v2/serverless', attackerKey, {
      method: 'POST',
      json: {
        name: 'refused',
        image: 'x',
        args: ATTACK,
        cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
        workers: { min: 1, max: 1, idleTimeout: 5 },
      },
    })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    const list = await until(
      'a refused worker',
      async () => (await api.call(`/v2/serverless/${created.body.id}/workers`, attackerKey)).body,
      (l) => l.workers?.[0]?.reason?.startsWith('not started:') === true,
    )
    expect(list.workers[0]).toMatchObject({ status: 'THROTTLED' })
    expect(list.workers[0].reason).toMatch(/without a sandbox .* set sandbox: none/)
    const workloads = await platform.drivers[0]!.list()
    expect(workloads.map((w) => w.id)).not.toContain(list.workers[0].id)
  })

  it("runs the admin's pod unsandboxed, which reads what the refusal keeps from others", async () => {
    const { pod, log } = await attackPod(api, TEST_ADMIN_KEY, {
      T_DATA: dataDirOf(platform),
      T_PID: String(decoy.pid),
      T_VOLUME_FILE: '/nonexistent',
    })
    expect(pod.status, pod.statusReason).toBe('RUNNING')
    expect(log).toContain('READ encryption-key')
    expect(log).toContain('READ data-dir')
    expect(log).toContain('PODYARD_ADMIN_KEY=decoy-admin-key')
    expect(log).toContain('READ signal')
  })
})

describe("with sandbox: none (the operator's explicit choice)", () => {
  it("runs another account's pod unsandboxed", async () => {
    const platform = await startTestPlatform({ bwrapPath: '/nonexistent/bwrap', sandbox: 'none' })
    try {
      expect(platform.banner).toMatch(/sandbox\s+NONE \(sandbox: none\): every account's pods/)
      const key = await otherAccountKey(platform, 'accepted@example.com')
      const { pod, log } = await attackPod(apiAt(platform.url), key, {
        T_DATA: dataDirOf(platform),
        T_PID: '999999999',
        T_VOLUME_FILE: '/nonexistent',
      })
      expect(pod.status, pod.statusReason).toBe('RUNNING')
      expect(log).toContain('READ encryption-key')
    } finally {
      await platform.close()
    }
  })
})

describe('secrets at rest and in output', () => {
  let platform: TestPlatform
  let api: Api

  beforeAll(async () => {
    platform = await startTestPlatform()
    api = apiAt(platform.url)
  })
  afterAll(() => platform?.close())

  it("keeps a job's s3Config secret out of the database file", async () => {
    const created = await api.call('/v2/serverless', TEST_ADMIN_KEY, {
      method: 'POST',
      json: { name: 's3', image: 'x', cpu: [{ id: 'cpu3c', vcpuCount: 2 }] },
    })
    expect(created.status).toBe(201)
    const secret = 's3-secret-access-key-never-stored-0123'
    const run = await api.call(`/v2/${created.body.id}/run`, TEST_ADMIN_KEY, {
      method: 'POST',
      json: {
        input: {},
        s3Config: {
          accessId: 'AKIAEXAMPLE',
          accessSecret: secret,
          bucketName: 'b',
          endpointUrl: 'https://s3.example.com',
        },
      },
    })
    expect(run.status, JSON.stringify(run.body)).toBe(200)
    const dataDir = dataDirOf(platform)
    const files = readdirSync(dataDir).filter((f) => f.startsWith('podyard.db'))
    expect(files).toContain('podyard.db')
    for (const file of files) {
      expect(readFileSync(path.join(dataDir, file)).includes(secret), file).toBe(false)
    }
  })

  it("writes no worker key into the process driver's files", async () => {
    const created = await api.call('/v2/serverless', TEST_ADMIN_KEY, {
      method: 'POST',
      json: {
        name: 'keyed',
        image: 'x',
        args: 'printf %s "$RUNPOD_AI_API_KEY" > worker-key.txt; exec sleep 300',
        cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
        workers: { min: 1, max: 1, idleTimeout: 5 },
      },
    })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    const workers = path.join(dataDirOf(platform), 'workers')
    const keyFile = await until(
      'the worker to write its key',
      async () =>
        existsSync(workers)
          ? readdirSync(workers)
              .map((id) => path.join(workers, id, 'disk', 'worker-key.txt'))
              .find((f) => existsSync(f) && statSync(f).size > 0)
          : undefined,
      (f) => f !== undefined,
    )
    const workerKey = readFileSync(keyFile!, 'utf8')
    expect(workerKey.length).toBeGreaterThan(16)
    const files: string[] = []
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const file = path.join(dir, entry.name)
        if (entry.isDirectory()) walk(file)
        // A disk image (`disk.ext4`) is the worker's own disk, which holds the key it wrote;
        // the walk sees that disk's files through its mount point.
        else if (entry.isFile() && file !== keyFile && !file.endsWith('.ext4')) files.push(file)
      }
    }
    walk(dataDirOf(platform))
    expect(files.some((f) => f.endsWith('state.json'))).toBe(true)
    for (const file of files) expect(readFileSync(file).includes(workerKey), file).toBe(false)
  })

  it('never prints $PODYARD_API_KEY in help or usage errors of the CLI', async () => {
    const secret = 'pyd_cli-secret-never-printed-0123456789'
    for (const args of [
      ['--help'],
      ['pods', 'list', '--help'],
      ['catalog', 'gpus', '--help'],
      ['pods', 'list', '--no-such-flag'],
      ['pods', 'get'],
    ]) {
      const result = await runCli(args, { PODYARD_API_KEY: secret, PODYARD_URL: 'http://u:pw@x' })
      const output = `${result.stdout}${result.stderr}`
      expect(output, args.join(' ')).not.toContain(secret)
      expect(output, args.join(' ')).not.toContain('u:pw')
    }
    // The key is still the default: read when the command runs.
    const listed = await runCli(['pods', 'list', '--json', '--url', platform.url], {
      PODYARD_API_KEY: TEST_ADMIN_KEY,
    })
    expect(listed.code, listed.stderr).toBe(0)
  })
})
