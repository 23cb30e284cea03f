import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { json } from '../support/http.js'
import { attribute, otlpReceiver, type OtlpSpan } from '../support/otlp-receiver.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'

/**
 * The caller's trace context on the other ways in: GraphQL's pod creates (as runpod-python and
 * runpodctl make pods) and public-model jobs (their job API and OpenAI routes) join the
 * caller's trace as REST's `POST /v2/pods` and an endpoint's `/run` do. A member account, over
 * HTTP, with the spans exported to a real OTLP receiver.
 */

const TEXT_MODEL = 'podyard-reference-text'
const H100 = 'NVIDIA H100 80GB HBM3'
const CALLER_SPAN = '00f067aa0ba902b7'
/** One trace of the caller's per call, told apart by its last byte. */
const callerTrace = (n: number) => `${'cd'.repeat(15)}${String(n).padStart(2, '0')}`
const traceparent = (n: number) => `00-${callerTrace(n)}-${CALLER_SPAN}-01`

/** The span id of the request's own span, from the answer's traceparent, in the caller's trace. */
function requestSpanOf(answer: Response, n: number): string {
  const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(
    answer.headers.get('traceparent') ?? '',
  )
  expect(match?.[1], 'the request continues the caller trace').toBe(callerTrace(n))
  return match![2]!
}

describe("the caller's trace on GraphQL pod creates and public-model jobs", () => {
  let receiver: Awaited<ReturnType<typeof otlpReceiver>>
  let platform: TestPlatform | undefined
  /** What each traced call made: its pod or job id, and its request's span. */
  const made = new Map<string, { id: string; requestSpan: string; n: number }>()
  /** The pods of the clusters each way made. */
  const clusters = new Map<string, { podIds: string[]; requestSpan: string; n: number }>()

  beforeAll(async () => {
    receiver = await otlpReceiver()
    platform = await startTestPlatform({
      sandbox: 'none',
      telemetry: { traceContext: false, endpointLabels: 20, otlpEndpoint: receiver.url },
      workers: {
        intervalMs: 200,
        pingIntervalMs: 1000,
        heartbeatTimeoutMs: 10_000,
        startTimeoutMs: 30_000,
        stopGraceMs: 2000,
        unhealthyRetentionMs: 1500,
      },
    })
    const key = await otherAccountKey(platform, 'tracing-entry-points@example.com')
    const accountId = (await json<{ id: string }>(await platform.call('/v2/account', { key }))).id
    const credited = await platform.call(`/v2/admin/accounts/${accountId}/credits`, {
      method: 'POST',
      json: { amount: 5 },
    })
    expect(credited.status).toBe(200)

    // The three GraphQL mutations that create a pod.
    const graphqlCall = async (n: number, query: string) => {
      const answer = await platform!.call('/graphql', {
        key,
        method: 'POST',
        json: { query },
        headers: { traceparent: traceparent(n) },
      })
      const requestSpan = requestSpanOf(answer, n)
      const body = await json<{
        data: Record<string, { id: string; pods?: Array<{ id: string }> }> | null
        errors?: unknown
      }>(answer)
      expect(body.errors, JSON.stringify(body.errors)).toBeUndefined()
      const [[mutation, made]] = Object.entries(body.data!) as [
        [string, { id: string; pods?: Array<{ id: string }> }],
      ]
      return { mutation, made, requestSpan }
    }
    const graphql = async (n: number, query: string) => {
      const { mutation, made: pod, requestSpan } = await graphqlCall(n, query)
      made.set(mutation, { id: pod.id, requestSpan, n })
    }
    const gpu = 'gpuTypeId: "NVIDIA GeForce RTX 4090", gpuCount: 1'
    await graphql(
      1,
      `mutation { podFindAndDeployOnDemand(input: {name: "traced-gpu", imageName: "ubuntu", ${gpu}, dockerArgs: "sleep 600"}) { id } }`,
    )
    await graphql(
      2,
      `mutation { podRentInterruptable(input: {name: "traced-spot", imageName: "ubuntu", ${gpu}, bidPerGpu: 1, dockerArgs: "sleep 600"}) { id } }`,
    )
    await graphql(
      3,
      'mutation { deployCpuPod(input: {name: "traced-cpu", imageName: "ubuntu", instanceId: "cpu3c-2-4", dockerArgs: "sleep 600"}) { id } }',
    )
    for (const mutation of ['podFindAndDeployOnDemand', 'podRentInterruptable', 'deployCpuPod']) {
      const terminated = await platform.call('/graphql', {
        key,
        method: 'POST',
        json: { query: `mutation { podTerminate(input: {podId: "${made.get(mutation)!.id}"}) }` },
      })
      expect(terminated.status).toBe(200)
    }

    // An instant cluster by REST and by GraphQL: each of its pods joins the request's trace.
    const compute = { gpuTypeId: H100, gpuCountPerPod: 1, podCount: 2 }
    const rest = await platform.call('/v2/clusters', {
      key,
      method: 'POST',
      json: { name: 'traced-rest', type: 'TRAINING', image: 'busybox', args: 'sleep 600', compute },
      headers: { traceparent: traceparent(7) },
    })
    const restSpan = requestSpanOf(rest, 7)
    const restCluster = (await json<{ id: string }>(rest, 201)).id
    const restPods = await json<{ pods: Array<{ id: string }> }>(
      await platform.call(`/v2/clusters/${restCluster}/pods`, { key }),
    )
    clusters.set('POST /v2/clusters', {
      podIds: restPods.pods.map((pod) => pod.id),
      requestSpan: restSpan,
      n: 7,
    })
    expect(
      (await platform.call(`/v2/clusters/${restCluster}`, { key, method: 'DELETE' })).status,
    ).toBeLessThan(300)
    const gql = await graphqlCall(
      8,
      `mutation { createCluster(input: {clusterName: "traced-gql", gpuTypeId: "${H100}", podCount: 2, gpuCountPerPod: 1, imageName: "busybox", type: TRAINING}) { id pods { id } } }`,
    )
    clusters.set('createCluster', {
      podIds: gql.made.pods!.map((pod) => pod.id),
      requestSpan: gql.requestSpan,
      n: 8,
    })
    await graphqlCall(9, `mutation { deleteCluster(input: {id: "${gql.made.id}"}) }`)

    // A public model's job by /run, by /runsync and by its OpenAI route.
    const prompt = { prompt: 'Say something about tracing', max_tokens: 16 }
    const queued = await platform.call(`/v2/${TEXT_MODEL}/run`, {
      key,
      method: 'POST',
      json: { input: prompt },
      headers: { traceparent: traceparent(4) },
    })
    const queuedId = (await json<{ id: string }>(queued)).id
    made.set('run', { id: queuedId, requestSpan: requestSpanOf(queued, 4), n: 4 })
    const ran = await platform.call(`/v2/${TEXT_MODEL}/status-sync/${queuedId}?wait=60000`, {
      key,
    })
    expect((await json<{ status: string }>(ran)).status).toBe('COMPLETED')

    const sync = await platform.call(`/v2/${TEXT_MODEL}/runsync?wait=60000`, {
      key,
      method: 'POST',
      json: { input: prompt },
      headers: { traceparent: traceparent(5) },
    })
    const synced = await json<{ id: string; status: string }>(sync)
    expect(synced.status).toBe('COMPLETED')
    made.set('runsync', { id: synced.id, requestSpan: requestSpanOf(sync, 5), n: 5 })

    const chat = await platform.call(`/v2/${TEXT_MODEL}/openai/v1/chat/completions`, {
      key,
      method: 'POST',
      json: { model: TEXT_MODEL, messages: [{ role: 'user', content: 'hello' }], max_tokens: 16 },
      headers: { traceparent: traceparent(6) },
    })
    expect(chat.status).toBe(200)
    made.set('openai', {
      id: chat.headers.get('x-request-id')!,
      requestSpan: requestSpanOf(chat, 6),
      n: 6,
    })

    // Closing flushes the spans still buffered.
    await platform.close()
    platform = undefined
  }, 120_000)
  afterAll(async () => {
    await platform?.close()
    await receiver?.close()
  })

  const spansWith = (key: string, id: string): OtlpSpan[] =>
    receiver.spans.filter((s) => attribute(s, key) === id)

  it.each(['podFindAndDeployOnDemand', 'podRentInterruptable', 'deployCpuPod'])(
    "puts the pod %s creates under the GraphQL request's span, in the caller's trace",
    (mutation) => {
      const { id, requestSpan, n } = made.get(mutation)!
      const request = receiver.spans.find((s) => s.spanId === requestSpan)
      expect(request?.name).toBe('POST /graphql')
      expect(request!.parentSpanId).toBe(CALLER_SPAN)
      const ofPod = spansWith('podyard.pod.id', id)
      expect(ofPod.map((s) => s.name)).toContain('pod.create')
      for (const span of ofPod) {
        expect(span.traceId).toBe(callerTrace(n))
        expect(span.parentSpanId).toBe(requestSpan)
      }
    },
  )

  it.each(['POST /v2/clusters', 'createCluster'])(
    "puts each pod of a cluster made by %s under that request's span, in the caller's trace",
    (how) => {
      const { podIds, requestSpan, n } = clusters.get(how)!
      expect(podIds).toHaveLength(2)
      for (const podId of podIds) {
        const ofPod = spansWith('podyard.pod.id', podId)
        expect(ofPod.map((s) => s.name)).toContain('pod.create')
        for (const span of ofPod) {
          expect(span.traceId).toBe(callerTrace(n))
          expect(span.parentSpanId).toBe(requestSpan)
        }
      }
    },
  )

  it.each(['run', 'runsync', 'openai'])(
    "puts a public model's job queued by %s under that request's span, in the caller's trace",
    (how) => {
      const { id, requestSpan, n } = made.get(how)!
      const ofJob = spansWith('podyard.job.id', id)
      expect(ofJob.map((s) => s.name).sort()).toEqual(['job.done', 'job.queued', 'job.taken'])
      for (const span of ofJob) expect(span.traceId).toBe(callerTrace(n))
      expect(ofJob.find((s) => s.name === 'job.queued')!.parentSpanId).toBe(requestSpan)
      expect(ofJob.find((s) => s.name === 'job.taken')!.parentSpanId).toBe(requestSpan)
    },
  )
})
