import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import {
  TEST_ADMIN_KEY,
  otherAccountKey,
  startTestPlatform,
  type TestPlatform,
} from '../support/platform.js'

/**
 * Pods over GraphQL with documents shaped like the real clients' (wire-compat §6):
 * runpod-python inlines every value and sends no variables; runpodctl sends variables, `{}`
 * when it has none (legacy client) or `null` (Client.graphqlRequest).
 */

interface GraphqlError {
  message: string
  path?: string[]
  extensions?: { code?: string; errors?: string[] }
}
interface GraphqlBody<T = Record<string, unknown>> {
  data: T | null
  errors?: GraphqlError[]
}
// Documents read loosely: every field is checked explicitly below.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const RTX_4090 = 'NVIDIA GeForce RTX 4090'
const RTX_3090 = 'NVIDIA GeForce RTX 3090'
const H200 = 'NVIDIA H200'

/** runpodctl's selection on create (wire-compat §6.3, union of its clients). */
const RUNPODCTL_CREATE = `
mutation Mutation($input: PodFindAndDeployOnDemandInput) {
  podFindAndDeployOnDemand(input: $input) {
    id costPerHr desiredStatus imageName lastStatusChange machineId
    machine { podHostId gpuDisplayName location }
    name containerDiskInGb volumeInGb volumeMountPath gpuCount memoryInGb vcpuCount ports env
  }
}`

/** runpod-python's pod query (get_pod) and runpodctl's pod fields. */
const POD_FIELDS = `
  id containerDiskInGb costPerHr desiredStatus dockerArgs dockerId env gpuCount imageName
  lastStatusChange machineId memoryInGb name podType port ports uptimeSeconds vcpuCount
  volumeInGb volumeMountPath
  runtime {
    uptimeInSeconds
    ports { ip isIpPublic privatePort publicPort type }
    gpus { id gpuUtilPercent memoryUtilPercent }
    container { cpuPercent memoryPercent }
  }
  machine { gpuDisplayName location podHostId }`

/** A command that answers HTTP on the public port the platform gives 8080. */
const HTTP_SERVER = `exec node -e 'require("http").createServer((q, r) => r.end("hi " + process.env.GREETING)).listen(process.env.RUNPOD_TCP_PORT_8080)'`

describe('GraphQL pods', () => {
  let platform: TestPlatform
  const created: string[] = []

  async function graphql<T = Json>(
    body: Record<string, unknown>,
    key: string = TEST_ADMIN_KEY,
  ): Promise<{ status: number; body: GraphqlBody<T> }> {
    const response = await fetch(`${platform.url}/graphql?api_key=${key}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    return { status: response.status, body: (await response.json()) as GraphqlBody<T> }
  }

  /** A successful operation: HTTP 200, no errors, the data. */
  async function ok(body: Record<string, unknown>, key?: string): Promise<Json> {
    const result = await graphql(body, key)
    expect(result.status, JSON.stringify(result.body)).toBe(200)
    expect(result.body.errors, JSON.stringify(result.body.errors)).toBeUndefined()
    return result.body.data
  }

  /** A domain error: HTTP 200, data.<op> null, one error with path and code. */
  async function failed(op: string, body: Record<string, unknown>, code: string, key?: string) {
    const result = await graphql(body, key)
    expect(result.status, JSON.stringify(result.body)).toBe(200)
    expect(result.body.data).toEqual({ [op]: null })
    expect(result.body.errors).toHaveLength(1)
    const [error] = result.body.errors!
    expect(error).toMatchObject({ path: [op], extensions: { code } })
    return error!
  }

  /** runpod-python's create_pod document (generate_pod_deployment_mutation), values inlined. */
  function pythonCreate(fields: Record<string, string | number | boolean>): string {
    const inline = Object.entries({
      name: 'py',
      imageName: 'ubuntu',
      gpuTypeId: RTX_4090,
      cloudType: 'ALL',
      startSsh: true,
      supportPublicIp: true,
      gpuCount: 1,
      volumeInGb: 0,
      containerDiskInGb: 10,
      minVcpuCount: 1,
      minMemoryInGb: 1,
      dockerArgs: 'sleep 600',
      ...fields,
    })
      .map(([k, v]) =>
        k === 'cloudType' || typeof v !== 'string' ? `${k}: ${v}` : `${k}: ${JSON.stringify(v)}`,
      )
      .join(', ')
    return `mutation { podFindAndDeployOnDemand( input: { ${inline}, env: [{ key: "GREETING", value: "hello" }] } ) { id desiredStatus imageName env machineId machine { podHostId } } }`
  }

  async function createPython(fields: Record<string, string | number | boolean> = {}) {
    const data = await ok({ query: pythonCreate(fields) })
    created.push(data.podFindAndDeployOnDemand.id)
    return data.podFindAndDeployOnDemand
  }

  async function createCtl(input: Record<string, unknown>) {
    const data = await ok({
      query: RUNPODCTL_CREATE,
      variables: {
        input: {
          cloudType: 'ALL',
          containerDiskInGb: 20,
          volumeInGb: 1,
          gpuCount: 1,
          gpuTypeId: RTX_4090,
          imageName: 'ubuntu',
          name: 'ctl',
          dockerArgs: 'sleep 600',
          env: [],
          ports: '',
          volumeMountPath: '/workspace',
          ...input,
        },
      },
    })
    created.push(data.podFindAndDeployOnDemand.id)
    return data.podFindAndDeployOnDemand
  }

  const getPod = async (podId: string) =>
    (await ok({ query: `query pod { pod(input: {podId: "${podId}"}) { ${POD_FIELDS} } }` })).pod

  /** The runpod-python CLI's wait: desiredStatus RUNNING, runtime non-null, the port up. */
  async function waitForRuntime(podId: string, privatePort: number) {
    const deadline = Date.now() + 20_000
    for (;;) {
      const pod = await getPod(podId)
      const port = pod.runtime?.ports?.find((p: Json) => p.privatePort === privatePort)
      if (pod.desiredStatus === 'RUNNING' && pod.runtime && port) return { pod, port }
      if (Date.now() > deadline) throw new Error(`pod ${podId} never ran: ${JSON.stringify(pod)}`)
      await new Promise((resolve) => setTimeout(resolve, 150))
    }
  }

  const restPod = async (id: string) =>
    (await (await platform.call(`/v2/pods/${id}`)).json()) as Record<string, Json>

  beforeAll(async () => {
    platform = await startTestPlatform()
  })
  // Every test starts with the fleet empty: terminate what the last one created.
  afterEach(async () => {
    for (const id of created.splice(0)) {
      await platform.call(`/v2/pods/${id}`, { method: 'DELETE' })
    }
  })
  afterAll(() => platform.close())

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

  describe('errors', () => {
    it('no capacity, unknown GPU type and validation answer HTTP 200 with errors[] and data.op null', async () => {
      const full = await failed(
        'podFindAndDeployOnDemand',
        { query: pythonCreate({ gpuTypeId: H200, gpuCount: 9 }) },
        'NO_CAPACITY',
      )
      expect(full.message).toMatch(/^no capacity in any cloud: SECURE: .*9 free NVIDIA H200/)

      const unknown = await failed(
        'podFindAndDeployOnDemand',
        { query: pythonCreate({ gpuTypeId: 'NVIDIA GeForce RTX 9999' }) },
        'RULE_CONFLICT',
      )
      expect(unknown.message).toBe(
        'unknown GPU type "NVIDIA GeForce RTX 9999": list the GPU types with the gpuTypes query',
      )

      const invalid = await failed(
        'podFindAndDeployOnDemand',
        {
          query: RUNPODCTL_CREATE,
          variables: {
            input: {
              gpuTypeId: RTX_4090,
              containerDiskInGb: 0,
              ports: '8888/http,nope',
              env: [{ key: '1BAD', value: 'x' }],
            },
          },
        },
        'VALIDATION_FAILED',
      )
      expect(invalid.extensions!.errors).toEqual([
        'input.imageName: is required unless templateId gives it',
        'input.containerDiskInGb: must be >= 1',
        'input.ports[1]: must be <port>/<protocol> with a port 1-65535 and protocol http, tcp or udp',
        'input.env.1BAD: must be a variable name (letters, digits and _, not starting with a digit)',
      ])
      expect(invalid.message).toMatch(/^the request failed validation: input.imageName/)
    })

    it('refuses mutations to a read-only key (FORBIDDEN) and lets it read', async () => {
      const response = await platform.call('/v2/account/api-keys', {
        method: 'POST',
        json: { name: 'ro', permission: 'READ_ONLY' },
      })
      const { key } = (await response.json()) as { key: string }
      const error = await failed(
        'podFindAndDeployOnDemand',
        { query: pythonCreate({}) },
        'FORBIDDEN',
        key,
      )
      expect(error.message).toBe('this API key is read-only: mutations need a read-write key')
      await failed(
        'podTerminate',
        { query: 'mutation { podTerminate(input: {podId: "x"}) }' },
        'FORBIDDEN',
        key,
      )
      expect((await ok({ query: '{ myself { id pods { id } } }' }, key)).myself.id).toMatch(
        /^acct_/,
      )
    })

    it('401 with errors[] for a bad key', async () => {
      const result = await graphql({ query: pythonCreate({}) }, `pyd_${'x'.repeat(40)}`)
      expect(result.status).toBe(401)
      expect(result.body).toMatchObject({
        data: null,
        errors: [{ extensions: { code: 'UNAUTHENTICATED' } }],
      })
    })

    it('hides another account`s pods, and answers invalid transitions with the reason', async () => {
      const pod = await createPython({ name: 'mine' })
      const other = await otherAccountKey(platform, 'other-graphql@example.com')
      const hidden = await failed(
        'pod',
        { query: `{ pod(input: {podId: "${pod.id}"}) { id } }` },
        'NOT_FOUND',
        other,
      )
      expect(hidden.message).toBe(`pod ${pod.id} not found`)
      await failed(
        'podStop',
        { query: `mutation { podStop(input: {podId: "${pod.id}"}) { id } }` },
        'NOT_FOUND',
        other,
      )

      await expect
        .poll(async () => (await restPod(pod.id)).status, { timeout: 20_000 })
        .toBe('RUNNING')
      const resume = await failed(
        'podResume',
        { query: `mutation { podResume(input: {podId: "${pod.id}"}) { id } }` },
        'INVALID_STATE',
      )
      expect(resume.message).toMatch(
        /cannot start pod .* while it is (PROVISIONING|STARTING|RUNNING)/,
      )
      await ok({ query: `mutation { podStop(input: {podId: "${pod.id}"}) { id } }` })
      const count = await failed(
        'podResume',
        { query: `mutation { podResume(input: {podId: "${pod.id}", gpuCount: 2}) { id } }` },
        'RULE_CONFLICT',
      )
      expect(count.message).toMatch(/has 1 GPUs and a pod's GPU count is fixed at create/)
    })

    it('refuses a bid resume of an on-demand pod and a spot rent without a bid', async () => {
      const created = await ok({
        query:
          'mutation { podFindAndDeployOnDemand(input: {name: "no-bid", imageName: "ubuntu", gpuTypeId: "NVIDIA GeForce RTX 4090", cloudType: SECURE, gpuCount: 1, dockerArgs: "sleep 600"}) { id } }',
      })
      const id = (created.podFindAndDeployOnDemand as { id: string }).id
      await ok({ query: `mutation { podStop(input: {podId: "${id}"}) { id } }` })
      const bid = await failed(
        'podBidResume',
        {
          query: `mutation { podBidResume(input: {podId: "${id}", bidPerGpu: 0.2, gpuCount: 1}) { id costPerHr desiredStatus lastStatusChange } }`,
        },
        'RULE_CONFLICT',
      )
      expect(bid.message).toMatch(/is an on-demand pod: start it with podResume/)
      const rent = await failed(
        'podRentInterruptable',
        {
          query:
            'mutation { podRentInterruptable(input: {gpuTypeId: "NVIDIA GeForce RTX 4090", imageName: "y"}) { id imageName env machineId machine { podHostId } } }',
        },
        'VALIDATION_FAILED',
      )
      expect(rent.message).toMatch(/input\.bidPerGpu: is required/)
    })

    it('refuses a deploy that would cost more per hour than its deployCost, and keeps one that does not', async () => {
      const gpu = await failed(
        'podFindAndDeployOnDemand',
        {
          query:
            'mutation { podFindAndDeployOnDemand(input: {name: "capped", imageName: "ubuntu", gpuTypeId: "NVIDIA GeForce RTX 4090", cloudType: SECURE, gpuCount: 2, deployCost: 0.6}) { id } }',
        },
        'RULE_CONFLICT',
      )
      expect(gpu.message).toMatch(
        /the pod would cost 1\.18 USD per hour, more than the deployCost of 0\.6 it was given/,
      )
      const cpu = await failed(
        'deployCpuPod',
        {
          query:
            'mutation { deployCpuPod(input: {name: "capped-cpu", imageName: "ubuntu", instanceId: "cpu3c-2-4", deployCost: 0.07}) { id } }',
        },
        'RULE_CONFLICT',
      )
      expect(cpu.message).toMatch(
        /would cost 0\.08 USD per hour, more than the deployCost of 0\.07/,
      )
      // A cap equal to the price, as dstack sends the offer's price.
      const kept = await ok({
        query:
          'mutation { deployCpuPod(input: {name: "at-cap", imageName: "ubuntu", instanceId: "cpu3c-2-4", deployCost: 0.08}) { id costPerHr } }',
      })
      const pod = kept.deployCpuPod as { id: string; costPerHr: number }
      expect(pod.costPerHr).toBe(0.08)
      await ok({ query: `mutation { podTerminate(input: {podId: "${pod.id}"}) }` })
    })
  })
})
