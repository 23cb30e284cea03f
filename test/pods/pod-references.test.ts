import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli, startServe } from '../support/cli.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'

interface Json {
  id: string
  status: string
  [key: string]: unknown
}

describe('pods with network volumes, registries and templates', () => {
  let platform: TestPlatform
  let strangerKey: string

  const call = async (method: string, urlPath: string, json?: unknown, key?: string) => {
    const response = await platform.call(urlPath, {
      method,
      ...(json === undefined ? {} : { json }),
      ...(key ? { key } : {}),
    })
    return {
      status: response.status,
      body: (response.status === 204 ? {} : await response.json()) as Json & { detail?: string },
    }
  }
  const waitRunning = async (id: string) => {
    await expect
      .poll(async () => (await call('GET', `/v2/pods/${id}`)).body.status, { timeout: 20_000 })
      .toBe('RUNNING')
    return (await call('GET', `/v2/pods/${id}`)).body as Json & {
      runtime: { ports: Array<{ public: number }> }
    }
  }

  beforeAll(async () => {
    platform = await startTestPlatform()
    strangerKey = await otherAccountKey(platform, 'stranger@example.com')
  })
  afterAll(() => platform.close())

  it('two pods mounting one network volume see each other’s files, at their own paths, GPU and CPU alike', async () => {
    const volume = await call('POST', '/v2/network-volumes', {
      name: 'shared',
      size: 20,
      dataCenterId: 'EU-RO-1',
    })
    expect(volume.status).toBe(201)
    const serveFile = (file: string) =>
      `exec node -e 'require("http").createServer((q, r) => r.end(require("fs").readFileSync(process.argv[1], "utf8"))).listen(process.env.RUNPOD_TCP_PORT_8080)' "${file}"`
    const writer = await call('POST', '/v2/pods', {
      name: 'writer',
      image: 'x',
      gpu: { id: 'NVIDIA L40S' },
      ports: ['8080/http'],
      mounts: { network: [{ volumeId: volume.body.id, path: '/data' }] },
      args: `echo written-by-gpu-pod > "\${PODYARD_MOUNT_DATA:-/data}/note"; ${serveFile('${PODYARD_MOUNT_DATA:-/data}/note')}`,
    })
    expect(writer.status, writer.body.detail).toBe(201)
    expect(writer.body.dataCenterId).toBe('EU-RO-1')
    await waitRunning(writer.body.id)
    const reader = await call('POST', '/v2/pods', {
      name: 'reader',
      image: 'x',
      cpu: { id: 'cpu5c', vcpuCount: 2 },
      ports: ['8080/http'],
      mounts: { network: [{ volumeId: volume.body.id, path: '/mnt/team' }] },
      args: serveFile('${PODYARD_MOUNT_MNT_TEAM:-/mnt/team}/note'),
    })
    expect(reader.status, reader.body.detail).toBe(201)
    const running = await waitRunning(reader.body.id)
    const text = await (await fetch(`http://127.0.0.1:${running.runtime.ports[0]!.public}/`)).text()
    expect(text).toBe('written-by-gpu-pod\n')

    const inUse = await call('DELETE', `/v2/network-volumes/${volume.body.id}`)
    expect(inUse.status).toBe(400)
    expect(inUse.body.detail).toContain(`pod ${writer.body.id} (writer)`)
    expect(inUse.body.detail).toContain(`pod ${reader.body.id} (reader)`)

    const moved = await call('PATCH', `/v2/pods/${reader.body.id}`, {
      mounts: { network: [{ volumeId: volume.body.id, path: '/elsewhere' }] },
    })
    expect(moved.body.mounts).toEqual({
      network: [{ volumeId: volume.body.id, path: '/elsewhere' }],
    })
    const other = await call('POST', '/v2/network-volumes', {
      name: 'other',
      size: 10,
      dataCenterId: 'EU-RO-1',
    })
    const swap = await call('PATCH', `/v2/pods/${reader.body.id}`, {
      mounts: { network: [{ volumeId: other.body.id, path: '/d' }] },
    })
    expect(swap.status).toBe(400)
    expect(swap.body.detail).toBe(
      `mounts.network[0].volumeId cannot change (it is ${volume.body.id}); only the path can`,
    )

    for (const pod of [writer, reader])
      expect((await call('DELETE', `/v2/pods/${pod.body.id}`)).status).toBe(204)
    expect((await call('DELETE', `/v2/network-volumes/${volume.body.id}`)).status).toBe(204)
    expect((await call('DELETE', `/v2/network-volumes/${other.body.id}`)).status).toBe(204)
  })

  it('keeps a pod in its network volume’s data center, and refuses another account’s volume', async () => {
    const volume = await call('POST', '/v2/network-volumes', {
      name: 'ks',
      size: 10,
      dataCenterId: 'US-KS-2',
    })
    const elsewhere = await call('POST', '/v2/pods', {
      name: 'x',
      image: 'x',
      cpu: { id: 'cpu3c', vcpuCount: 2 },
      dataCenterIds: ['CA-MTL-1'],
      mounts: { network: [{ volumeId: volume.body.id, path: '/v' }] },
    })
    expect(elsewhere.status).toBe(400)
    expect(elsewhere.body.detail).toBe(
      `network volume ${volume.body.id} is in US-KS-2, which is not among the pod's data centers (CA-MTL-1)`,
    )
    const theirs = await call(
      'POST',
      '/v2/pods',
      {
        name: 'x',
        image: 'x',
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        mounts: { network: [{ volumeId: volume.body.id, path: '/v' }] },
      },
      strangerKey,
    )
    expect(theirs.status).toBe(400)
    expect(theirs.body.detail).toBe(`network volume "${volume.body.id}" not found in your account`)
    expect((await call('DELETE', `/v2/network-volumes/${volume.body.id}`)).status).toBe(204)
  })

  it('lets pods and templates name the account’s registries; pods keep one from being deleted', async () => {
    const registry = await call('POST', '/v2/registries', {
      name: 'ghcr',
      username: 'me',
      password: 'hunter2-secret',
    })
    expect(registry.status).toBe(201)
    const template = await call('POST', '/v2/templates', {
      name: 'private-image',
      image: 'ghcr.io/me/app',
      registry: registry.body.id,
    })
    expect(template.status).toBe(201)
    const pod = await call('POST', '/v2/pods', {
      name: 'p',
      templateId: template.body.id,
      cpu: { id: 'cpu3c', vcpuCount: 2 },
      args: 'sleep 600',
    })
    expect(pod.status).toBe(201)
    expect(pod.body.registry).toBe(registry.body.id)
    await waitRunning(pod.body.id)

    const inUse = await call('DELETE', `/v2/registries/${registry.body.id}`)
    expect(inUse.status).toBe(400)
    expect(inUse.body.detail).toContain(`pod ${pod.body.id} (p)`)
    // Templates do not keep it: they lose it when it goes (below).
    expect(inUse.body.detail).not.toContain('template')

    const theirs = await call(
      'POST',
      '/v2/pods',
      { name: 'x', image: 'x', cpu: { id: 'cpu3c', vcpuCount: 2 }, registry: registry.body.id },
      strangerKey,
    )
    expect(theirs.status).toBe(400)
    expect(theirs.body.detail).toBe(`registry "${registry.body.id}" not found`)

    expect((await call('DELETE', `/v2/pods/${pod.body.id}`)).status).toBe(204)
    expect((await call('DELETE', `/v2/registries/${registry.body.id}`)).status).toBe(204)
    expect((await call('GET', `/v2/templates/${template.body.id}`)).body.registry).toBeNull()
    expect((await call('DELETE', `/v2/templates/${template.body.id}`)).status).toBe(204)
  })
})

describe('the encryption key', () => {
  it('is generated on first start, and a different one refuses to start, saying why', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-key-'))
    const first = await startServe(['--port', '0', '--data-dir', dataDir, '--log-level', 'warn'])
    first.child.kill('SIGTERM')
    expect(await first.exited).toBe(0)
    expect(readFileSync(path.join(dataDir, 'encryption.key'), 'utf8').trim()).toMatch(
      /^[A-Za-z0-9+/]{43}=$/,
    )
    expect(statSync(path.join(dataDir, 'encryption.key')).mode & 0o777).toBe(0o600)

    const wrong = Buffer.alloc(32, 7).toString('base64')
    const refused = await runCli(['serve', '--port', '0', '--data-dir', dataDir], {
      PODYARD_ENCRYPTION_KEY: wrong,
    })
    expect(refused.code).toBe(2)
    expect(refused.stderr).toMatch(
      /encryption key does not match the one this database was created with/,
    )
    rmSync(dataDir, { recursive: true, force: true })
  })
})
