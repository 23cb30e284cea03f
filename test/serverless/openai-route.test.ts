import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  otherAccountKey,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type TestPlatform,
} from '../support/platform.js'
import { createTestEndpoint, json } from '../support/http.js'

type Json = Record<string, unknown>
interface TakenJob {
  id: string
  input: Json
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const completion = (content: string) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: 'tiny',
  choices: [
    { index: 0, message: { role: 'assistant', content }, finish_reason: 'stop', logprobs: null },
  ],
  usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
})
const chunk = (content: string, finish: string | null = null) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1_700_000_000,
  model: 'tiny',
  choices: [{ index: 0, delta: { content }, finish_reason: finish, logprobs: null }],
})
/** What worker-vllm yields with RAW_OPENAI_OUTPUT (its default): SSE text, events batched. */
const sse = (...values: unknown[]) => values.map((v) => `data: ${JSON.stringify(v)}\n\n`).join('')

/** An OpenAI-shaped error with the given status. */
async function openaiError(response: Response, status: number): Promise<Json> {
  const body = await json<{ error: Json }>(response, status)
  expect(body.error).toEqual({
    message: expect.any(String),
    type: expect.any(String),
    param: null,
    code: expect.anything(),
  })
  return body.error
}

/** A worker on the worker protocol over plain fetch (job-take, job-stream, job-done). */
function workerFor(platform: TestPlatform, endpointId: string, workerId = 'openai-worker') {
  const v2 = `${platform.url}/v2/${endpointId}`
  const post = (path: string, body: unknown) =>
    fetch(`${v2}${path}`, {
      method: 'POST',
      headers: { Authorization: TEST_ADMIN_KEY, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    })
  return {
    async take(wait = 5000): Promise<TakenJob> {
      const response = await fetch(`${v2}/job-take/${workerId}?job_in_progress=0&wait=${wait}`, {
        headers: { Authorization: TEST_ADMIN_KEY },
      })
      return json<TakenJob>(response)
    },
    async stream(jobId: string, output: unknown) {
      await json(await post(`/job-stream/${workerId}/${jobId}`, { output }))
    },
    async done(jobId: string, body: unknown) {
      await json(await post(`/job-done/${workerId}/${jobId}`, body))
    },
  }
}

/** Reads an SSE body as it arrives. */
function sseReader(response: Response) {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let text = ''
  return {
    /** Reads until the text received so far contains `needle`; returns all of it. */
    async until(needle: string): Promise<string> {
      while (!text.includes(needle)) {
        const { done, value } = await reader.read()
        if (done) throw new Error(`stream ended without ${JSON.stringify(needle)}: ${text}`)
        text += decoder.decode(value, { stream: true })
      }
      return text
    },
    async rest(): Promise<string> {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return text
        text += decoder.decode(value, { stream: true })
      }
    },
  }
}

const dataOf = (text: string) =>
  text
    .split('\n\n')
    .filter((event) => event.startsWith('data: '))
    .map((event) => event.slice('data: '.length))

describe('OpenAI-compatible route /v2/<endpoint_id>/openai/v1/*', () => {
  let platform: TestPlatform
  let strangerKey: string

  const createEndpoint = (name = 'llm') => createTestEndpoint(platform, name, 'vllm:1')
  const openai = (
    endpointId: string,
    path: string,
    init: Parameters<TestPlatform['call']>[1] = {},
  ) => platform.call(`/v2/${endpointId}/openai/v1${path}`, init)
  const jobStatus = async (endpointId: string, jobId: string) =>
    (await json(await platform.call(`/v2/${endpointId}/status/${jobId}`))).status
  const until = async (check: () => Promise<boolean>, what: string) => {
    for (let i = 0; i < 100; i += 1) {
      if (await check()) return
      await sleep(50)
    }
    throw new Error(`timed out waiting for ${what}`)
  }

  beforeAll(async () => {
    // Two requests in flight per endpoint, so that the limiter's `openai` row can be seen to
    // apply (two, not one: a request's turn ends just after its client has the answer).
    platform = await startTestPlatform({
      jobLimits: {
        perWorkerRate: 10,
        perWorkerConcurrency: 0,
        operations: { openai: { concurrency: 2 } },
      },
    })
    strangerKey = await otherAccountKey(platform, 'openai-stranger@example.com')
  })
  afterAll(() => platform.close())

  it('answers a chat completion with the object the worker returned', async () => {
    const id = await createEndpoint()
    const worker = workerFor(platform, id)
    const request = { model: 'tiny', messages: [{ role: 'user', content: 'hi' }] }
    const pending = openai(id, '/chat/completions', { method: 'POST', json: request })
    const job = await worker.take()
    expect(job.id).toMatch(/^sync-/)
    expect(job.input).toEqual({ openai_route: '/v1/chat/completions', openai_input: request })
    // runpod-python with return_aggregate_stream: the one yielded object, in a list.
    await worker.done(job.id, { output: [completion('hello')] })
    const response = await pending
    expect(response.headers.get('x-request-id')).toBe(job.id)
    expect(response.headers.get('content-type')).toMatch(/^application\/json/)
    expect(await json(response)).toEqual(completion('hello'))
    // A normal job of the endpoint.
    expect(await jobStatus(id, job.id)).toBe('COMPLETED')
    const listed = await json<{ requests: Json[] }>(await platform.call(`/v2/${id}/requests`))
    expect(listed.requests.map((r) => r.id)).toEqual([job.id])
  })

  it('relays a stream chunk by chunk as server-sent events, [DONE] once', async () => {
    const id = await createEndpoint()
    const worker = workerFor(platform, id)
    const pending = openai(id, '/chat/completions', {
      method: 'POST',
      json: { model: 'tiny', messages: [], stream: true },
      key: null,
      // The raw key, as RunPod's curl examples send it.
      headers: { authorization: TEST_ADMIN_KEY },
    })
    const job = await worker.take()
    expect(job.input.openai_input).toMatchObject({ stream: true })
    const first = sse(chunk('Hel'))
    await worker.stream(job.id, first)
    // The response starts with the first chunk, while the worker is still running.
    const response = await pending
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
    expect(response.headers.get('x-request-id')).toBe(job.id)
    const reader = sseReader(response)
    expect(await reader.until('Hel')).toBe(first)
    expect(await jobStatus(id, job.id)).toBe('IN_PROGRESS')

    await sleep(100)
    const second = sse(chunk('lo'), chunk(' there'))
    await worker.stream(job.id, second)
    expect(await reader.until('there')).toBe(first + second)
    // An object chunk becomes one event; the worker's own [DONE] is not repeated.
    await worker.stream(job.id, chunk('!', 'stop'))
    await worker.stream(job.id, 'data: [DONE]\n\n')
    await worker.done(job.id, { output: [first, second, chunk('!', 'stop'), 'data: [DONE]\n\n'] })
    const text = await reader.rest()
    expect(text).toBe(
      `${first}${second}data: ${JSON.stringify(chunk('!', 'stop'))}\n\ndata: [DONE]\n\n`,
    )
    expect(
      dataOf(text).map((d) => (d === '[DONE]' ? d : JSON.parse(d).choices[0].delta.content)),
    ).toEqual(['Hel', 'lo', ' there', '!', '[DONE]'])
    expect(await jobStatus(id, job.id)).toBe('COMPLETED')
  })

  it('streams the output of a worker that streamed nothing, then [DONE]', async () => {
    const id = await createEndpoint()
    const worker = workerFor(platform, id)
    const pending = openai(id, '/completions', {
      method: 'POST',
      json: { prompt: 'x', stream: true },
    })
    const job = await worker.take()
    await worker.done(job.id, { output: chunk('all at once', 'stop') })
    const response = await pending
    expect(await response.text()).toBe(`${sse(chunk('all at once', 'stop'))}data: [DONE]\n\n`)
  })

  it('GET /models is a job with a bare openai_route', async () => {
    const id = await createEndpoint()
    const worker = workerFor(platform, id)
    const models = { object: 'list', data: [{ id: 'tiny', object: 'model', owned_by: 'vllm' }] }
    const pending = openai(id, '/models')
    const job = await worker.take()
    expect(job.input).toEqual({ openai_route: '/v1/models' })
    await worker.done(job.id, { output: [models] })
    expect(await json(await pending)).toEqual(models)
  })

  it("answers a worker's error in OpenAI's shape with a fitting status", async () => {
    const id = await createEndpoint()
    const worker = workerFor(platform, id)
    // runpod-python's final body for worker-vllm's yielded {"error": {...}} (wire-compat §5.9).
    let pending = openai(id, '/chat/completions', { method: 'POST', json: { model: 'tiny' } })
    let job = await worker.take()
    await worker.done(job.id, {
      error: "{'message': 'CUDA out of memory', 'type': 'worker_error', 'code': None}",
    })
    const response = await pending
    expect(response.headers.get('x-should-retry')).toBe('false')
    expect(await openaiError(response, 500)).toEqual({
      message: 'CUDA out of memory',
      type: 'worker_error',
      param: null,
      code: 'job_failed',
    })

    // vLLM's own error response (a COMPLETED job whose output is the error) keeps its status.
    pending = openai(id, '/chat/completions', { method: 'POST', json: { model: 'nope' } })
    job = await worker.take()
    const notFound = {
      object: 'error',
      message: 'The model `nope` does not exist.',
      type: 'NotFoundError',
      param: null,
      code: 404,
    }
    await worker.done(job.id, { output: [notFound] })
    expect(await openaiError(await pending, 404)).toMatchObject({
      message: notFound.message,
      type: 'NotFoundError',
      code: 404,
    })

    // Output no OpenAI client could read as one response: 502.
    pending = openai(id, '/embeddings', { method: 'POST', json: { input: 'x' } })
    job = await worker.take()
    await worker.done(job.id, { output: [{ a: 1 }, { a: 2 }] })
    expect(await openaiError(await pending, 502)).toMatchObject({
      code: 'unexpected_worker_output',
    })
  })

  it('streams an error event then [DONE] when the job fails mid-stream; a plain error before', async () => {
    const id = await createEndpoint()
    const worker = workerFor(platform, id)
    const body = { model: 'tiny', stream: true }
    let pending = openai(id, '/chat/completions', { method: 'POST', json: body })
    let job = await worker.take()
    await worker.stream(job.id, sse(chunk('a')))
    await worker.done(job.id, { error: 'handler: boom \ntraceback: ...' })
    const text = await (await pending).text()
    const events = dataOf(text)
    expect(events).toHaveLength(3)
    expect(JSON.parse(events[1]!)).toEqual({
      error: {
        message: 'handler: boom \ntraceback: ...',
        type: 'worker_error',
        param: null,
        code: 'job_failed',
      },
    })
    expect(events[2]).toBe('[DONE]')

    // The worker's first word is an error: the client gets the HTTP error, not a 200 stream.
    pending = openai(id, '/chat/completions', { method: 'POST', json: body })
    job = await worker.take()
    await worker.stream(job.id, {
      error: "{'message': 'bad request', 'type': 'BadRequestError', 'code': 400}",
    })
    await worker.done(job.id, {
      error: "{'message': 'bad request', 'type': 'BadRequestError', 'code': 400}",
    })
    expect(await openaiError(await pending, 400)).toMatchObject({
      message: 'bad request',
      code: 400,
    })
  })

  it('answers 504 with the job id when the job outlives ?wait=, and the job keeps running', async () => {
    const id = await createEndpoint()
    const started = Date.now()
    const response = await openai(id, '/chat/completions?wait=1000', { method: 'POST', json: {} })
    expect(Date.now() - started).toBeGreaterThanOrEqual(900)
    const jobId = response.headers.get('x-request-id')!
    expect(await openaiError(response, 504)).toMatchObject({
      code: 'job_still_running',
      message: `job ${jobId} is still IN_QUEUE after 1 s; it keeps running: poll /status/${jobId} for its result`,
    })
    expect(await jobStatus(id, jobId)).toBe('IN_QUEUE')
    await openaiError(await openai(id, '/models?wait=5'), 400)
  })

  it('cancels the job when the client hangs up', async () => {
    const id = await createEndpoint()
    const worker = workerFor(platform, id)
    const abort = new AbortController()
    const pending = openai(id, '/chat/completions', {
      method: 'POST',
      json: { stream: true },
      signal: abort.signal,
    })
    const job = await worker.take()
    await worker.stream(job.id, sse(chunk('a')))
    await sseReader(await pending).until('"a"')
    abort.abort()
    await until(
      async () => (await jobStatus(id, job.id)) === 'CANCELLED',
      'the streamed job to be cancelled',
    )

    const other = await createEndpoint()
    const waiting = new AbortController()
    const call = openai(other, '/models', { signal: waiting.signal }).catch(() => undefined)
    const queued = await workerFor(platform, other).take()
    waiting.abort()
    await call
    await until(
      async () => (await jobStatus(other, queued.id)) === 'CANCELLED',
      'the waiting job to be cancelled',
    )
  })

  it('authenticates like the job API and refuses bad bodies, in OpenAI error shape', async () => {
    const id = await createEndpoint()
    await openaiError(await openai(id, '/models', { key: null }), 401)
    expect(await openaiError(await openai(id, '/models', { key: strangerKey }), 404)).toMatchObject(
      {
        type: 'invalid_request_error',
        code: 'not_found',
      },
    )
    const notObject = await openai(id, '/chat/completions', { method: 'POST', json: [1, 2] })
    expect(await openaiError(notObject, 400)).toMatchObject({
      message: 'the body must be a JSON object (the OpenAI request), not an array',
      code: 'malformed_request',
    })
    await openaiError(await openai(id, '/chat/completions', { method: 'POST' }), 400)
    const broken = await openai(id, '/chat/completions', { method: 'POST', body: '{"model":' })
    await openaiError(broken, 400)
    // HEAD is no route (it would submit a job for nothing).
    expect((await openai(id, '/models', { method: 'HEAD' })).status).toBe(404)
    // Nothing above became a job.
    const listed = await json<{ total: number }>(await platform.call(`/v2/${id}/requests`))
    expect(listed.total).toBe(0)
    // A reserved first segment is never an endpoint.
    expect((await platform.call('/v2/pods/openai/v1/models')).status).toBe(404)
  })

  it('applies the `openai` limiter row: 429 with Retry-After over the in-flight limit', async () => {
    const id = await createEndpoint()
    const worker = workerFor(platform, id)
    const first = openai(id, '/models')
    const second = openai(id, '/models')
    const jobs = [await worker.take(), await worker.take()]
    const refused = await openai(id, '/models')
    expect(refused.headers.get('retry-after')).toBe('1')
    expect(await openaiError(refused, 429)).toMatchObject({
      type: 'rate_limit_error',
      code: 'rate_limited',
      message: expect.stringContaining('/openai/* of endpoint'),
    })
    for (const job of jobs) await worker.done(job.id, { output: { object: 'list', data: [] } })
    expect(await json(await first)).toEqual({ object: 'list', data: [] })
    expect(await json(await second)).toEqual({ object: 'list', data: [] })
  })

  describe('with the official openai npm client', () => {
    /** Answers every job like worker-vllm would, until stopped. */
    const serve = (endpointId: string) => {
      const worker = workerFor(platform, endpointId, 'vllm-like')
      let running = true
      const loop = (async () => {
        while (running) {
          const response = await fetch(
            `${platform.url}/v2/${endpointId}/job-take/vllm-like?job_in_progress=0&wait=200`,
            { headers: { Authorization: TEST_ADMIN_KEY } },
          )
          if (response.status !== 200) {
            await response.body?.cancel()
            continue
          }
          const job = (await response.json()) as TakenJob
          const { openai_route: route, openai_input: body } = job.input as {
            openai_route: string
            openai_input?: { stream?: boolean; messages?: { content: string }[] }
          }
          if (route === '/v1/models') {
            await worker.done(job.id, {
              output: [
                {
                  object: 'list',
                  data: [{ id: 'tiny', object: 'model', created: 0, owned_by: 'me' }],
                },
              ],
            })
          } else if (body?.messages?.[0]?.content === 'fail') {
            await worker.done(job.id, {
              error: "{'message': 'no capacity', 'type': 'worker_error', 'code': None}",
            })
          } else if (body?.stream) {
            const yielded: string[] = []
            for (const piece of ['Hel', 'lo']) {
              yielded.push(sse(chunk(piece)))
              await worker.stream(job.id, yielded.at(-1))
              await sleep(30)
            }
            yielded.push(`${sse(chunk('', 'stop'))}data: [DONE]\n\n`)
            await worker.stream(job.id, yielded.at(-1))
            await worker.done(job.id, { output: yielded })
          } else {
            await worker.done(job.id, { output: [completion('Hello')] })
          }
        }
      })()
      return async () => {
        running = false
        await loop
      }
    }

    it('completes, streams, lists models and reports errors', async () => {
      const id = await createEndpoint()
      const stop = serve(id)
      try {
        const client = new OpenAI({
          apiKey: TEST_ADMIN_KEY,
          baseURL: `${platform.url}/v2/${id}/openai/v1`,
        })
        const answer = await client.chat.completions.create({
          model: 'tiny',
          messages: [{ role: 'user', content: 'hi' }],
        })
        expect(answer.choices[0]?.message.content).toBe('Hello')

        const stream = await client.chat.completions.create({
          model: 'tiny',
          messages: [{ role: 'user', content: 'hi' }],
          stream: true,
        })
        const pieces: string[] = []
        for await (const part of stream) pieces.push(part.choices[0]?.delta.content ?? '')
        expect(pieces).toEqual(['Hel', 'lo', ''])

        const models = await client.models.list()
        expect(models.data.map((m) => m.id)).toEqual(['tiny'])

        const failure = await client.chat.completions
          .create({ model: 'tiny', messages: [{ role: 'user', content: 'fail' }] })
          .catch((error: unknown) => error)
        expect(failure).toBeInstanceOf(OpenAI.APIError)
        expect(failure).toMatchObject({
          status: 500,
          message: expect.stringContaining('no capacity'),
        })
        // x-should-retry: false kept the client from submitting the failed job again.
        const listed = await json<{ total: number }>(await platform.call(`/v2/${id}/requests`))
        expect(listed.total).toBe(4)
      } finally {
        await stop()
      }
    })
  })
})
