import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { plainValue } from '../fuzz/schema-arbitrary.js'
import { json } from '../support/http.js'
import {
  operationsOf,
  type DocumentOperation,
  type OpenAPIDocument,
} from '../support/openapi-operations.js'
import {
  otherAccountKey,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type TestPlatform,
} from '../support/platform.js'

/**
 * Every operation of the served `/v2/openapi.json` is called once, and each answer is one the
 * document declares: its status is declared for the operation, its Content-Type is a media type
 * declared for that status (none when the status has no content), and a JSON body parses.
 * Clients generated from the document pick their parser by the content type:
 * @hey-api/openapi-ts's read every pod as `{}` while pods went out without one.
 *
 * The operations come from the served document, so a new route is called the day it is
 * documented. Requests are the plainest valid ones (test/fuzz/schema-arbitrary.ts, plainValue)
 * with the ids of fixtures made beforehand, or the bodies below where the schema alone does not
 * make a valid request. They go out as a second, non-admin account; the Admin operations as the
 * admin (and as the account too: 403); the worker protocol with the endpoint's worker key; the
 * routes public models share with the job API once more with a model id. A 4xx is fine (an
 * action a pod's state refuses is 409) as long as the document declares it.
 */

/** Bodies of operations whose schema's required fields alone make no valid request. */
const BODIES: Record<string, unknown> = {
  updateAccountBilling: { spendLimit: 1000 },
  createAccount: { email: 'conformance-new@example.com' },
  createPod: { name: 'conformance', image: 'img:1', cpu: { id: 'cpu3c', vcpuCount: 2 } },
  updatePod: { name: 'conformance-renamed' },
  podAction: { action: 'stop' },
  updateTemplate: { name: 'conformance-renamed' },
  createNetworkVolume: { name: 'conformance', size: 10, dataCenterId: 'US-KS-2' },
  updateNetworkVolume: { size: 20 },
  createEndpoint: { name: 'conformance', image: 'worker:1', gpu: { pools: ['ADA_24'] } },
  updateEndpoint: { name: 'conformance-renamed' },
  createCluster: {
    name: 'conformance',
    type: 'TRAINING',
    image: 'busybox',
    compute: { gpuTypeId: 'NVIDIA H100 80GB HBM3', gpuCountPerPod: 1, podCount: 2 },
  },
  updateCluster: { name: 'conformance-renamed' },
  runJob: { input: { prompt: 'a red square' } },
  runJobSync: { input: { prompt: 'a red square' } },
  openaiChatCompletions: {
    model: 'podyard-reference-text',
    messages: [{ role: 'user', content: 'hello' }],
  },
  openaiCompletions: { model: 'podyard-reference-text', prompt: 'hello' },
}

/** Values of body properties and query parameters, by name. */
const KNOWN: Record<string, string[]> = {
  name: ['conformance'],
  image: ['img:1'],
  username: ['conformance'],
  password: ['conformance-secret'],
  email: ['conformance-new@example.com'],
}

const IMAGE_MODEL = 'podyard-reference-image'
const TEXT_MODEL = 'podyard-reference-text'
const WORKER_ID = 'conformance-worker'
/** `?wait=` of the long polls (runsync, status-sync, job-take, job-stop, the OpenAI routes). */
const WAIT_MS = 1000

/** Who sends a request: the account, the admin, or an account without credits. */
type As = 'user' | 'admin' | 'broke'

interface Answer {
  status: number
  type: string | null
  /** Undefined for an event stream, which is let go once its headers came. */
  body: string | undefined
}

/** Whether a media type is JSON (`application/json`, `application/problem+json`). */
const isJson = (media: string) => media === 'application/json' || media.endsWith('+json')

/** What is wrong with an answer to `operation`, by the document. */
function judge(operation: DocumentOperation, answer: Answer): string[] {
  const declared = operation.responses[String(answer.status)] ?? operation.responses.default
  if (declared === undefined) {
    return [
      `answered ${answer.status}, which the document does not declare (it declares ${Object.keys(operation.responses).join(', ')}): ${answer.body?.slice(0, 200)}`,
    ]
  }
  const types = Object.keys(declared)
  const media = answer.type?.split(';')[0]!.trim().toLowerCase()
  if (types.length === 0) {
    return answer.body
      ? [`${answer.status} has no content in the document, but came with ${media}: ${answer.body}`]
      : []
  }
  if (!media) return [`${answer.status} came without a Content-Type; the document says ${types}`]
  if (!types.includes(media)) {
    return [`${answer.status} came as ${answer.type}; the document says ${types.join(' or ')}`]
  }
  if (isJson(media) && answer.body !== undefined) {
    try {
      JSON.parse(answer.body)
    } catch (error) {
      return [`${answer.status} ${media} is not JSON (${(error as Error).message}): ${answer.body}`]
    }
  }
  return []
}

describe('every operation of /v2/openapi.json answers as the document declares', () => {
  let platform: TestPlatform
  let userKey: string
  /** An account without credits and without resources: its creates and runs answer 402. */
  let brokeKey: string
  let operations: DocumentOperation[]
  /** Fixtures of the account, by what they are. */
  const ids: Record<string, string> = {}
  /** The query of the signed URL of a result image: `expires` and `signature`. */
  let objectQuery: URLSearchParams

  const call = async (path: string, key: string, body?: unknown) => {
    const response = await platform.call(path, {
      key,
      method: body === undefined ? 'GET' : 'POST',
      ...(body === undefined ? {} : { json: body }),
    })
    return json<{ id: string } & Record<string, unknown>>(
      response,
      response.status === 201 ? 201 : 200,
    )
  }

  beforeAll(async () => {
    platform = await startTestPlatform({
      workers: { intervalMs: 200, pingIntervalMs: 1000, startTimeoutMs: 30_000 },
      // Accounts without credits are refused (402) what costs money.
      billing: { meterIntervalMs: 10_000, enforce: true },
    })
    userKey = await otherAccountKey(platform, 'conformance@example.com')
    brokeKey = await otherAccountKey(platform, 'conformance-broke@example.com')
    ids.account = (await call('/v2/account', userKey)).id
    await call(`/v2/admin/accounts/${ids.account}/credits`, TEST_ADMIN_KEY, { amount: 100 })
    ids.endpoint = (await call('/v2/serverless', userKey, BODIES.createEndpoint)).id
    ids.template = (await call('/v2/templates', userKey, { name: 'fixture', image: 'img:1' })).id
    ids.volume = (await call('/v2/network-volumes', userKey, BODIES.createNetworkVolume)).id
    ids.registry = (
      await call('/v2/registries', userKey, { name: 'fixture', username: 'u', password: 'p' })
    ).id
    ids.pod = (await call('/v2/pods', userKey, BODIES.createPod)).id
    ids.cluster = (await call('/v2/clusters', userKey, BODIES.createCluster)).id
    ids.apiKey = (await call('/v2/account/api-keys', userKey, { name: 'spare' })).id
    const { hosts } = await call('/v2/admin/hosts', TEST_ADMIN_KEY)
    ids.host = (hosts as Array<{ id: string }>)[0]!.id
    // Jobs for the job API and for the worker protocol to take (none runs: no worker).
    ids.job = (await call(`/v2/${ids.endpoint}/run`, userKey, { input: { n: 1 } })).id
    for (let n = 2; n <= 4; n++) await call(`/v2/${ids.endpoint}/run`, userKey, { input: { n } })
    // A public model's result: its job, and the signed URL of its image.
    const image = await call(`/v2/${IMAGE_MODEL}/runsync?wait=60000`, userKey, BODIES.runJob)
    ids.modelJob = image.id
    const url = new URL((image.output as { image_url: string }).image_url)
    ids.objectKey = url.pathname.slice('/v2/objects/'.length)
    objectQuery = url.searchParams
    const document = (await (
      await platform.call('/v2/openapi.json', { key: null })
    ).json()) as OpenAPIDocument
    operations = operationsOf(document)
  }, 120_000)
  afterAll(() => platform?.close())

  /** The value of a path parameter: a fixture of the collection the path names. */
  function pathValue(name: string, path: string, model: string | undefined): string {
    const segments = path.split('/')
    if (name === 'endpointId') return model ?? ids.endpoint!
    if (name === 'jobId') return model ? ids.modelJob! : ids.job!
    if (name === 'workerId') return WORKER_ID
    if (name === 'accountId') return ids.account!
    if (name === 'hostId') return ids.host!
    if (name === 'key') return ids.objectKey!
    const byCollection: Record<string, string | undefined> = {
      pods: ids.pod,
      templates: ids.template,
      'network-volumes': ids.volume,
      registries: segments[3] === 'delegations' ? 'no-such-delegation' : ids.registry,
      serverless: ids.endpoint,
      clusters: ids.cluster,
      account: ids.apiKey,
      catalog: { gpus: 'NVIDIA A40', cpus: 'cpu3c', datacenters: 'US-KS-2' }[segments[3]!],
    }
    // A parameter nothing here knows (a new route's) is still called, with an id that is none.
    return byCollection[segments[2]!] ?? 'no-such-id'
  }

  /** The plainest valid request of an operation, as `as` sends it. */
  async function requestOf(
    operation: DocumentOperation,
    as: As,
    model?: string,
  ): Promise<{ target: string; init: RequestInit }> {
    let target = operation.path
    for (const parameter of operation.parameters.filter((p) => p.in === 'path')) {
      target = target.replace(
        `{${parameter.name}}`,
        encodeURIComponent(pathValue(parameter.name, operation.path, model)).replaceAll('%2F', '/'),
      )
    }
    const query = new URLSearchParams()
    for (const parameter of operation.parameters.filter((p) => p.in === 'query')) {
      if (parameter.name === 'wait') query.set('wait', String(WAIT_MS))
      else if (objectQuery.has(parameter.name) && operation.path.startsWith('/v2/objects/'))
        query.set(parameter.name, objectQuery.get(parameter.name)!)
      else if (parameter.required)
        query.set(parameter.name, String(plainValue(parameter.schema, (n) => KNOWN[n] ?? [])))
    }
    const body =
      BODIES[operation.operationId] ??
      (operation.body ? plainValue(operation.body, (n) => KNOWN[n] ?? []) : undefined)
    const worker = operation.tags.includes('Worker protocol')
    const authorization = worker
      ? // Fetched each time: rotateEndpointWorkerKey changes it.
        ((await call(`/v2/serverless/${ids.endpoint}/worker-key`, userKey)).workerKey as string)
      : `Bearer ${{ user: userKey, admin: TEST_ADMIN_KEY, broke: brokeKey }[as]}`
    return {
      target: `${target}${query.size > 0 ? `?${query}` : ''}`,
      init: {
        method: operation.method,
        headers: {
          authorization,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      },
    }
  }

  async function send(target: string, init: RequestInit): Promise<Answer> {
    const response = await fetch(`${platform.url}${target}`, {
      ...init,
      signal: AbortSignal.timeout(20_000),
    })
    const type = response.headers.get('content-type')
    if (type?.startsWith('text/event-stream')) {
      await response.body?.cancel()
      return { status: response.status, type, body: undefined }
    }
    return { status: response.status, type, body: await response.text() }
  }

  it('declares the status and the content type of each answer, and its JSON parses', async () => {
    expect(operations.length).toBeGreaterThan(90)
    const calls: Array<{ operation: DocumentOperation; as: As; model?: string }> = []
    // Deletions last, so that every other operation meets the fixtures it names.
    const ordered = [
      ...operations.filter((o) => o.method !== 'DELETE'),
      ...operations.filter((o) => o.method === 'DELETE'),
    ]
    for (const operation of ordered) {
      if (operation.tags.includes('Admin')) {
        calls.push({ operation, as: 'user' }, { operation, as: 'admin' })
        continue
      }
      const model =
        operation.tags.includes('Public models') && operation.path.startsWith('/v2/{endpointId}')
          ? operation.path.includes('/openai/')
            ? TEXT_MODEL
            : IMAGE_MODEL
          : undefined
      calls.push({ operation, as: 'user' })
      if (model) calls.push({ operation, as: 'user', model })
      // The other account meets the account's ids (404) and pays for nothing (402).
      if (operation.method !== 'DELETE' && !operation.tags.includes('Worker protocol')) {
        calls.push({ operation, as: 'broke' })
        if (model) calls.push({ operation, as: 'broke', model })
      }
    }
    const failures: string[] = []
    const answered = new Map<string, number[]>()
    for (const { operation, as, model } of calls) {
      const { target, init } = await requestOf(operation, as, model)
      const label = `${operation.operationId} as ${model ? `${as} of ${model}` : as}: ${init.method} ${target}`
      let answer: Answer
      try {
        answer = await send(target, init)
      } catch (error) {
        failures.push(`${label}: no answer: ${(error as Error).message}`)
        continue
      }
      answered.set(operation.operationId, [
        ...(answered.get(operation.operationId) ?? []),
        answer.status,
      ])
      for (const problem of judge(operation, answer)) failures.push(`${label}: ${problem}`)
    }
    const summary = [...answered].map(([id, statuses]) => `${id} ${statuses.join(',')}`).join('\n')
    expect(failures, summary).toEqual([])
    // The pod routes, which write their answers themselves, answered their success at least once.
    for (const operation of operations.filter((o) => o.tags.includes('Pods'))) {
      expect(
        answered.get(operation.operationId)?.some((status) => status < 300),
        `${operation.operationId}: ${answered.get(operation.operationId)}`,
      ).toBe(true)
    }
  }, 180_000)
})
