import { afterAll, afterEach, beforeAll, expect } from 'vitest'
import { TEST_ADMIN_KEY, startTestPlatform, type TestPlatform } from './platform.js'

/**
 * What the GraphQL pod tests share (test/api/graphql-pods-*.test.ts): documents shaped like
 * the real clients' (wire-compat §6), and `graphqlPodsSuite`, the platform they run on with the
 * calls they make to it.
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
// Documents read loosely: the tests check every field explicitly.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any

export const RTX_4090 = 'NVIDIA GeForce RTX 4090'

/** runpodctl's selection on create (wire-compat §6.3, union of its clients). */
export const RUNPODCTL_CREATE = `
mutation Mutation($input: PodFindAndDeployOnDemandInput) {
  podFindAndDeployOnDemand(input: $input) {
    id costPerHr desiredStatus imageName lastStatusChange machineId
    machine { podHostId gpuDisplayName location }
    name containerDiskInGb volumeInGb volumeMountPath gpuCount memoryInGb vcpuCount ports env
  }
}`

/** runpod-python's pod query (get_pod) and runpodctl's pod fields. */
export const POD_FIELDS = `
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

/** runpod-python's create_pod document (generate_pod_deployment_mutation), values inlined. */
export function pythonCreate(fields: Record<string, string | number | boolean>): string {
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

/**
 * The platform a GraphQL pods suite runs on and its calls: call it in the suite's `describe`,
 * where it adds the hooks that start the platform, terminate the pods in `created` after each
 * test and close the platform at the end. `platform()` is the running platform, from the first
 * `beforeAll` on.
 */
export function graphqlPodsSuite() {
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

  return {
    platform: () => platform,
    created,
    graphql,
    ok,
    failed,
    createPython,
    createCtl,
    getPod,
    waitForRuntime,
    restPod,
  }
}
