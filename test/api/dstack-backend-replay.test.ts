import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as dstack from '../fixtures/dstack-runpod-documents.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'
import { until } from '../support/until.js'

/**
 * dstack's RunPod backend, unmodified, against podyard: the GraphQL documents it sends (written
 * as fixtures from reading its source: test/fixtures/dstack-runpod-documents.ts) replayed over
 * HTTP as a member account, through its whole path: gpuhunt's keyless offers -> create ->
 * wait for the SSH port -> SSH endpoint -> terminate, for GPU and CPU pods with and without a
 * network volume, and for a cluster. Every field dstack or gpuhunt reads from an answer is
 * checked.
 */

// Documents and answers are read loosely; each field used is checked explicitly.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const H100 = 'NVIDIA H100 80GB HBM3'
const RTX_4090 = 'NVIDIA GeForce RTX 4090'
const IMAGE = 'dstackai/base:py3.12-0.7-cuda-12.1'
const BANNER = 'SSH-2.0-dstack-replay'

/** What dstack's docker commands end in, here: a stand-in for its sshd on the runner port. */
const COMMANDS = [
  'echo runner starting',
  `exec node -e 'require("net").createServer((s) => s.end("${BANNER}")).listen(process.env.RUNPOD_TCP_PORT_${dstack.DSTACK_RUNNER_SSH_PORT})'`,
]

/** Two H100 hosts (a cluster of two 8-GPU pods), RTX 4090s in both clouds, a CPU host. */
const FLEET = {
  dataCenters: [
    {
      id: 'US-KS-2',
      name: 'US Kansas 2',
      region: 'NORTH_AMERICA',
      globalNetwork: true,
      networkVolumeTypes: ['STANDARD'],
      compliance: ['SOC_2_TYPE_2'],
    },
    {
      id: 'CA-MTL-1',
      name: 'CA Montreal 1',
      region: 'NORTH_AMERICA',
      globalNetwork: false,
      networkVolumeTypes: ['STANDARD'],
      compliance: [],
    },
  ],
  hosts: [
    ...[1, 2].map((n) => ({
      id: `h100-${n}`,
      dataCenterId: 'US-KS-2',
      cloud: 'SECURE',
      gpu: { typeId: H100, count: 8, cudaVersion: '12.9' },
      vcpus: 192,
      memoryGb: 2000,
      diskGb: 8000,
    })),
    {
      id: 'rtx4090-s1',
      dataCenterId: 'US-KS-2',
      cloud: 'SECURE',
      gpu: { typeId: RTX_4090, count: 4, cudaVersion: '12.8' },
      vcpus: 64,
      memoryGb: 248,
      diskGb: 2000,
    },
    {
      id: 'rtx4090-c1',
      dataCenterId: 'CA-MTL-1',
      cloud: 'COMMUNITY',
      gpu: { typeId: RTX_4090, count: 2, cudaVersion: '12.8' },
      vcpus: 16,
      memoryGb: 64,
      diskGb: 500,
    },
    {
      id: 'cpu-1',
      dataCenterId: 'US-KS-2',
      cloud: 'SECURE',
      cpuFlavors: ['cpu3c'],
      vcpus: 32,
      memoryGb: 64,
      diskGb: 640,
    },
  ],
  localHost: false,
}

/** An offer as gpuhunt makes it from the answers. */
interface Offer {
  instance: string
  location: string
  price: number
  cpu: number
  memory: number
  gpuCount: number
  disk?: number
}

describe("dstack's RunPod backend against podyard", () => {
  let platform: TestPlatform
  let key: string

  async function post(
    body: Record<string, unknown>,
    withKey: boolean,
  ): Promise<{ status: number; body: Json }> {
    const response = await fetch(`${platform.url}/graphql`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(withKey ? { authorization: `Bearer ${key}` } : {}),
      },
      body: JSON.stringify(body),
    })
    return { status: response.status, body: await response.json() }
  }

  /** dstack's _make_request: 200 and no errors[] (RunPod answers 200 on client errors). */
  async function send(query: string): Promise<Json> {
    const answer = await post({ query }, true)
    expect(answer.status, JSON.stringify(answer.body)).toBe(200)
    expect(answer.body.errors, JSON.stringify(answer.body.errors)).toBeUndefined()
    return answer.body.data
  }

  /** A request dstack sees fail: RunpodApiClientError(errors). */
  async function refused(query: string): Promise<Json[]> {
    const answer = await post({ query }, true)
    expect(answer.status).toBe(200)
    expect(answer.body.errors?.length, JSON.stringify(answer.body)).toBeGreaterThan(0)
    return answer.body.errors
  }

  /** gpuhunt's _make_request: no key, raise_for_status, the JSON. */
  async function keyless(query: string, variables: Record<string, unknown> = {}): Promise<Json> {
    const answer = await post({ query, variables }, false)
    expect(answer.status, JSON.stringify(answer.body)).toBe(200)
    expect(answer.body.errors, JSON.stringify(answer.body.errors)).toBeUndefined()
    return answer.body.data
  }

  beforeAll(async () => {
    // JSON is YAML: the fleet file is read either way.
    platform = await startTestPlatform(
      { publicIp: '127.0.0.1' },
      { fleetYaml: JSON.stringify(FLEET) },
    )
    key = await otherAccountKey(platform, 'dstack-replay@example.com')
  })

  afterAll(async () => {
    await platform?.close()
  })

  /** gpuhunt's RunpodProvider: GPU offers by data center and country, cluster and CPU offers. */
  async function gpuhuntOffers(): Promise<{ gpu: Offer[]; cluster: Offer[]; cpu: Offer[] }> {
    const map = await keyless(dstack.GPU_MAP_QUERY)
    const known = new Set<string>()
    for (const type of map.gpuTypes) {
      expect(type).toEqual({
        id: expect.any(String),
        manufacturer: expect.any(String),
        displayName: expect.any(String),
        memoryInGb: expect.any(Number),
      })
      if (['NVIDIA', 'AMD'].includes(type.manufacturer.toUpperCase())) known.add(type.id)
    }
    const types = await keyless(dstack.GPU_TYPES_QUERY)
    expect(types.countryCodes.sort()).toEqual(['CA', 'US'])
    expect(types.dataCenters).toEqual([
      { id: 'US-KS-2', name: 'US Kansas 2', listed: true, __typename: 'DataCenter' },
      { id: 'CA-MTL-1', name: 'CA Montreal 1', listed: true, __typename: 'DataCenter' },
    ])
    const h100 = types.gpuTypes.find((t: Json) => t.id === H100)
    expect(h100).toMatchObject({ maxGpuCount: 8, minPodGpuCount: 1, secureCloud: true })
    const maxGpuCount = Math.max(...types.gpuTypes.map((t: Json) => t.maxGpuCount))
    expect(maxGpuCount).toBe(8)

    const gpu: Offer[] = []
    const listed = types.dataCenters.filter((dc: Json) => dc.listed).map((dc: Json) => dc.id)
    for (let gpuCount = 1; gpuCount <= maxGpuCount; gpuCount++) {
      const wheres = [
        ...listed.map((dataCenterId: string) => ({ secureCloud: true as const, dataCenterId })),
        ...types.countryCodes.map((countryCode: string) => ({
          secureCloud: false as const,
          countryCode,
        })),
      ]
      for (const where of wheres) {
        const data = await keyless(
          dstack.POD_TYPES_QUERY,
          dstack.podTypesVariables(where, gpuCount),
        )
        for (const type of data.gpuTypes) {
          if (type.lowestPrice.stockStatus === null || !known.has(type.id)) continue
          const price = where.secureCloud ? type.securePrice : type.communityPrice
          if (!price) continue
          expect(type.lowestPrice).toMatchObject({
            minVcpu: expect.any(Number),
            minMemory: expect.any(Number),
            compliance: expect.any(Array),
            countryCode: where.secureCloud ? null : where.countryCode,
          })
          gpu.push({
            instance: type.id,
            location: where.secureCloud ? where.dataCenterId : where.countryCode,
            price: gpuCount * price,
            cpu: type.lowestPrice.minVcpu,
            memory: type.lowestPrice.minMemory,
            gpuCount,
          })
        }
      }
    }

    const cluster: Offer[] = []
    const clusterTypes = await keyless(dstack.POD_TYPES_QUERY, dstack.CLUSTER_OFFERS_VARIABLES)
    for (const type of clusterTypes.gpuTypes) {
      const { minVcpu, minMemory } = type.lowestPrice
      if (minVcpu === null || minMemory === null) continue
      for (const location of type.nodeGroupDatacenters) {
        cluster.push({
          instance: type.id,
          location: location.id,
          price: type.clusterPrice * type.maxGpuCount,
          cpu: minVcpu,
          memory: minMemory,
          gpuCount: type.maxGpuCount,
        })
      }
    }

    const cpu: Offer[] = []
    const cpuCenters = await keyless(dstack.CPU_DATA_CENTERS_QUERY)
    for (const dc of cpuCenters.dataCenters.filter((d: Json) => d.listed)) {
      const flavors = await keyless(dstack.CPU_FLAVORS_QUERY, { dataCenterId: dc.id })
      for (const flavor of flavors.cpuFlavors) {
        const { stockStatus, securePrice } = flavor.specifics
        if (stockStatus === null || securePrice === null) continue
        for (let vcpu = flavor.minVcpu; vcpu <= flavor.maxVcpu; vcpu *= 2) {
          const memory = vcpu * flavor.ramMultiplier
          cpu.push({
            instance: `${flavor.id}-${vcpu}-${memory}`,
            location: dc.id,
            price: (securePrice * vcpu) / flavor.minVcpu,
            cpu: vcpu,
            memory,
            gpuCount: 0,
            disk: vcpu * flavor.diskLimitPerVcpu,
          })
        }
      }
    }
    return { gpu, cluster, cpu }
  }

  /** wait_for_instance / update_provisioning_data: the runner port's ip and public port. */
  async function sshEndpoint(podId: string): Promise<{ host: string; port: number }> {
    const pod = await until(
      `pod ${podId} with its runtime ports`,
      async () => (await send(dstack.podQuery(podId))).pod,
      (p: Json) => p.runtime !== null && p.runtime.ports.length > 0,
    )
    expect(pod).toMatchObject({
      id: podId,
      desiredStatus: 'RUNNING',
      ports: `${dstack.DSTACK_RUNNER_SSH_PORT}/tcp`,
      env: expect.arrayContaining(['RUNPOD_POD_USER=0']),
      machine: { gpuDisplayName: expect.any(String) },
    })
    const port = pod.runtime.ports.find(
      (p: Json) => p.privatePort === dstack.DSTACK_RUNNER_SSH_PORT,
    )
    expect(port).toMatchObject({ ip: expect.any(String), publicPort: expect.any(Number) })
    return { host: port.ip, port: port.publicPort }
  }

  /** What dstack's SSH client would meet there: the runner's banner. */
  async function banner(endpoint: { host: string; port: number }): Promise<string> {
    return until(
      `the banner at ${endpoint.host}:${endpoint.port}`,
      () =>
        new Promise<string>((resolve) => {
          const socket = connect(endpoint.port, endpoint.host)
          let text = ''
          socket.on('data', (chunk) => (text += chunk.toString()))
          socket.on('end', () => resolve(text))
          socket.on('error', () => resolve(''))
        }),
      (text) => text === BANNER,
      15_000,
    )
  }

  /** terminate_instance: the pod goes; a second terminate of a gone pod is "not found". */
  async function terminate(podId: string): Promise<void> {
    expect(await send(dstack.podTerminate(podId))).toEqual({ podTerminate: true })
    const pod = (await send(dstack.podQuery(podId))).pod
    expect(pod.desiredStatus).toBe('TERMINATED')
  }

  /** create_volume then register_volume: the id, size and data center it reads. */
  async function createVolume(name: string): Promise<string> {
    const id = (await send(dstack.createNetworkVolume(name, 10, 'US-KS-2'))).createNetworkVolume.id
    expect(id).toEqual(expect.any(String))
    const volumes = (await send(dstack.MY_VOLUMES_QUERY)).myself.networkVolumes
    expect(volumes.find((v: Json) => v.id === id)).toEqual({
      id,
      name,
      size: 10,
      dataCenter: { id: 'US-KS-2', name: 'US Kansas 2' },
    })
    return id
  }

  async function deleteVolume(id: string): Promise<void> {
    expect(await send(dstack.deleteNetworkVolume(id))).toEqual({ deleteNetworkVolume: true })
    const [error] = await refused(dstack.deleteNetworkVolume(id))
    expect(error.message).toContain('Tried to delete nonexistent network volume')
  }

  it('validates the key and keeps everything but the catalog behind it', async () => {
    const me = (await send(dstack.MYSELF_QUERY)).myself
    expect(me).toEqual({
      id: expect.any(String),
      authId: expect.any(String),
      email: 'dstack-replay@example.com',
    })
    const withoutKey = await post({ query: dstack.MYSELF_QUERY }, false)
    expect(withoutKey.status).toBe(401)
    const mutation = await post({ query: dstack.createNetworkVolume('x', 10, 'US-KS-2') }, false)
    expect(mutation.status).toBe(401)
  })

  it('lists offers from the keyless catalog as gpuhunt builds them', async () => {
    const { gpu, cluster, cpu } = await gpuhuntOffers()
    // Secure offers by data center, community offers by country; none where no host is.
    expect(gpu).toContainEqual(
      expect.objectContaining({ instance: RTX_4090, location: 'US-KS-2', gpuCount: 4 }),
    )
    expect(gpu).toContainEqual(
      expect.objectContaining({ instance: RTX_4090, location: 'CA', gpuCount: 2 }),
    )
    expect(gpu).toContainEqual(
      expect.objectContaining({ instance: H100, location: 'US-KS-2', gpuCount: 8 }),
    )
    expect(gpu.filter((o) => o.location === 'CA-MTL-1' || o.location === 'US')).toEqual([])
    expect(gpu.filter((o) => o.location === 'CA' && o.instance === H100)).toEqual([])
    expect(gpu.filter((o) => o.instance === RTX_4090 && o.gpuCount > 4)).toEqual([])
    expect(cluster).toEqual([
      expect.objectContaining({ instance: H100, location: 'US-KS-2', gpuCount: 8 }),
    ])
    expect(cpu.map((o) => o.instance)).toEqual(
      expect.arrayContaining(['cpu3c-2-4', 'cpu3c-4-8', 'cpu3c-16-32']),
    )
    expect(cpu.every((o) => o.location === 'US-KS-2' && (o.disk ?? 0) > 0)).toBe(true)
  })

  for (const withVolume of [false, true]) {
    const suffix = withVolume ? ' with a network volume' : ''

    it(`runs a GPU job${suffix}: create, SSH endpoint, terminate`, async () => {
      const { gpu } = await gpuhuntOffers()
      const offer = gpu.find((o) => o.instance === RTX_4090 && o.location === 'US-KS-2')!
      const volumeId = withVolume ? await createVolume(`dstack-gpu-vol`) : undefined
      const created = (
        await send(
          dstack.createGpuPod({
            name: `dstack-gpu${withVolume ? '-vol' : ''}`,
            imageName: IMAGE,
            gpuTypeId: offer.instance,
            cloudType: 'SECURE',
            dataCenterId: offer.location,
            gpuCount: 1,
            containerDiskInGb: 20,
            minVcpuCount: offer.cpu,
            minMemoryInGb: offer.memory,
            dockerArgs: dstack.dockerArgs(COMMANDS),
            ...(volumeId ? { networkVolumeId: volumeId, volumeMountPath: '/volume' } : {}),
          }),
        )
      ).podFindAndDeployOnDemand
      expect(created).toEqual({
        id: expect.any(String),
        lastStatusChange: expect.any(String),
        imageName: IMAGE,
        machine: { podHostId: expect.any(String) },
      })
      // run_job then cleans stale registry credentials: none here.
      expect((await send(dstack.REGISTRY_CREDS_QUERY)).myself.containerRegistryCreds).toEqual([])

      expect(await banner(await sshEndpoint(created.id))).toBe(BANNER)
      if (volumeId) {
        const pod = (await send(dstack.podQuery(created.id))).pod
        expect(pod.volumeMountPath).toBe('/volume')
      }
      await terminate(created.id)
      if (volumeId) await deleteVolume(volumeId)
    })

    it(`runs a CPU job${suffix}: create, SSH endpoint, terminate`, async () => {
      const { cpu } = await gpuhuntOffers()
      const offer = cpu.find((o) => o.instance === 'cpu3c-2-4')!
      const volumeId = withVolume ? await createVolume('dstack-cpu-vol') : undefined
      const created = (
        await send(
          dstack.createCpuPod({
            name: `dstack-cpu${withVolume ? '-vol' : ''}`,
            imageName: IMAGE,
            instanceId: offer.instance,
            deployCost: offer.price,
            dataCenterId: offer.location,
            containerDiskInGb: 10,
            dockerArgs: dstack.dockerArgs(COMMANDS),
            ...(volumeId ? { networkVolumeId: volumeId, volumeMountPath: '/volume' } : {}),
          }),
        )
      ).deployCpuPod
      expect(created).toEqual({
        id: expect.any(String),
        lastStatusChange: expect.any(String),
        imageName: IMAGE,
        machine: { podHostId: expect.any(String) },
      })
      const endpoint = await sshEndpoint(created.id)
      expect(await banner(endpoint)).toBe(BANNER)
      const pod = (await send(dstack.podQuery(created.id))).pod
      expect(pod).toMatchObject({ gpuCount: 0, vcpuCount: 2, memoryInGb: 4 })
      await terminate(created.id)
      if (volumeId) await deleteVolume(volumeId)
    })
  }

  it('places a community pod by country code', async () => {
    const { gpu } = await gpuhuntOffers()
    const offer = gpu.find((o) => o.instance === RTX_4090 && o.location === 'CA')!
    const created = (
      await send(
        dstack.createGpuPod({
          name: 'dstack-community',
          imageName: IMAGE,
          gpuTypeId: offer.instance,
          cloudType: 'COMMUNITY',
          countryCode: offer.location,
          gpuCount: 1,
          containerDiskInGb: 20,
          minVcpuCount: offer.cpu,
          minMemoryInGb: offer.memory,
          dockerArgs: dstack.dockerArgs(COMMANDS),
        }),
      )
    ).podFindAndDeployOnDemand
    expect(created.machine.podHostId).toBe(`${created.id}-rtx4090-c1`)
    expect(await banner(await sshEndpoint(created.id))).toBe(BANNER)
    await terminate(created.id)
  })

  it('runs a multinode job on a cluster, with registry credentials set by podEditJob', async () => {
    const { cluster } = await gpuhuntOffers()
    const offer = cluster[0]!
    const volumeId = await createVolume('dstack-cluster-vol')
    const created = (
      await send(
        dstack.createCluster({
          clusterName: 'dstack-cluster',
          gpuTypeId: offer.instance,
          podCount: 2,
          gpuCountPerPod: offer.gpuCount,
          imageName: IMAGE,
          deployCost: (offer.price * 2).toFixed(2),
          dataCenterId: offer.location,
          containerDiskInGb: 20,
          dockerArgs: dstack.dockerArgs(COMMANDS),
          networkVolumeId: volumeId,
          volumeMountPath: '/volume',
        }),
      )
    ).createCluster
    expect(created).toEqual({
      id: expect.any(String),
      name: 'dstack-cluster',
      pods: [0, 1].map(() => ({
        id: expect.any(String),
        clusterIp: expect.stringMatching(/^10\.\d+\.\d+\.\d+$/),
        lastStatusChange: expect.any(String),
        imageName: IMAGE,
        machine: { podHostId: expect.any(String) },
      })),
    })
    expect(created.pods[0].clusterIp).not.toBe(created.pods[1].clusterIp)

    // Registry credentials: createCluster takes none, so dstack sets them on each pod.
    const authId = (await send(dstack.saveRegistryAuth('dstack-auth', 'user', 'secret')))
      .saveRegistryAuth.id
    for (const pod of created.pods) {
      expect(await send(dstack.podEditJob(pod.id, authId))).toEqual({
        podEditJob: { id: pod.id },
      })
    }
    // Its clean-up deletes credentials oldest first and stops at the first refused: in use.
    const creds = (await send(dstack.REGISTRY_CREDS_QUERY)).myself.containerRegistryCreds
    expect(creds).toEqual([{ id: authId, name: 'dstack-auth' }])
    await refused(dstack.deleteRegistryAuth(authId))

    for (const pod of created.pods) {
      const endpoint = await sshEndpoint(pod.id)
      expect(await banner(endpoint)).toBe(BANNER)
      expect((await send(dstack.podQuery(pod.id))).pod.clusterIp).toBe(pod.clusterIp)
    }

    expect(await send(dstack.deleteCluster(created.id))).toEqual({ deleteCluster: true })
    for (const pod of created.pods) {
      expect((await send(dstack.podQuery(pod.id))).pod.desiredStatus).toBe('TERMINATED')
    }
    const [gone] = await refused(dstack.deleteCluster(created.id))
    expect(gone.extensions.code).toBe('Cluster not found')
    expect(await send(dstack.deleteRegistryAuth(authId))).toEqual({ deleteRegistryAuth: true })
    await deleteVolume(volumeId)
  })

  it("answers RunPod's text when terminating a pod that is not there", async () => {
    const [error] = await refused(dstack.podTerminate('nosuchpod00000'))
    expect(error.message).toBe('pod not found to terminate')
  })
})
