import path from 'node:path'
import Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../support/cli.js'
import { fleetYaml, gpuHost } from '../support/fleet-yaml.js'
import {
  otherAccountKey,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type CallInit,
  type TestPlatform,
} from '../support/platform.js'
import { untilFound } from '../support/until.js'

/**
 * What a host offers is what its engine reports, the fleet file's declaration being a ceiling
 * (docs/fleet.md, "Declared and reported"), against this machine's Docker engine
 * (PODYARD_TEST_DOCKER=1): it has no `nvidia` runtime and few CPUs, so a real host declaring an
 * NVIDIA L4 must not sell it, and a simulated host declaring four times the engine's CPUs must
 * give a one-GPU pod what the engine can run (Docker refuses more CPUs than the machine has).
 */
const enabled = process.env.PODYARD_TEST_DOCKER === '1'
if (!enabled) console.log('reported-hardware docker tests skipped: set PODYARD_TEST_DOCKER=1')

const IMAGE = 'podyard-conformance/plain:1'
const SOCKET = process.env.DOCKER_HOST?.startsWith('unix://')
  ? process.env.DOCKER_HOST
  : 'unix:///var/run/docker.sock'

interface EngineFacts {
  cpus: number
  nvidia: boolean
}

async function engineFacts(): Promise<EngineFacts> {
  const info = (await new Docker().info()) as { NCPU: number; Runtimes?: Record<string, unknown> }
  return { cpus: info.NCPU, nvidia: Boolean(info.Runtimes?.nvidia) }
}

/**
 * `real-l4`: a real host (this engine, by its socket) declaring one NVIDIA L4; `sim-a40`: a
 * simulated host declaring one A40 and four times the engine's CPUs.
 */
function fleetFile(declaredVcpus: number): string {
  return fleetYaml({
    hosts: [
      gpuHost('real-l4', 'NVIDIA L4', 1, {
        vcpus: 1,
        memoryGb: 1,
        simulated: false,
        docker: { url: SOCKET },
      }),
      gpuHost('sim-a40', 'NVIDIA A40', 1, { vcpus: declaredVcpus, memoryGb: 1, driver: 'docker' }),
    ],
  })
}

interface HostJson {
  dataCenterId: string
  stateReason: string | null
  reported: { engineId?: string } | null
  id: string
  state: string
  checkedAt: string | null
  warnings: string[]
  offered: { gpu: { typeId: string; count: number } | null; vcpus: number; memoryGb: number }
}

interface PodJson {
  id: string
  name: string
  status: string
  statusReason: string | null
}

describe.runIf(enabled)('hardware as reported on a Docker host', () => {
  let platform: TestPlatform
  let engine: EngineFacts
  let memberKey: string
  const admin = (p: string, init: CallInit = {}) => platform.call(p, init)
  const member = (p: string, init: CallInit = {}) => platform.call(p, { ...init, key: memberKey })

  /** What `podyard hosts get <id>` prints, as the operator reads it. */
  const hostsGet = async (hostId: string) =>
    (await runCli(['hosts', 'get', hostId, '--url', platform.url, '--api-key', TEST_ADMIN_KEY]))
      .stdout

  /** The host once its engine has been probed. */
  const probed = (hostId: string) =>
    untilFound(`host ${hostId} probed`, async () => {
      const host = (await (await admin(`/v2/admin/hosts/${hostId}`)).json()) as HostJson
      return host.state === 'UP' && host.checkedAt !== null ? host : undefined
    })

  beforeAll(async () => {
    engine = await engineFacts()
    platform = await startTestPlatform(
      {
        hosts: { probeIntervalMs: 500, probeTimeoutMs: 5_000, failuresBeforeDown: 3 },
        // This engine cannot size a container disk: let the member's pods run anyway.
        containment: { acceptUnenforced: ['disk'] },
      },
      { fleetYaml: fleetFile(engine.cpus * 4) },
    )
    memberKey = await otherAccountKey(
      platform,
      `member-${path.basename(platform.dataDir)}@example.com`,
    )
  }, 60_000)

  afterAll(async () => {
    await platform?.close()
  })

  it('does not sell an NVIDIA L4 whose engine has no nvidia runtime, and says why', async () => {
    if (engine.nvidia) {
      console.log('skipped: this engine has the nvidia runtime')
      return
    }
    const host = await probed('real-l4')
    const why = 'declares 1 × NVIDIA L4 but its engine has no nvidia runtime: GPUs not offered'
    expect(host.warnings).toContain(why)
    expect(host.offered.gpu).toBeNull()

    // The catalog has the type (the fleet declares it) and none in stock.
    const l4 = (await (await member('/v2/catalog/gpus/NVIDIA%20L4')).json()) as {
      availability: string
    }
    expect(l4.availability).toBe('NONE')

    // A member's GPU pod is refused at once, with the host's reason, rather than left to
    // fail in its container.
    const refused = await member('/v2/pods', {
      method: 'POST',
      json: { name: 'l4-pod', image: IMAGE, gpu: { id: 'NVIDIA L4', count: 1 } },
    })
    expect(refused.status).toBe(409)
    const problem = (await refused.json()) as { detail: string }
    expect(problem.detail).toContain('no host has 1 free NVIDIA L4')
    expect(problem.detail).toContain(`real-l4 ${why}`)
    expect(
      ((await (await member('/v2/pods')).json()) as { pods: PodJson[] }).pods.filter(
        (p) => p.name === 'l4-pod',
      ),
    ).toEqual([])

    // The operator reads the same in `podyard hosts get`.
    expect(await hostsGet('real-l4')).toContain(`warning     ${why}`)
  })

  it("gives a GPU pod its share of the engine's CPUs, not of the declared ones", async () => {
    const host = await probed('sim-a40')
    const declared = engine.cpus * 4
    expect(host.warnings).toContain(
      `declares ${declared} vCPUs, its engine has ${engine.cpus}: offers ${engine.cpus}`,
    )
    expect(host.offered.vcpus).toBe(engine.cpus)
    // Simulated hosts keep their declared virtual GPUs.
    expect(host.offered.gpu).toMatchObject({ typeId: 'NVIDIA A40', count: 1 })

    const created = await member('/v2/pods', {
      method: 'POST',
      json: {
        name: 'a40-pod',
        image: IMAGE,
        gpu: { id: 'NVIDIA A40', count: 1 },
        args: 'exec sleep 600',
      },
    })
    expect(created.status).toBe(201)
    const { id } = (await created.json()) as PodJson
    const pod = await untilFound(`pod ${id} RUNNING or failed`, async () => {
      const seen = (await (await member(`/v2/pods/${id}`)).json()) as PodJson
      return ['RUNNING', 'ERROR', 'EXITED'].includes(seen.status) ? seen : undefined
    })
    expect(pod.statusReason).toBeNull()
    expect(pod.status).toBe('RUNNING')
    const container = await untilFound('its container', async () => {
      const [found] = await new Docker().listContainers({
        filters: { label: [`podyard.workload=${id}`] },
      })
      return found
    })
    const inspection = await new Docker().getContainer(container.Id).inspect()
    expect(inspection.HostConfig.NanoCpus).toBe(engine.cpus * 1e9)
    // GraphQL tells the member the same share.
    const graphql = await member('/graphql', {
      method: 'POST',
      json: { query: `{ pod(input: {podId: "${id}"}) { vcpuCount } }` },
    })
    expect(await graphql.json()).toEqual({ data: { pod: { vcpuCount: engine.cpus } } })
    await member(`/v2/pods/${id}`, { method: 'DELETE' })
  })

  it('takes a second real host on the same engine DOWN at once, naming the first', async () => {
    const first = await probed('real-l4')
    const { ID } = (await new Docker().info()) as { ID: string }
    expect(first.reported?.engineId).toBe(ID)
    expect(await hostsGet('real-l4')).toContain(`engine id   ${ID}\n`)

    // The same engine under another host: it would sell this machine a second time.
    const added = await admin('/v2/admin/hosts', {
      method: 'POST',
      json: {
        id: 'real-twin',
        dataCenterId: first.dataCenterId,
        cpuFlavors: ['cpu3c'],
        vcpus: 2,
        memoryGb: 4,
        simulated: false,
        docker: { url: SOCKET },
      },
    })
    expect(added.status, await added.clone().text()).toBe(201)
    const twin = await untilFound('real-twin probed', async () => {
      const host = (await (await admin('/v2/admin/hosts/real-twin')).json()) as HostJson
      return host.checkedAt !== null ? host : undefined
    })
    expect(twin.state).toBe('DOWN')
    expect(twin.stateReason).toBe(
      `its engine is host real-l4's (engine id ${ID}): one machine listed twice would be sold ` +
        'twice; remove one of the two hosts, or point real-twin at its own machine',
    )
    // The first keeps its machine; the simulated host on the same engine is no twin.
    expect((await probed('real-l4')).state).toBe('UP')
    expect((await probed('sim-a40')).state).toBe('UP')
    // Placement says why it does not use the twin.
    const refused = await member('/v2/pods', {
      method: 'POST',
      json: { name: 'twin-pod', image: IMAGE, cpu: { id: 'cpu3c', vcpuCount: 2 } },
    })
    expect(refused.status).toBe(409)
    expect(((await refused.json()) as { detail: string }).detail).toContain(
      'real-twin is DOWN since',
    )
    expect((await admin('/v2/admin/hosts/real-twin', { method: 'DELETE' })).status).toBe(204)
  })
})
