import type Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  cutHost,
  healHost,
  holdRig,
  localDocker,
  multiHostEnabled,
  readRigLayout,
  remoteDocker,
  rigHost,
  rigUnavailableReason,
  startEngine,
  stopEngine,
  tcpPortOpen,
  type RigHost,
  type RigLayout,
} from '../support/multi-host-rig.js'

/**
 * The multi-host rig itself (test/support/multi-host-rig.sh): three Docker engines in network
 * namespaces, reached by dockerode over SSH and over TCP+TLS as podyard will reach GPU hosts.
 * Opt-in: PODYARD_TEST_MULTIHOST=1 with the rig up (`.ci/run` does both). Once asked to run,
 * a rig that does not answer fails the suite rather than skipping it.
 */
const enabled = multiHostEnabled()
if (!enabled)
  console.log(
    'multi-host rig tests skipped: set PODYARD_TEST_MULTIHOST=1 (needs multi-host-rig.sh up, as root)',
  )

const LABEL = 'podyard.test'
const LABEL_VALUE = 'multi-host-rig'

/** podyard-conformance/hello:1 serving its host's name over HTTP on port 8080, published. */
async function startNameServer(
  docker: Docker,
  host: RigHost,
): Promise<{ id: string; port: number }> {
  const container = await docker.createContainer({
    Image: 'podyard-conformance/hello:1',
    Cmd: [
      'sh',
      '-c',
      'mkdir -p /srv && echo "$HOST_NAME" > /srv/index.html && exec httpd -f -p 8080 -h /srv',
    ],
    Env: [`HOST_NAME=${host.name}`],
    Labels: { [LABEL]: LABEL_VALUE },
    ExposedPorts: { '8080/tcp': {} },
    HostConfig: { PortBindings: { '8080/tcp': [{ HostPort: '' }] } },
  })
  await container.start()
  const inspected = await container.inspect()
  const binding = inspected.NetworkSettings.Ports['8080/tcp']?.[0]
  if (!binding) throw new Error(`${host.name}: port 8080 is not published`)
  return { id: container.id, port: Number(binding.HostPort) }
}

async function fetchText(url: string): Promise<string> {
  const response = await fetch(url, { signal: AbortSignal.timeout(5_000) })
  return (await response.text()).trim()
}

async function removeTestContainers(host: RigHost): Promise<void> {
  const docker = localDocker(host)
  const containers = await docker.listContainers({
    all: true,
    filters: { label: [`${LABEL}=${LABEL_VALUE}`] },
  })
  for (const c of containers) await docker.getContainer(c.Id).remove({ force: true })
}

describe.runIf(enabled)('the multi-host rig', () => {
  let layout: RigLayout
  let release: (() => void) | undefined

  beforeAll(async () => {
    release = await holdRig()
    const reason = await rigUnavailableReason()
    if (reason) throw new Error(`PODYARD_TEST_MULTIHOST=1 but the rig is not usable: ${reason}`)
    layout = readRigLayout()
  }, 960_000)

  afterAll(async () => {
    try {
      if (!layout) return
      // Leave the rig as it was found, even when a test stopped in the middle.
      for (const host of layout.hosts) {
        await healHost(layout, host)
        await startEngine(layout, host)
        await removeTestContainers(host)
      }
    } finally {
      release?.()
    }
  })

  it('each engine answers info over its own transport: SSH for two hosts, TCP+TLS for one', async () => {
    expect(layout.hosts.map((h) => [h.name, h.transport, h.dockerUrl])).toEqual([
      ['gpu-node-1', 'ssh', 'ssh://podyard-rig@10.213.0.11'],
      ['gpu-node-2', 'ssh', 'ssh://podyard-rig@10.213.0.12'],
      ['gpu-node-3', 'tls', 'tcp://10.213.0.13:2376'],
    ])
    const ids = new Set<string>()
    for (const host of layout.hosts) {
      const info = await remoteDocker(layout, host).info()
      expect(info.Name).toBe(host.name)
      expect(info.LiveRestoreEnabled).toBe(true)
      ids.add(info.ID)
      const images = await remoteDocker(layout, host).listImages()
      expect(images.flatMap((i) => i.RepoTags ?? [])).toEqual(
        expect.arrayContaining(['podyard-conformance/plain:1', 'podyard-conformance/hello:1']),
      )
    }
    expect(ids.size).toBe(3)
  })

  it("a container on each host is reachable on its published port at that host's address", async () => {
    for (const host of layout.hosts) {
      const { port } = await startNameServer(remoteDocker(layout, host), host)
      await expect.poll(() => tcpPortOpen(host.address, port), { timeout: 10_000 }).toBe(true)
      expect(await fetchText(`http://${host.address}:${port}/`)).toBe(host.name)
    }
  })

  it.each(['gpu-node-1', 'gpu-node-3'])(
    '%s: a killed dockerd is unreachable; started again it answers and its container kept running (live-restore)',
    async (name) => {
      const host = rigHost(layout, name)
      const docker = remoteDocker(layout, host)
      const { id, port } = await startNameServer(docker, host)
      const before = await docker.getContainer(id).inspect()

      await stopEngine(layout, host)
      await expect(remoteDocker(layout, host).ping()).rejects.toThrow()
      await expect(localDocker(host).ping()).rejects.toThrow()

      await startEngine(layout, host)
      const after = await remoteDocker(layout, host).getContainer(id).inspect()
      expect(after.State.Running).toBe(true)
      // Not restarted: the same process since the same start.
      expect(after.State.StartedAt).toBe(before.State.StartedAt)
      expect(after.State.Pid).toBe(before.State.Pid)
      await expect.poll(() => tcpPortOpen(host.address, port), { timeout: 10_000 }).toBe(true)
      expect(await fetchText(`http://${host.address}:${port}/`)).toBe(host.name)
    },
  )

  it('a host cut off the bridge does not answer, and answers again once healed', async () => {
    const host = rigHost(layout, 'gpu-node-2')
    await cutHost(layout, host)
    expect(await tcpPortOpen(host.address, 22, 1_000)).toBe(false)
    await healHost(layout, host)
    await expect.poll(() => tcpPortOpen(host.address, 22, 1_000), { timeout: 10_000 }).toBe(true)
    expect((await remoteDocker(layout, host).info()).Name).toBe(host.name)
  })

  it('the SSH transport refuses a host key other than the known one', async () => {
    const host = rigHost(layout, 'gpu-node-1')
    const otherKey = rigHost(layout, 'gpu-node-2').sshHostKey
    expect(otherKey).toBeDefined()
    await expect(remoteDocker(layout, host, { sshHostKey: otherKey }).ping()).rejects.toThrow(
      /verification failed/i,
    )
    expect(await remoteDocker(layout, host).ping()).toBeTruthy()
  })

  it('the TLS transport refuses a client without a certificate from the rig CA', async () => {
    const host = rigHost(layout, 'gpu-node-3')
    await expect(
      remoteDocker(layout, host, { withoutClientCertificate: true }).ping(),
    ).rejects.toThrow(/bad certificate|certificate required/i)
    expect(await remoteDocker(layout, host).ping()).toBeTruthy()
  })
})
