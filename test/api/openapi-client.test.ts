import { execFile, spawnSync } from 'node:child_process'
import { promisify } from 'node:util'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { createClient as generateHeyApiClient } from '@hey-api/openapi-ts'
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { repoRoot } from '../support/cli.js'
import {
  otherAccountKey,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type TestPlatform,
} from '../support/platform.js'

/**
 * A client generated from the served document, as a user of the API would make one: the program
 * below calls pods, endpoints, /run and /status with the generated types and no cast, type-checks
 * with the project's TypeScript, and runs against the server.
 */
const PROGRAM = `
import type { components, paths } from './api.js'

type Endpoint = components['schemas']['Endpoint']
type EndpointCreateInput = components['schemas']['EndpointCreateInput']
type JobSubmission = components['schemas']['JobSubmission']
type QueuedJob = paths['/v2/{endpointId}/run']['post']['responses'][200]['content']['application/json']
type Job = paths['/v2/{endpointId}/status/{jobId}']['get']['responses'][200]['content']['application/json']
type PodList = paths['/v2/pods']['get']['responses'][200]['content']['application/json']
type Pod = components['schemas']['Pod']

const [base, key] = process.argv.slice(2) as [string, string]

async function call<T>(method: string, urlPath: string, body?: unknown): Promise<T> {
  const response = await fetch(base + urlPath, {
    method,
    headers: { authorization: 'Bearer ' + key, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  if (!response.ok) throw new Error(method + ' ' + urlPath + ': ' + response.status)
  const value: T = await response.json()
  return value
}

const wanted: EndpointCreateInput = { name: 'typed', image: 'worker:1', gpu: { pools: ['ADA_24'] } }
const endpoint = await call<Endpoint>('POST', '/v2/serverless', wanted)
const submission: JobSubmission = { input: { prompt: 'hello' }, policy: { ttl: 60_000 } }
const queued = await call<QueuedJob>('POST', '/v2/' + endpoint.id + '/run', submission)
const job = await call<Job>('GET', '/v2/' + endpoint.id + '/status/' + queued.id)
const waiting: boolean = job.status === 'IN_QUEUE' && job.delayTime >= 0
const { pods } = await call<PodList>('GET', '/v2/pods')
const names: string[] = pods.map((pod: Pod) => pod.name)
console.log(JSON.stringify({ endpoint: endpoint.name, job: job.id === queued.id, waiting, pods: names }))
`

/** The same calls with the mistakes the types must catch. */
const WRONG_PROGRAM = `
import type { components } from './api.js'

const submission: components['schemas']['JobSubmission'] = { input: 'not an object' }
const endpoint: components['schemas']['EndpointCreateInput'] = { name: 'x', image: 'y', gpu: { pools: ['NO_SUCH_POOL'] } }
function statusOf(job: components['schemas']['Job']): number { return job.status }
console.log(submission, endpoint, statusOf)
`

/**
 * What a member does with a client: a pod created, running, stopped and terminated; an endpoint
 * with a job queued by /run, taken and finished by a worker over the worker protocol (the same
 * client, with the endpoint's worker key), and its result read with /status. The same steps
 * through openapi-fetch and through @hey-api/openapi-ts's SDK, each printing what it saw.
 */
const WORKFLOW_RESULT = (prefix: string) => ({
  pod: ['RUNNING', 'EXITED', 'TERMINATED'],
  endpoint: `${prefix}-endpoint`,
  job: { same: true, status: 'COMPLETED', output: { echo: { prompt: 'hello' } } },
})

const FETCH_PROGRAM = `
import createClient from 'openapi-fetch'
import type { components, paths } from './api.js'

type Pod = components['schemas']['Pod']
type PodCreateInput = components['schemas']['PodCreateInput']
type EndpointCreateInput = components['schemas']['EndpointCreateInput']

const [baseUrl, key, prefix] = process.argv.slice(2) as [string, string, string]
const client = createClient<paths>({ baseUrl, headers: { Authorization: 'Bearer ' + key } })

function must<T>(result: { data?: T; error?: unknown; response: Response }, what: string): T {
  if (result.data === undefined) {
    throw new Error(what + ': ' + result.response.status + ' ' + JSON.stringify(result.error))
  }
  return result.data
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const wanted: PodCreateInput = {
  name: prefix + '-pod',
  image: 'busybox:1',
  args: 'sleep 600',
  gpu: { id: 'NVIDIA GeForce RTX 4090', count: 1 },
}
let pod: Pod = must(await client.POST('/v2/pods', { body: wanted }), 'createPod')
const byId = { params: { path: { id: pod.id } } }
for (let i = 0; i < 150 && pod.status !== 'RUNNING'; i += 1) {
  await sleep(100)
  pod = must(await client.GET('/v2/pods/{id}', byId), 'getPod')
}
const statuses: string[] = [pod.status]
const stopped = must(
  await client.POST('/v2/pods/{id}/action', { ...byId, body: { action: 'stop' } }),
  'stopPod',
)
statuses.push(stopped.status)
const deleted = await client.DELETE('/v2/pods/{id}', byId)
if (deleted.response.status !== 204) throw new Error('deletePod: ' + deleted.response.status)
statuses.push(must(await client.GET('/v2/pods/{id}', byId), 'getPod').status)

const endpointInput: EndpointCreateInput = {
  name: prefix + '-endpoint',
  image: 'worker:1',
  gpu: { pools: ['ADA_24'] },
  workers: { min: 0, max: 0 },
}
const endpoint = must(await client.POST('/v2/serverless', { body: endpointInput }), 'createEndpoint')
const { workerKey } = must(
  await client.GET('/v2/serverless/{id}/worker-key', { params: { path: { id: endpoint.id } } }),
  'getEndpointWorkerKey',
)
const endpointId = endpoint.id
const queued = must(
  await client.POST('/v2/{endpointId}/run', {
    params: { path: { endpointId } },
    body: { input: { prompt: 'hello' } },
  }),
  'runJob',
)
const asWorker = { Authorization: workerKey }
const workerId = prefix + '-worker'
const taken = must(
  await client.GET('/v2/{endpointId}/job-take/{workerId}', {
    params: { path: { endpointId, workerId }, query: { wait: 5000 } },
    headers: asWorker,
  }),
  'takeJob',
)
must(
  await client.POST('/v2/{endpointId}/job-done/{workerId}/{jobId}', {
    params: { path: { endpointId, workerId, jobId: taken.id } },
    body: { output: { echo: taken.input } },
    headers: asWorker,
  }),
  'reportJobDone',
)
const job = must(
  await client.GET('/v2/{endpointId}/status/{jobId}', {
    params: { path: { endpointId, jobId: queued.id } },
  }),
  'getJobStatus',
)
const removed = await client.DELETE('/v2/serverless/{id}', { params: { path: { id: endpointId } } })
if (removed.response.status !== 204) throw new Error('deleteEndpoint: ' + removed.response.status)
console.log(JSON.stringify({
  pod: statuses,
  endpoint: endpoint.name,
  job: { same: taken.id === queued.id, status: job.status, output: job.output },
}))
`

/**
 * The same through @hey-api/openapi-ts's SDK: one function per operation id, types named after
 * the document's schemas (Pod, PodCreateInput), the base URL and key set once.
 */
const HEY_API_PROGRAM = `
import { client } from './hey/client.gen.js'
import {
  createEndpoint, createPod, deleteEndpoint, deletePod, getEndpointWorkerKey, getJobStatus,
  getPod, podAction, reportJobDone, runJob, takeJob,
} from './hey/sdk.gen.js'
import type { EndpointCreateInput, Job, Pod, PodCreateInput, WorkerJob } from './hey/types.gen.js'

const [baseUrl, key, prefix] = process.argv.slice(2) as [string, string, string]
client.setConfig({ baseUrl, auth: key })

function must<T>(result: { data?: T; error?: unknown; response?: Response }, what: string): T {
  if (result.data === undefined) {
    throw new Error(what + ': ' + result.response?.status + ' ' + JSON.stringify(result.error))
  }
  return result.data
}
/** An answer that may come without a body (204: no job to take): here it must have one. */
function present<T>(value: T | void, what: string): T {
  if (value === undefined) throw new Error(what + ': no content')
  return value
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const wanted: PodCreateInput = {
  name: prefix + '-pod',
  image: 'busybox:1',
  args: 'sleep 600',
  gpu: { id: 'NVIDIA GeForce RTX 4090', count: 1 },
}
let pod: Pod = must(await createPod({ body: wanted }), 'createPod')
const byId = { path: { id: pod.id } }
for (let i = 0; i < 150 && pod.status !== 'RUNNING'; i += 1) {
  await sleep(100)
  pod = must(await getPod(byId), 'getPod')
}
const statuses: string[] = [pod.status]
const stopped = must(await podAction({ ...byId, body: { action: 'stop' } }), 'stopPod')
statuses.push(present(stopped, 'stopPod').status)
const deleted = await deletePod(byId)
if (deleted.response?.status !== 204) throw new Error('deletePod: ' + deleted.response?.status)
statuses.push(must(await getPod(byId), 'getPod').status)

const endpointInput: EndpointCreateInput = {
  name: prefix + '-endpoint',
  image: 'worker:1',
  gpu: { pools: ['ADA_24'] },
  workers: { min: 0, max: 0 },
}
const endpoint = must(await createEndpoint({ body: endpointInput }), 'createEndpoint')
const endpointId = endpoint.id
const { workerKey } = must(
  await getEndpointWorkerKey({ path: { id: endpointId } }),
  'getEndpointWorkerKey',
)
const queued = must(
  await runJob({ path: { endpointId }, body: { input: { prompt: 'hello' } } }),
  'runJob',
)
const workerId = prefix + '-worker'
const taken: WorkerJob = present(
  must(
    await takeJob({ path: { endpointId, workerId }, query: { wait: 5000 }, auth: workerKey }),
    'takeJob',
  ),
  'takeJob',
)
must(
  await reportJobDone({
    path: { endpointId, workerId, jobId: taken.id },
    body: { output: { echo: taken.input } },
    auth: workerKey,
  }),
  'reportJobDone',
)
const job: Job = must(
  await getJobStatus({ path: { endpointId, jobId: queued.id } }),
  'getJobStatus',
)
const removed = await deleteEndpoint({ path: { id: endpointId } })
if (removed.response?.status !== 204) throw new Error('deleteEndpoint: ' + removed.response?.status)
console.log(JSON.stringify({
  pod: statuses,
  endpoint: endpoint.name,
  job: { same: taken.id === queued.id, status: job.status, output: job.output },
}))
`

const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: ['node'],
    typeRoots: [path.join(repoRoot, 'node_modules', '@types')],
  },
}

function typeCheck(dir: string, file: string) {
  writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ ...TSCONFIG, files: [file] }))
  return spawnSync(
    process.execPath,
    [path.join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir],
    { encoding: 'utf8' },
  )
}

/** Runs a generated program with tsx against the platform; what it printed, parsed. */
async function runProgram(dir: string, file: string, args: string[]): Promise<unknown> {
  // Asynchronously: the server answering the program runs in this process.
  const ran = await promisify(execFile)(
    process.execPath,
    [path.join(repoRoot, 'node_modules', 'tsx', 'dist', 'cli.mjs'), path.join(dir, file), ...args],
    { encoding: 'utf8', cwd: dir },
  )
  expect(ran.stderr).toBe('')
  return JSON.parse(ran.stdout)
}

describe('TypeScript clients generated from /v2/openapi.json', { timeout: 120_000 }, () => {
  let platform: TestPlatform
  let dir: string
  let memberKey: string
  let components: { schemas: Record<string, unknown>; parameters: Record<string, unknown> }

  beforeAll(async () => {
    platform = await startTestPlatform()
    memberKey = await otherAccountKey(platform, 'generated-client@example.com')
    // Inside the checkout (an ignored folder), so that the programs find openapi-fetch.
    mkdirSync(path.join(repoRoot, 'test-results'), { recursive: true })
    dir = mkdtempSync(path.join(repoRoot, 'test-results', 'openapi-client-'))
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }))
    const document = (await (
      await platform.call('/v2/openapi.json', { key: null })
    ).json()) as Record<string, unknown>
    components = document.components as typeof components
    writeFileSync(
      path.join(dir, 'api.d.ts'),
      astToString(await openapiTS(document as unknown as OpenAPI3)),
    )
    await generateHeyApiClient({
      input: document,
      output: { path: path.join(dir, 'hey'), importFileExtension: '.js' },
      plugins: ['@hey-api/client-fetch', '@hey-api/typescript', '@hey-api/sdk'],
      logs: { level: 'silent' },
    })
  }, 120_000)
  afterAll(async () => {
    await platform.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('type-checks a program that calls pods, endpoints, /run and /status, and it runs', async () => {
    writeFileSync(path.join(dir, 'program.ts'), PROGRAM)
    const checked = typeCheck(dir, 'program.ts')
    expect(checked.stdout + checked.stderr).toBe('')
    expect(checked.status).toBe(0)

    // Asynchronously: the server answering the program runs in this process.
    const ran = await promisify(execFile)(
      process.execPath,
      [
        path.join(repoRoot, 'node_modules', 'tsx', 'dist', 'cli.mjs'),
        path.join(dir, 'program.ts'),
        platform.url,
        TEST_ADMIN_KEY,
      ],
      { encoding: 'utf8', cwd: dir },
    )
    expect(ran.stderr).toBe('')
    expect(JSON.parse(ran.stdout)).toEqual({
      endpoint: 'typed',
      job: true,
      waiting: true,
      pods: [],
    })
  })

  it('refuses a job without an input object, an unknown GPU pool and a status read as a number', () => {
    writeFileSync(path.join(dir, 'wrong.ts'), WRONG_PROGRAM)
    const checked = typeCheck(dir, 'wrong.ts')
    expect(checked.status).not.toBe(0)
    const errors = checked.stdout.split('\n').filter((line) => line.includes('error TS'))
    expect(errors.map((line) => /wrong\.ts\((\d+),/.exec(line)?.[1])).toEqual(['4', '5', '6'])
  })

  it('openapi-typescript + openapi-fetch: a member drives a pod, an endpoint and a job', async () => {
    writeFileSync(path.join(dir, 'fetch-program.ts'), FETCH_PROGRAM)
    const checked = typeCheck(dir, 'fetch-program.ts')
    expect(checked.stdout + checked.stderr).toBe('')
    expect(checked.status).toBe(0)
    expect(await runProgram(dir, 'fetch-program.ts', [platform.url, memberKey, 'fetch'])).toEqual(
      WORKFLOW_RESULT('fetch'),
    )
  })

  it('@hey-api/openapi-ts: named types, the default base URL, and the same workflow', async () => {
    const types = readFileSync(path.join(dir, 'hey', 'types.gen.ts'), 'utf8')
    // Types named from the document's schemas, not from where a generator found them.
    for (const name of ['Pod', 'PodCreateInput', 'Endpoint', 'Job', 'Problem', 'PodSsh']) {
      expect(types, name).toMatch(new RegExp(`^export type ${name} = `, 'm'))
    }
    // Every other type is a parameter's or an operation's (its data, errors, answers): none with
    // a name it made up (it writes OpenAIRequest as OpenAiRequest).
    const named = new Set(
      [...Object.keys(components.schemas), ...Object.keys(components.parameters)].map((name) =>
        name.toLowerCase(),
      ),
    )
    const invented = [...types.matchAll(/^export type (\w+) = /gm)]
      .map((match) => match[1]!)
      .filter((name) => !named.has(name.toLowerCase()) && !/(Data|Errors?|Responses?)$/.test(name))
    expect(invented).toEqual(['ClientOptions'])
    // A client that is not told where the server is calls the default server's URL, not '/'.
    expect(readFileSync(path.join(dir, 'hey', 'client.gen.ts'), 'utf8')).toContain(
      "baseUrl: 'http://localhost:8080'",
    )
    writeFileSync(path.join(dir, 'hey-program.ts'), HEY_API_PROGRAM)
    const checked = typeCheck(dir, 'hey-program.ts')
    expect(checked.stdout + checked.stderr).toBe('')
    expect(checked.status).toBe(0)
    expect(await runProgram(dir, 'hey-program.ts', [platform.url, memberKey, 'hey'])).toEqual(
      WORKFLOW_RESULT('hey'),
    )
  })
})
