import { execFile, spawnSync } from 'node:child_process'
import { promisify } from 'node:util'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import openapiTS, { astToString } from 'openapi-typescript'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { repoRoot } from './support/cli.js'
import { startTestPlatform, TEST_ADMIN_KEY, type TestPlatform } from './support/platform.js'

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

describe('a TypeScript client generated from /v2/openapi.json', () => {
  let platform: TestPlatform
  let dir: string

  beforeAll(async () => {
    platform = await startTestPlatform()
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-client-'))
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }))
    const document = await (await platform.call('/v2/openapi.json', { key: null })).json()
    writeFileSync(path.join(dir, 'api.d.ts'), astToString(await openapiTS(document)))
  })
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
})
