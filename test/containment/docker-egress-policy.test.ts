import { execFileSync, spawnSync, type ChildProcess } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { containerName } from '../../src/runtime/docker/container-spec.js'
import {
  installHostFirewall,
  INPUT_CHAIN,
  allowedPortsIn,
} from '../../src/runtime/docker/host-firewall.js'
import { KyselyServerIdRepo } from '../../src/store/server-id-repo.js'
import { simulatedDockerFleet } from '../support/docker-fleet.js'
import { json } from '../support/http.js'
import { PEER_PORT, peerNamespace, removePeer, startPeer } from '../support/peer-namespaces.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'

/**
 * The operator's egress policy (config `containment.egress`) on the docker driver: a member's
 * pod on its tenant bridge connects to two listeners outside the host's own addresses (network
 * namespaces of the test's own). With `deny: [B]` it reaches A and not B; with `allow: [A]`
 * the same. Needs PODYARD_TEST_DOCKER=1 and root (the driver installs the host firewall).
 * The firewall is the host's: afterwards it is installed again without the policy.
 *
 * Every podyard server of the host installs the chain at its start, the last one's policy
 * winning (docs/security.md), so this file runs alone, in the abuse suite's pass
 * (PODYARD_TEST_ABUSE=1 too): beside other test files, a platform of theirs started between
 * this one's start and its probe put its own policy back (CI once saw B reached under
 * `allow: [A]`), and this file's `allow` cut their pods off the outside meanwhile.
 */
const enabled = process.env.PODYARD_TEST_DOCKER === '1' && process.env.PODYARD_TEST_ABUSE === '1'
if (!enabled) {
  console.log(
    'docker egress tests skipped: set PODYARD_TEST_DOCKER=1 PODYARD_TEST_ABUSE=1 (the host firewall is set, so alone)',
  )
}

const IMAGE = 'podyard-conformance/plain:1'
const FLEET = simulatedDockerFleet({ hostId: `sim-egress-${process.pid}`, gpus: 1, vcpus: 1 })
const PEERS = { a: peerNamespace('a', 248), b: peerNamespace('b', 249) }

interface PodJson {
  id: string
  status: string
}

/** Whether the container's TCP connection to the peer answers (busybox nc, 3 s to connect). */
function reaches(container: string, address: string): boolean {
  const result = spawnSync(
    'docker',
    ['exec', container, 'sh', '-c', `nc -w 3 ${address} ${PEER_PORT} </dev/null`],
    { encoding: 'utf8', timeout: 20_000 },
  )
  return result.stdout.includes('peer-')
}

describe.runIf(enabled)('the egress policy on the docker driver', () => {
  const peers: ChildProcess[] = []

  beforeAll(async () => {
    peers.push(await startPeer(PEERS.a), await startPeer(PEERS.b))
  }, 30_000)

  afterAll(() => {
    for (const child of peers) child.kill('SIGTERM')
    removePeer(PEERS.a)
    removePeer(PEERS.b)
    // The host's firewall as a server without a policy installs it (other servers' ports kept).
    const listing = spawnSync('iptables', ['-S', INPUT_CHAIN], { encoding: 'utf8' }).stdout
    installHostFirewall({ allowedPorts: allowedPortsIn(listing), deniedDestinations: [] })
  })

  /** A platform with `egress` and a member's running pod on it: whether it reaches A and B. */
  const probeWith = async (egress: { allow?: string[]; deny?: string[] }) => {
    const platform: TestPlatform = await startTestPlatform(
      { containment: { acceptUnenforced: ['disk'], egress: { allow: [], deny: [], ...egress } } },
      { fleetYaml: FLEET },
    )
    const serverId = (await new KyselyServerIdRepo(platform.store.db).get())!
    try {
      const member = await otherAccountKey(platform, 'docker-egress@example.com')
      const pod = await json<PodJson>(
        await platform.call('/v2/pods', {
          method: 'POST',
          key: member,
          json: {
            name: 'egress',
            image: IMAGE,
            gpu: { id: 'NVIDIA L4', count: 1 },
            args: 'exec sleep 100000',
          },
        }),
        201,
      )
      await expect
        .poll(
          async () =>
            (await json<PodJson>(await platform.call(`/v2/pods/${pod.id}`, { key: member })))
              .status,
          { timeout: 60_000, interval: 200 },
        )
        .toBe('RUNNING')
      const container = containerName(serverId, pod.id)
      return { a: reaches(container, PEERS.a.address), b: reaches(container, PEERS.b.address) }
    } finally {
      await platform.close()
      const label = `label=podyard.server=${serverId}`
      const ids = (args: string[]) =>
        execFileSync('docker', args, { encoding: 'utf8' }).split('\n').filter(Boolean)
      const containers = ids(['ps', '-aq', '--filter', label])
      if (containers.length > 0) execFileSync('docker', ['rm', '-f', ...containers])
      const networks = ids(['network', 'ls', '-q', '--filter', label])
      if (networks.length > 0) execFileSync('docker', ['network', 'rm', ...networks])
    }
  }

  it('without a policy reaches both; with deny, not the denied one; with allow, only the allowed', async () => {
    expect(await probeWith({})).toEqual({ a: true, b: true })
    expect(await probeWith({ deny: [PEERS.b.cidr] })).toEqual({ a: true, b: false })
    expect(await probeWith({ allow: [PEERS.a.address] })).toEqual({ a: true, b: false })
  }, 240_000)
})
