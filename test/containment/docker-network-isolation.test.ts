import { execFileSync, spawnSync } from 'node:child_process'
import { createServer, type Server } from 'node:net'
import { networkInterfaces } from 'node:os'
import { afterEach, describe, expect, it } from 'vitest'
import { removeHostFirewall } from '../../src/runtime/docker/host-firewall.js'
import { containerName } from '../../src/runtime/docker/container-spec.js'
import { KyselyServerIdRepo } from '../../src/store/server-id-repo.js'
import { json } from '../support/http.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'
import { simulatedDockerFleet } from '../support/docker-fleet.js'

/**
 * Tenant containment on the docker driver, through the real HTTP API as two
 * non-admin accounts against a real Docker engine: a pod cannot reach another account's
 * undeclared ports, the host's own services or the metadata address; its declared port is
 * reachable, and an account's globally networked pods reach each other by name. Needs
 * PODYARD_TEST_DOCKER=1, root (the driver installs iptables rules) and the conformance images.
 */
const enabled = process.env.PODYARD_TEST_DOCKER === '1'
if (!enabled) console.log('docker network tests skipped: set PODYARD_TEST_DOCKER=1 (needs dockerd)')

const IMAGE = 'podyard-conformance/plain:1'
const METADATA_IP = '169.254.169.254'

// Four GPU pods: two hosts of two GPUs and two vCPUs (this machine may have only two CPUs).
const FLEET = simulatedDockerFleet({
  hostId: 'sim-l4-net',
  gpus: 2,
  vcpus: 2,
  hosts: 2,
  globalNetwork: true,
})

interface PodJson {
  id: string
  status: string
  statusReason: string | null
  runtime: { ports: { private: number; public: number }[] } | null
  globalNetworking?: { internalDns: string }
}

function docker(args: string[]): string {
  return execFileSync('docker', args, { encoding: 'utf8' }).trim()
}

/** Runs `script` in the pod's container; whether it exited 0 and what it wrote. */
function inPod(container: string, script: string): { ok: boolean; output: string } {
  const result = spawnSync('docker', ['exec', container, 'sh', '-c', script], {
    encoding: 'utf8',
    timeout: 20_000,
  })
  return { ok: result.status === 0, output: `${result.stdout}${result.stderr}`.trim() }
}

/** A TCP connection from the pod to ip:port (busybox nc, 3 s to connect). */
function connects(container: string, ip: string, port: number): boolean {
  return inPod(container, `echo probe | nc -w 3 ${ip} ${port}`).ok
}

describe.skipIf(!enabled)('network isolation on the docker driver', () => {
  const cleanups: (() => Promise<void> | void)[] = []
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  })

  it("keeps a pod from other accounts' ports, the host's services and the metadata address", async () => {
    // The metadata address on this host's loopback interface (this kernel has no dummy links): before the fix a pod reached it (and any listener on
    // the host) through its bridge's gateway; a timeout (not a refusal) proves the drop.
    spawnSync('ip', ['addr', 'del', `${METADATA_IP}/32`, 'dev', 'lo'])
    execFileSync('ip', ['addr', 'add', `${METADATA_IP}/32`, 'dev', 'lo'])
    cleanups.push(() => void spawnSync('ip', ['addr', 'del', `${METADATA_IP}/32`, 'dev', 'lo']))
    cleanups.push(() => removeHostFirewall())

    // A service of the host on every address, on a port no pod declares.
    const accepted: string[] = []
    const listener: Server = createServer((socket) => {
      accepted.push(socket.localAddress ?? '')
      socket.end()
    })
    await new Promise<void>((resolve) => listener.listen(0, '0.0.0.0', resolve))
    cleanups.push(() => new Promise<void>((resolve) => listener.close(() => resolve())))
    const hostPort = (listener.address() as { port: number }).port

    const platform: TestPlatform = await startTestPlatform(
      {
        // Members' pods run here whether or not the engine sizes container disks (overlay2 on
        // ext4 does not): this test is about the network (containment-docker.test.ts: the disk).
        containment: { acceptUnenforced: ['disk'] },
      },
      { fleetYaml: FLEET },
    )
    const serverId = (await new KyselyServerIdRepo(platform.store.db).get())!
    cleanups.push(async () => {
      await platform.close()
      // A pod outlives its server: what a failure left before the pods were terminated goes.
      const label = `label=podyard.server=${serverId}`
      const ids = (listing: string) => listing.split('\n').filter(Boolean)
      const containers = ids(docker(['ps', '-aq', '--filter', label]))
      if (containers.length > 0) docker(['rm', '-f', ...containers])
      const networks = ids(docker(['network', 'ls', '-q', '--filter', label]))
      if (networks.length > 0) docker(['network', 'rm', ...networks])
    })
    const keyA = await otherAccountKey(platform, 'a@example.com')
    const keyB = await otherAccountKey(platform, 'b@example.com')

    const create = async (key: string, body: Record<string, unknown>): Promise<PodJson> =>
      json<PodJson>(
        await platform.call('/v2/pods', {
          method: 'POST',
          key,
          json: { image: IMAGE, gpu: { id: 'NVIDIA L4', count: 1 }, ...body },
        }),
        201,
      )
    const running = async (key: string, id: string): Promise<PodJson> => {
      let pod: PodJson | undefined
      await expect
        .poll(
          async () => {
            pod = await json<PodJson>(await platform.call(`/v2/pods/${id}`, { key }))
            return pod.status
          },
          { timeout: 60_000, interval: 200 },
        )
        .toBe('RUNNING')
      return pod!
    }

    // B's pod: 8080 declared, 9000 not.
    const serveB = await create(keyB, {
      name: 'b-web',
      ports: ['8080/http'],
      args: 'httpd -p 9000 -h /etc; exec httpd -f -p 8080 -h /etc',
    })
    const probeA = await create(keyA, { name: 'a-probe', args: 'exec sleep 100000' })
    const globalA1 = await create(keyA, {
      name: 'a-g1',
      globalNetworking: true,
      args: 'exec httpd -f -p 8080 -h /etc',
    })
    const g1 = await running(keyA, globalA1.id)
    const globalA2 = await create(keyA, {
      name: 'a-g2',
      globalNetworking: true,
      args: 'exec sleep 100000',
    })
    const b = await running(keyB, serveB.id)
    await running(keyA, probeA.id)
    await running(keyA, globalA2.id)

    const probe = containerName(serverId, probeA.id)
    const bContainer = containerName(serverId, serveB.id)
    const [bIp] = docker([
      'inspect',
      '-f',
      '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}',
      bContainer,
    ]).split(' ')
    const [gateway] = docker([
      'inspect',
      '-f',
      '{{range .NetworkSettings.Networks}}{{.Gateway}} {{end}}',
      probe,
    ]).split(' ')

    // B's declared port answers from the host, and B's own pod reaches its undeclared one.
    const declared = b.runtime!.ports.find((p) => p.private === 8080)!.public
    expect((await fetch(`http://127.0.0.1:${declared}/hostname`)).status).toBe(200)
    expect(inPod(bContainer, 'timeout 5 wget -q -O- http://127.0.0.1:9000/hostname').ok).toBe(true)

    // A's pod cannot reach B's undeclared port by its address.
    const toB = inPod(probe, `timeout 5 wget -q -O- http://${bIp}:9000/hostname`)
    expect(toB, `A reached B's undeclared port at ${bIp}:9000`).toMatchObject({ ok: false })

    // Nor the host's service: at the bridge gateway, or the host's other addresses.
    const hostAddresses = Object.entries(networkInterfaces())
      .filter(([name]) => !/^(docker|br-|veth|pyd|kdn)/.test(name))
      .flatMap(([, addresses]) => addresses ?? [])
      .filter((a) => a.family === 'IPv4' && !a.internal)
      .map((a) => a.address)
      .slice(0, 2)
    for (const address of [gateway!, ...hostAddresses]) {
      expect(connects(probe, address, hostPort), `A reached the host at ${address}`).toBe(false)
    }
    // Nor the metadata address.
    expect(connects(probe, METADATA_IP, hostPort), 'A reached the metadata address').toBe(false)
    expect(accepted).toEqual([])

    // A's globally networked pods reach each other by name, an undeclared port included.
    const byName = inPod(
      containerName(serverId, globalA2.id),
      `timeout 5 wget -q -O- http://${g1.globalNetworking!.internalDns}:8080/hostname`,
    )
    expect(byName.ok, byName.output).toBe(true)
    // And B's pod cannot reach them, by name or address.
    const [g1Ip] = docker([
      'inspect',
      '-f',
      '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}',
      containerName(serverId, globalA1.id),
    ]).split(' ')
    expect(inPod(bContainer, `timeout 5 wget -q -O- http://${g1Ip}:8080/hostname`).ok).toBe(false)

    // Terminated, the accounts' networks go with their last containers.
    for (const [key, id] of [
      [keyB, serveB.id],
      [keyA, probeA.id],
      [keyA, globalA1.id],
      [keyA, globalA2.id],
    ] as const) {
      const response = await platform.call(`/v2/pods/${id}`, { method: 'DELETE', key })
      expect(response.status).toBeLessThan(300)
    }
    await expect
      .poll(() => docker(['network', 'ls', '--filter', `label=podyard.server=${serverId}`, '-q']), {
        timeout: 30_000,
        interval: 250,
      })
      .toBe('')
  }, 180_000)
})
