import { describe, expect, it } from 'vitest'
import { AppError } from '../../shared/app-error.js'
import {
  aggregatedResponse,
  isErrorPayload,
  jobFailure,
  openaiAnswer,
  openaiJobInput,
  openaiRoute,
  OpenAISseFramer,
  SSE_DONE,
  sseEventData,
  wantsStream,
  workerError,
} from './openai-bridge.js'

const completion = { id: 'cmpl-1', object: 'chat.completion', choices: [] }
const sse = (value: unknown) => `data: ${JSON.stringify(value)}\n\n`
const job = (fields: Partial<Parameters<typeof openaiAnswer>[0]>) => ({
  id: 'sync-1',
  status: 'COMPLETED' as const,
  ...fields,
})

describe('job input', () => {
  it('names the route under /v1 and carries a POST body as openai_input', () => {
    expect(openaiRoute('chat/completions')).toBe('/v1/chat/completions')
    expect(openaiRoute('//models//x')).toBe('/v1/models/x')
    const input = openaiJobInput('/v1/chat/completions', 'POST', { model: 'm', stream: true })
    expect(input).toEqual({
      openai_route: '/v1/chat/completions',
      openai_input: { model: 'm', stream: true },
    })
    expect(wantsStream(input)).toBe(true)
    expect(wantsStream(openaiJobInput('/v1/completions', 'POST', { stream: 'yes' }))).toBe(false)
  })

  it('is a bare route for GET (worker-vllm reads that as GET /v1/models)', () => {
    expect(openaiJobInput('/v1/models', 'GET', undefined)).toEqual({ openai_route: '/v1/models' })
  })

  it('refuses a POST body that is not a JSON object', () => {
    for (const body of [undefined, [1], 'text', 3, null]) {
      expect(() => openaiJobInput('/v1/embeddings', 'POST', body)).toThrow(AppError)
    }
    expect(() => openaiJobInput('/v1/embeddings', 'POST', [])).toThrow(/not an array/)
  })
})

describe('non-streaming answer', () => {
  it("unwraps worker-vllm's aggregate list of one object", () => {
    expect(aggregatedResponse([completion])).toEqual({ ok: true, body: completion })
    expect(aggregatedResponse(completion)).toEqual({ ok: true, body: completion })
  })

  it('reads SSE text holding one event, or JSON text', () => {
    expect(aggregatedResponse([`${sse(completion)}data: [DONE]\n\n`])).toEqual({
      ok: true,
      body: completion,
    })
    expect(aggregatedResponse(['data: {"a":', '1}\n\n'])).toEqual({ ok: true, body: { a: 1 } })
    expect(aggregatedResponse(JSON.stringify(completion))).toEqual({ ok: true, body: completion })
  })

  it('refuses what is no single response object (502 upstream)', () => {
    for (const output of [
      undefined,
      null,
      [],
      [completion, completion],
      [sse({ a: 1 }) + sse({ a: 2 })],
      'plain text',
      '[1,2]',
      42,
      [[completion]],
    ]) {
      const answer = aggregatedResponse(output)
      expect(answer.ok, JSON.stringify(output)).toBe(false)
      if (!answer.ok) {
        expect(answer.failure.reason).toBe('unexpected-output')
        expect(answer.failure.error.code).toBe('unexpected_worker_output')
      }
    }
  })

  it('answers an error object in the output as the worker error it is', () => {
    const vllm = { object: 'error', message: 'no model x', type: 'NotFoundError', code: 404 }
    expect(aggregatedResponse([vllm])).toEqual({
      ok: false,
      failure: {
        reason: 'worker-error',
        error: { message: 'no model x', type: 'NotFoundError', param: null, code: 404 },
      },
    })
    const wrapped = aggregatedResponse([{ error: { message: 'bad', type: 'BadRequestError' } }])
    expect(wrapped.ok === false && wrapped.failure.error.message).toBe('bad')
  })

  it('maps failed, timed-out, cancelled and unfinished jobs', () => {
    const failed = openaiAnswer(
      job({
        status: 'FAILED',
        error: "{'message': 'CUDA out of memory', 'type': 'worker_error', 'code': None}",
      }),
    )
    expect(failed).toEqual({
      ok: false,
      failure: {
        reason: 'worker-error',
        error: {
          message: 'CUDA out of memory',
          type: 'worker_error',
          param: null,
          code: 'job_failed',
        },
      },
    })
    expect(jobFailure(job({ status: 'TIMED_OUT' }))).toMatchObject({
      reason: 'timed-out',
      error: { code: 'job_timed_out' },
    })
    expect(jobFailure(job({ status: 'CANCELLED' }))).toMatchObject({
      reason: 'cancelled',
      error: { code: 'job_cancelled' },
    })
    const pending = jobFailure(job({ status: 'IN_QUEUE' }), { waitedMs: 300_000 })
    expect(pending).toMatchObject({ reason: 'pending', error: { code: 'job_still_running' } })
    expect(pending?.error.message).toBe(
      'job sync-1 is still IN_QUEUE after 300 s; it keeps running: poll /status/sync-1 for its result',
    )
    expect(jobFailure(job({}))).toBeUndefined()
  })
})

describe('worker errors', () => {
  it("reads runpod-python's exception JSON, OpenAI's shape, Python's dict text, plain text", () => {
    const exception = JSON.stringify({
      error_type: "<class 'ValueError'>",
      error_message: 'bad prompt',
      error_traceback: 'Traceback ...',
    })
    expect(workerError(exception)).toEqual({
      message: 'bad prompt',
      type: 'worker_error',
      param: null,
      code: null,
    })
    expect(workerError({ error: { message: 'm', type: 't', param: 'model', code: 'c' } })).toEqual({
      message: 'm',
      type: 't',
      param: 'model',
      code: 'c',
    })
    expect(
      workerError(`{'error': {'message': "it's gone", 'type': 'BadRequestError', 'code': 400}}`),
    ).toEqual({ message: "it's gone", type: 'BadRequestError', param: null, code: 400 })
    expect(workerError("{'message': 'line\\nbreak \\'q\\''}")).toMatchObject({
      message: "line\nbreak 'q'",
    })
    expect(workerError('handler: boom \ntraceback: ...')).toMatchObject({
      message: 'handler: boom \ntraceback: ...',
      type: 'worker_error',
    })
    expect(workerError('')).toMatchObject({ message: expect.stringMatching(/without a message/) })
    expect(workerError(undefined)).toMatchObject({ message: 'the worker failed' })
  })

  it('tells error payloads from responses', () => {
    expect(isErrorPayload({ error: 'x' })).toBe(true)
    expect(isErrorPayload({ object: 'error', message: 'x' })).toBe(true)
    expect(isErrorPayload({ error: null, id: 'r' })).toBe(false)
    expect(isErrorPayload(completion)).toBe(false)
    expect(isErrorPayload('data: {}')).toBe(false)
  })
})

describe('SSE framing of stream chunks', () => {
  it('passes worker-vllm text through, holds back its [DONE] and ends with one [DONE]', () => {
    const framer = new OpenAISseFramer()
    const a = sse({ n: 1 })
    const b = `${sse({ n: 2 })}${sse({ n: 3 })}`
    let out = framer.frame(a) + framer.frame(b) + framer.frame(`${sse({ n: 4 })}data: [DONE]\n\n`)
    out += framer.frame('data: [DONE]\n\n') + framer.end()
    expect(out).toBe(a + b + sse({ n: 4 }) + SSE_DONE)
    expect(sseEventData(out)).toEqual(['{"n":1}', '{"n":2}', '{"n":3}', '{"n":4}'])
    expect(out.match(/\[DONE\]/g)).toHaveLength(1)
    expect(framer.count).toBe(4)
  })

  it('makes one data event of each JSON value, one per item of a list', () => {
    const framer = new OpenAISseFramer()
    expect(framer.frame({ n: 1 })).toBe(sse({ n: 1 }))
    expect(framer.frame([{ n: 2 }, 'data: {"n":3}\n\n'])).toBe(sse({ n: 2 }) + sse({ n: 3 }))
    expect(framer.frame('a plain token')).toBe(sse('a plain token'))
    expect(framer.end()).toBe(SSE_DONE)
  })

  it('keeps a worker event split across chunks whole', () => {
    const framer = new OpenAISseFramer()
    expect(framer.frame('data: {"n"')).toBe('data: {"n"')
    expect(framer.keepAlive()).toBe('')
    expect(framer.frame(':1}\n\n')).toBe(':1}\n\n')
    expect(framer.keepAlive()).toBe(': keep-alive\n\n')
    expect(framer.frame('data: {"n":2}')).toBe('data: {"n":2}')
    expect(framer.frame({ n: 3 })).toBe(`\n\n${sse({ n: 3 })}`)
    expect(framer.frame('data: [DONE]')).toBe('')
    expect(framer.end()).toBe(SSE_DONE)
  })

  it("sends a failed job's error once, then [DONE]", () => {
    const error = { message: 'boom', type: 'worker_error', param: null, code: 'job_failed' }
    const plain = new OpenAISseFramer()
    plain.frame(sse({ n: 1 }))
    expect(plain.end(error)).toBe(`data: {"error":${JSON.stringify(error)}}\n\n${SSE_DONE}`)

    // The worker already streamed its error (worker-vllm yields {"error": ...}): not repeated.
    const relayed = new OpenAISseFramer()
    expect(relayed.frame({ error: "{'message': 'bad'}" })).toBe(
      'data: {"error":{"message":"bad","type":"worker_error","param":null,"code":null}}\n\n',
    )
    expect(relayed.end(error)).toBe(SSE_DONE)
    const inText = new OpenAISseFramer()
    inText.frame(sse({ object: 'error', message: 'x' }))
    expect(inText.end(error)).toBe(SSE_DONE)
  })
})
