import { beforeAll, describe, expect, it } from 'vitest'
import type { TestPlatform } from '../support/platform.js'
import {
  graphqlPodsSuite,
  POD_FIELDS,
  RTX_4090,
  RUNPODCTL_CREATE,
  type Json,
} from '../support/graphql-pods-client.js'

/**
 * Pods over GraphQL with documents shaped like the real clients' (wire-compat §6):
 * runpod-python inlines every value and sends no variables; runpodctl sends variables, `{}`
 * when it has none (legacy client) or `null` (Client.graphqlRequest). Creating, running,
 * stopping, resuming and terminating pods, listing them, and placing them; the errors are in
 * graphql-pods-errors.test.ts.
 */

const RTX_3090 = 'NVIDIA GeForce RTX 3090'

/** A command that answers HTTP on the public port the platform gives 8080. */
const HTTP_SERVER = `exec node -e 'require("http").createServer((q, r) => r.end("hi " + process.env.GREETING)).listen(process.env.RUNPOD_TCP_PORT_8080)'`

describe('GraphQL pods', () => {
  const suite = graphqlPodsSuite()
  const { created, ok, failed, createPython, createCtl, getPod, waitForRuntime, restPod } = suite
  let platform: TestPlatform
  beforeAll(() => {
    platform = suite.platform()
  })

  it('creates a pod from runpod-python`s inlined document, RUNNING at once, with a machine', async () => {
    const pod = await createPython()
    expect(pod).toEqual({
      id: expect.stringMatching(/^[a-z0-9]{14}$/),
      desiredStatus: 'RUNNING',
      imageName: 'ubuntu',
      env: ['GREETING=hello'],
      machineId: 'us-ks-2-rtx4090-1',
      machine: { podHostId: `${pod.id}-us-ks-2-rtx4090-1` },
    })
  })

  it('creates a pod from runpodctl`s variables, with every field it reads integral where Go wants int', async () => {
    const pod = await createCtl({ ports: '8888/http,22/tcp', env: [{ key: 'A', value: 'b=c' }] })
    expect(pod).toEqual({
      id: expect.any(String),
      costPerHr: 0.59,
      desiredStatus: 'RUNNING',
      imageName: 'ubuntu',
      lastStatusChange: expect.stringMatching(/^PROVISIONING at \d{4}-/),
      machineId: expect.any(String),
      machine: {
        podHostId: `${pod.id}-${pod.machineId}`,
        gpuDisplayName: 'RTX 4090',
        location: 'US-KS-2',
      },
      name: 'ctl',
      containerDiskInGb: 20,
      // runpodctl always sends its default volumeSize of 1; the persistent minimum is 10 GB.
      volumeInGb: 10,
      volumeMountPath: '/workspace',
      gpuCount: 1,
      memoryInGb: 62,
      vcpuCount: 16,
      ports: '8888/http,22/tcp',
      env: ['A=b=c'],
    })
    for (const field of [
      'containerDiskInGb',
      'volumeInGb',
      'gpuCount',
      'memoryInGb',
      'vcpuCount',
    ]) {
      expect(Number.isInteger(pod[field]), field).toBe(true)
    }
  })

  it('runs create -> poll until runtime -> stop -> resume -> terminate, the same pod over REST', async () => {
    const pod = await createCtl({
      name: 'web',
      dockerArgs: HTTP_SERVER,
      ports: '8080/http',
      env: [{ key: 'GREETING', value: 'hello' }],
      volumeInGb: 20,
      volumeMountPath: '/data',
    })
    const { port } = await waitForRuntime(pod.id, 8080)
    // Its usage figures follow its runtime within a moment: they are measured in the background.
    let running = await getPod(pod.id)
    for (let tries = 0; running.runtime?.container === null && tries < 50; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      running = await getPod(pod.id)
    }
    expect(port).toEqual({
      ip: '127.0.0.1',
      isIpPublic: false,
      privatePort: 8080,
      publicPort: expect.any(Number),
      type: 'http',
    })
    expect(await (await fetch(`http://127.0.0.1:${port.publicPort}/`)).text()).toBe('hi hello')
    expect(running).toMatchObject({
      id: pod.id,
      name: 'web',
      desiredStatus: 'RUNNING',
      dockerArgs: HTTP_SERVER,
      dockerId: null,
      env: ['GREETING=hello'],
      gpuCount: 1,
      imageName: 'ubuntu',
      lastStatusChange: expect.stringMatching(/^RUNNING/),
      podType: 'RESERVED',
      port: 8080,
      ports: '8080/http',
      volumeInGb: 20,
      volumeMountPath: '/data',
      costPerHr: 0.59,
      machine: {
        gpuDisplayName: 'RTX 4090',
        location: 'US-KS-2',
        podHostId: pod.machine.podHostId,
      },
      runtime: {
        uptimeInSeconds: expect.any(Number),
        gpus: [{ id: expect.any(String), gpuUtilPercent: 0, memoryUtilPercent: 0 }],
        container: { cpuPercent: expect.any(Number), memoryPercent: expect.any(Number) },
      },
    })
    expect(Number.isInteger(running.uptimeSeconds)).toBe(true)
    expect(Number.isInteger(running.runtime.uptimeInSeconds)).toBe(true)

    // The same pod over REST, with the same fields in REST's shapes.
    expect(await restPod(pod.id)).toMatchObject({
      id: pod.id,
      name: 'web',
      status: 'RUNNING',
      image: 'ubuntu',
      args: HTTP_SERVER,
      disk: 20,
      ports: ['8080/http'],
      env: { GREETING: 'hello' },
      gpu: { id: RTX_4090, count: 1 },
      mounts: { persistent: { size: 20, path: '/data' } },
      dataCenterId: 'US-KS-2',
      cost: 0.59,
      runtime: { ports: [{ private: 8080, public: port.publicPort, type: 'http' }] },
    })

    // runpodctl stop: variables; it prints failure unless desiredStatus is EXITED.
    const stopped = await ok({
      query:
        'mutation podStop($input: PodStopInput!) { podStop(input: $input) { id desiredStatus lastStatusChange } }',
      variables: { input: { podId: pod.id } },
    })
    expect(stopped.podStop).toEqual({
      id: pod.id,
      desiredStatus: 'EXITED',
      lastStatusChange: expect.stringMatching(/^EXITED \(stopped by request\) at /),
    })
    const exited = await getPod(pod.id)
    expect(exited).toMatchObject({
      desiredStatus: 'EXITED',
      runtime: null,
      costPerHr: 0,
      uptimeSeconds: 0,
    })
    expect(exited.machine).not.toBeNull()
    expect((await restPod(pod.id)).status).toBe('EXITED')

    // runpod-python resume_pod: inlined, with gpuCount.
    const resumed = await ok({
      query: `mutation { podResume( input: { podId: "${pod.id}", gpuCount: 1 } ) { id desiredStatus imageName env machineId machine { podHostId } costPerHr lastStatusChange } }`,
    })
    expect(resumed.podResume).toMatchObject({
      id: pod.id,
      desiredStatus: 'RUNNING',
      imageName: 'ubuntu',
      env: ['GREETING=hello'],
      machineId: pod.machineId,
      machine: { podHostId: pod.machine.podHostId },
      costPerHr: 0.59,
    })
    const again = await waitForRuntime(pod.id, 8080)
    expect(await (await fetch(`http://127.0.0.1:${again.port.publicPort}/`)).text()).toBe(
      'hi hello',
    )

    // runpod-python terminate_pod: a scalar result, no selection; runpodctl sends null variables.
    expect(
      await ok({
        query: 'mutation podTerminate($input: PodTerminateInput!) { podTerminate(input: $input) }',
        variables: { input: { podId: pod.id } },
      }),
    ).toEqual({ podTerminate: true })
    expect(await getPod(pod.id)).toMatchObject({ desiredStatus: 'TERMINATED', runtime: null })
    expect((await restPod(pod.id)).status).toBe('TERMINATED')
    expect(
      await ok({
        query: `mutation { podTerminate(input: {podId: "${pod.id}"}) }`,
        variables: null,
      }),
    ).toEqual({
      podTerminate: true,
    })
  })

  it('lists the account`s pods under myself, with the spend of those running', async () => {
    const a = await createPython({ name: 'listed-a' })
    const b = await createPython({ name: 'listed-b', gpuTypeId: RTX_3090 })
    await expect.poll(async () => (await restPod(b.id)).status, { timeout: 20_000 }).toBe('RUNNING')
    await ok({ query: `mutation { podStop(input: {podId: "${b.id}"}) { id desiredStatus } }` })
    const data = await ok({
      query: `query myself { myself { id email currentSpendPerHr pods { ${POD_FIELDS} } } }`,
      variables: {},
    })
    const pods = data.myself.pods as Json[]
    const byId = new Map(pods.map((p) => [p.id, p]))
    expect(byId.get(a.id)).toMatchObject({
      name: 'listed-a',
      desiredStatus: 'RUNNING',
      costPerHr: 0.59,
    })
    expect(byId.get(b.id)).toMatchObject({
      name: 'listed-b',
      desiredStatus: 'EXITED',
      costPerHr: 0,
      machine: { gpuDisplayName: 'RTX 3090', location: 'US-KS-2' },
    })
    const sum = pods.reduce((n, p) => n + p.costPerHr, 0)
    expect(data.myself.currentSpendPerHr).toBeCloseTo(sum, 6)
    expect(data.myself.email).toBe('admin@podyard.local')
  })

  it('maps cloudType: ALL tries SECURE then COMMUNITY; SECURE alone has no RTX 3090', async () => {
    const community = await createCtl({ gpuTypeId: RTX_3090, cloudType: 'ALL', volumeInGb: 0 })
    expect(community.machineId).toBe('us-ks-2-rtx3090-c1')
    expect((await restPod(community.id)).cloud).toBe('COMMUNITY')
    const error = await failed(
      'podFindAndDeployOnDemand',
      {
        query: RUNPODCTL_CREATE,
        variables: { input: { gpuTypeId: RTX_3090, cloudType: 'SECURE', imageName: 'x' } },
      },
      'NO_CAPACITY',
    )
    expect(error.message).toMatch(/^no capacity: SECURE: /)
  })

  it('honours minVcpuCount, minMemoryInGb, allowedCudaVersions and dataCenterId through placement', async () => {
    // RTX 4090: SECURE host (US-KS-2, CUDA 12.8, 16 vCPU / 62 GB per GPU), COMMUNITY host
    // (CA-MTL-1, CUDA 12.6, 8 vCPU / 32 GB per GPU).
    const cuda = await createCtl({ allowedCudaVersions: ['12.6'], volumeInGb: 0 })
    expect(cuda.machineId).toBe('ca-mtl-1-rtx4090-c1')
    expect(cuda.vcpuCount).toBe(8)

    const big = await createCtl({
      cloudType: 'ALL',
      minVcpuCount: 12,
      minMemoryInGb: 60,
      volumeInGb: 0,
    })
    expect(big.machineId).toBe('us-ks-2-rtx4090-1')

    const error = await failed(
      'podFindAndDeployOnDemand',
      {
        query: RUNPODCTL_CREATE,
        variables: {
          input: { gpuTypeId: RTX_4090, cloudType: 'COMMUNITY', minVcpuCount: 12, imageName: 'x' },
        },
      },
      'NO_CAPACITY',
    )
    expect(error.message).toBe(
      'no capacity: COMMUNITY: no host has 1 free NVIDIA GeForce RTX 4090 with at least 12 vCPUs in the COMMUNITY cloud',
    )

    const placed = await createCtl({ dataCenterId: 'CA-MTL-1', volumeInGb: 0 })
    expect(placed.machine.location).toBe('CA-MTL-1')
  })

  it('places a resumed pod by the allowedCudaVersions podResume gives', async () => {
    // The pod lands on the COMMUNITY RTX 4090 host (CUDA 12.6); its cloud stays COMMUNITY.
    const pod = await createCtl({ allowedCudaVersions: ['12.6'], volumeInGb: 0 })
    expect(pod.machineId).toBe('ca-mtl-1-rtx4090-c1')
    const running = async () => (await restPod(pod.id)).status === 'RUNNING'
    await expect.poll(running, { timeout: 15_000 }).toBe(true)
    await ok({ query: `mutation { podStop(input: {podId: "${pod.id}"}) { id desiredStatus } }` })
    const error = await failed(
      'podResume',
      {
        query: `mutation { podResume(input: {podId: "${pod.id}", gpuCount: 1, allowedCudaVersions: ["12.8"]}) { id } }`,
      },
      'NO_CAPACITY',
    )
    expect(error.message).toBe(
      'no host has 1 free NVIDIA GeForce RTX 4090 with CUDA 12.8 in the COMMUNITY cloud',
    )
    const resumed = await ok({
      query: `mutation { podResume(input: {podId: "${pod.id}", allowedCudaVersions: ["12.4", "12.6"]}) { id desiredStatus machineId } }`,
    })
    expect(resumed.podResume).toMatchObject({
      desiredStatus: 'RUNNING',
      machineId: 'ca-mtl-1-rtx4090-c1',
    })
  }, 40_000)

  it('mounts a network volume at volumeMountPath, and lists it under myself', async () => {
    const response = await platform.call('/v2/network-volumes', {
      method: 'POST',
      json: { name: 'shared', size: 10, dataCenterId: 'US-KS-2' },
    })
    expect(response.status).toBe(201)
    const volume = (await response.json()) as { id: string }
    const pod = await createCtl({ networkVolumeId: volume.id, volumeMountPath: '/shared' })
    expect(pod).toMatchObject({ volumeInGb: 0, volumeMountPath: '/shared' })
    expect((await restPod(pod.id)).mounts).toEqual({
      network: [{ volumeId: volume.id, path: '/shared' }],
    })
    const data = await ok({ query: '{ myself { networkVolumes { id name size dataCenterId } } }' })
    expect(data.myself.networkVolumes).toContainEqual({
      id: volume.id,
      name: 'shared',
      size: 10,
      dataCenterId: 'US-KS-2',
    })
  })

  it('deploys a CPU pod from runpod-python`s deployCpuPod with an instance id', async () => {
    const data = await ok({
      query: `mutation { deployCpuPod( input: { name: "cpu", imageName: "ubuntu", cloudType: ALL, startSsh: true, instanceId: "cpu3c-2-4", containerDiskInGb: 10, dockerArgs: "sleep 600", templateId: "runpod-ubuntu", env: [] } ) { id imageName env machineId machine { podHostId } } }`,
    })
    const pod = data.deployCpuPod
    created.push(pod.id)
    expect(pod).toEqual({
      id: expect.any(String),
      imageName: 'ubuntu',
      env: [],
      machineId: expect.any(String),
      machine: { podHostId: `${pod.id}-${pod.machineId}` },
    })
    expect(await getPod(pod.id)).toMatchObject({
      vcpuCount: 2,
      memoryInGb: 4,
      gpuCount: 0,
      containerDiskInGb: 10,
      ports: '22/tcp',
      machine: { gpuDisplayName: 'Compute-Optimized' },
    })
    expect((await restPod(pod.id)).cpu).toEqual({ id: 'cpu3c', vcpuCount: 2, memory: 4 })

    const wrongRam = await failed(
      'deployCpuPod',
      {
        query: 'mutation { deployCpuPod(input: {instanceId: "cpu3c-2-8", imageName: "x"}) { id } }',
      },
      'VALIDATION_FAILED',
    )
    expect(wrongRam.message).toContain('use cpu3c-2-4')
    const unknown = await failed(
      'deployCpuPod',
      {
        query: 'mutation { deployCpuPod(input: {instanceId: "gpu9x-2-4", imageName: "x"}) { id } }',
      },
      'RULE_CONFLICT',
    )
    expect(unknown.message).toMatch(/unknown CPU flavor "gpu9x"/)
  })
})
