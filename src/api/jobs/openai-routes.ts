import { Type } from '@sinclair/typebox'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { EndpointView } from '../../domain/serverless/endpoint.js'
import { isTerminal, type JobView } from '../../domain/serverless/job.js'
import type { JobService } from '../../domain/serverless/job-service.js'
import {
  isErrorPayload,
  jobFailure,
  openaiAnswer,
  openaiJobInput,
  openaiRoute,
  OpenAISseFramer,
  wantsStream,
  workerError,
  type OpenAIFailure,
  type OpenAIJobInput,
} from '../../domain/serverless/openai-bridge.js'
import type { StreamRead } from '../../domain/serverless/ports.js'
import { isAppError } from '../../shared/app-error.js'
import { principalOf } from '../http/authentication.js'
import { httpStatusOf } from '../http/error-status.js'
import { toAppError } from '../http/problem.js'
import { traceOriginOf } from '../http/trace-context.js'
import { intQuery, jsonBody } from './http-support.js'
import { limitExceeded, type JobLimiter } from './job-limiter.js'
import { OpenAIError, OpenAIRequest, OpenAIResponse } from '../openapi/job-api-schemas.js'

export interface OpenAIRoutesDeps {
  jobs: JobService
  limiter: JobLimiter
  runningWorkers: (endpointId: string) => number
}

/**
 * How long a non-streaming call waits for its job (`?wait=` ms): by default the longest wait of
 * `/runsync` (wire-compat §4.1), after which the caller gets 504 and the job id to poll.
 */
export const OPENAI_WAIT = { min: 1_000, max: 300_000, default: 300_000 }
/** A streaming response silent this long gets a comment line, so proxies keep it open. */
export const OPENAI_KEEP_ALIVE_MS = 15_000

const tags = ['Job API', 'Public models']
const Params = Type.Object({
  endpointId: Type.String({
    description: "the endpoint's id, or a public text model's id",
    examples: ['k3x9m2p7q8w4zd'],
  }),
  '*': Type.String(),
})
const openaiError = (description: string) => ({
  description,
  content: { 'application/json': { schema: OpenAIError } },
})
/** The answers of a call that gives no completion, in OpenAI's error shape (for the document). */
const openaiErrors = {
  400: OpenAIError,
  401: OpenAIError,
  402: openaiError("a public model's price above the balance, or billing enforced at zero"),
  403: OpenAIError,
  404: OpenAIError,
  409: openaiError('the job was cancelled'),
  429: OpenAIError,
  500: openaiError('the job failed'),
  502: openaiError("the worker's output is no OpenAI response"),
  504: openaiError('the job timed out, or is still running when `?wait=` ends (its id to poll)'),
  default: openaiError("the worker's own error status (e.g. vLLM's 400 for an unknown model)"),
}
/** `?wait=` of a call without "stream": true (read by intQuery), for the document. */
const OpenAIWaitQuery = Type.Object({
  wait: Type.Optional(
    Type.Integer({
      minimum: OPENAI_WAIT.min,
      maximum: OPENAI_WAIT.max,
      default: OPENAI_WAIT.default,
      description: 'ms to wait for the job to end; then 504 with the job id to poll',
    }),
  ),
})
const OpenAIEvents = Type.String({
  description: 'with "stream": true: OpenAI\'s server-sent events, ending with `data: [DONE]`',
})
type OpenAIReq = FastifyRequest<{ Params: { endpointId: string; '*': string } }>

/** OpenAI's error body for one of our own errors (auth, 404, 400, 429, ...). */
export function openaiErrorBody(status: number, message: string, code: string) {
  const type =
    status === 429
      ? 'rate_limit_error'
      : status === 401
        ? 'authentication_error'
        : status === 403
          ? 'permission_error'
          : status >= 500
            ? 'server_error'
            : 'invalid_request_error'
  return { error: { message, type, param: null, code } }
}

/** Errors of an OpenAI-compatible route in OpenAI's shape, which OpenAI's clients read. */
export function answerErrorsTheOpenAIWay(app: FastifyInstance): void {
  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    const { appError, unexpected } = toAppError(error)
    if (unexpected) request.log.error({ err: error }, 'unhandled error')
    const { status } = httpStatusOf[appError.code]
    if (appError.retryAfterSeconds !== undefined) {
      reply.header('retry-after', String(appError.retryAfterSeconds))
    }
    return reply
      .code(status)
      .send(openaiErrorBody(status, appError.detail, appError.code.toLowerCase()))
  })
}

/**
 * The HTTP status of a job that gave no answer: the worker's own status when its error carries
 * one (vLLM's error responses do, e.g. 400 for an unknown model), else 500; 504 for an execution
 * timeout or a job still running at the wait bound; 409 when cancelled; 502 when the output is
 * no OpenAI response.
 */
export function failureStatus(failure: OpenAIFailure): number {
  switch (failure.reason) {
    case 'worker-error': {
      const code = Number(failure.error.code)
      return Number.isInteger(code) && code >= 400 && code <= 599 ? code : 500
    }
    case 'timed-out':
    case 'pending':
      return 504
    case 'cancelled':
      return 409
    case 'unexpected-output':
      return 502
  }
}

/** Ends once the client has gone before its answer was complete. */
function disconnection(reply: FastifyReply): { readonly gone: boolean; promise: Promise<void> } {
  const state = { gone: false, promise: Promise.resolve() }
  state.promise = new Promise<void>((resolve) => {
    reply.raw.once('close', () => {
      if (reply.raw.writableFinished) return
      state.gone = true
      resolve()
    })
  })
  return state
}

/**
 * `/v2/<endpoint_id>/openai/v1/*` (docs/job-api.md "OpenAI-compatible route"): each call is a
 * job of the endpoint with input `{"openai_route", "openai_input"}`; the answer is the worker's
 * response, or its stream chunks as server-sent events. Registered inside the job API plugin,
 * so authentication and the reserved-segment check are its hooks; errors here are OpenAI's
 * `{"error": {message, type, param, code}}` instead of problem+json, for OpenAI's clients.
 */
export async function openaiRoutes(app: FastifyInstance, deps: OpenAIRoutesDeps): Promise<void> {
  const { jobs, limiter, runningWorkers } = deps

  answerErrorsTheOpenAIWay(app)

  /** A job that gave no answer; a retry would run another job, so clients are told not to. */
  const sendFailure = (reply: FastifyReply, failure: OpenAIFailure) =>
    reply
      .code(failureStatus(failure))
      .header('x-should-retry', 'false')
      .send({ error: failure.error })

  const cancelQuietly = async (request: FastifyRequest, endpointId: string, jobId: string) => {
    try {
      await jobs.cancel(endpointId, jobId)
    } catch (error) {
      if (!isAppError(error))
        request.log.warn({ err: error, jobId }, 'cancel after disconnect failed')
    }
  }

  const answer = async (
    request: OpenAIReq,
    reply: FastifyReply,
    endpoint: EndpointView,
    jobId: string,
    wait: number,
  ) => {
    const client = disconnection(reply)
    const job = await Promise.race([
      jobs.waitForEnd(endpoint.id, jobId, wait),
      client.promise.then(() => undefined),
    ])
    if (job === undefined) {
      // Nobody reads the answer any more: free the worker (an OpenAI client that timed out
      // retries with a new job anyway).
      await cancelQuietly(request, endpoint.id, jobId)
      return reply
    }
    const result = openaiAnswer(job, { waitedMs: wait })
    return result.ok ? reply.send(result.body) : sendFailure(reply, result.failure)
  }

  const relay = async (
    request: OpenAIReq,
    reply: FastifyReply,
    endpoint: EndpointView,
    jobId: string,
  ) => {
    const client = disconnection(reply)
    const framer = new OpenAISseFramer()
    // Error chunks that come before any response chunk: if the job then fails, the client gets
    // a plain HTTP error (its status, its body) rather than a 200 stream holding an error.
    const held: unknown[] = []
    let started = false
    const write = (text: string) => {
      if (text !== '' && !client.gone) reply.raw.write(text)
    }
    const start = () => {
      started = true
      reply.hijack()
      // Hijacked: Fastify no longer watches the response; a write racing a hang-up must not throw.
      reply.raw.on('error', (error) =>
        request.log.debug({ err: error, jobId }, 'stream write failed'),
      )
      reply.raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
        'x-request-id': jobId,
      })
      for (const chunk of held.splice(0)) write(framer.frame(chunk))
    }
    const startsNothing = (chunk: unknown) =>
      isErrorPayload(chunk) || (Array.isArray(chunk) && chunk.every(isErrorPayload))

    let position = 0
    let job: JobView | undefined
    let failedRead: unknown
    try {
      for (;;) {
        const read: StreamRead | undefined = await Promise.race([
          jobs.readStreamAfter(endpoint.id, jobId, position, OPENAI_KEEP_ALIVE_MS),
          client.promise.then(() => undefined),
        ])
        if (read === undefined) break
        position = read.position
        for (const { output: chunk } of read.chunks) {
          if (!started && startsNothing(chunk)) held.push(chunk)
          else {
            if (!started) start()
            write(framer.frame(chunk))
          }
        }
        if (isTerminal(read.status)) break
        // A closing server answers what it has: the job goes on, and its end is told as
        // "still running, poll its status" instead of holding the close up.
        if (request.server.closing.aborted) break
        if (started && read.chunks.length === 0) write(framer.keepAlive())
      }
      if (!client.gone) job = await jobs.get(endpoint.id, jobId)
    } catch (error) {
      // The job vanished (endpoint deleted, ttl) or the store failed mid-stream.
      if (!started) throw error
      failedRead = error
    }
    if (client.gone || job === undefined) {
      if (client.gone) await cancelQuietly(request, endpoint.id, jobId)
      else {
        if (!isAppError(failedRead)) {
          request.log.error({ err: failedRead, jobId }, 'OpenAI stream relay failed')
        }
        const message = isAppError(failedRead)
          ? failedRead.detail
          : 'the stream failed; the fault has been logged'
        write(framer.end({ message, type: 'server_error', param: null, code: 'stream_failed' }))
      }
      if (started) reply.raw.end()
      return reply
    }

    const failure = jobFailure(job)
    if (!started) {
      const first: unknown = held[0]
      const heldFailure: OpenAIFailure | undefined =
        first === undefined
          ? undefined
          : { reason: 'worker-error', error: workerError(Array.isArray(first) ? first[0] : first) }
      const refused = failure ?? heldFailure
      if (refused) return sendFailure(reply, refused)
      start()
      // A worker that streamed nothing (a plain handler): its output is the stream.
      if (framer.count === 0 && job.output !== undefined && job.output !== null) {
        write(framer.frame(job.output))
      }
    }
    write(framer.end(failure?.error))
    reply.raw.end()
    return reply
  }

  const handler = async (request: OpenAIReq, reply: FastifyReply) => {
    const method = request.method === 'GET' ? 'GET' : 'POST'
    const wait = intQuery(request, 'wait', OPENAI_WAIT)
    const endpoint = await jobs.endpointFor(principalOf(request), request.params.endpointId, true)
    const input: OpenAIJobInput = openaiJobInput(
      openaiRoute(request.params['*']),
      method,
      method === 'POST' ? jsonBody(request) : undefined,
    )
    const decision = limiter.admit(endpoint.id, 'openai', runningWorkers(endpoint.id))
    if (!decision.allowed) throw limitExceeded(endpoint.id, decision)
    try {
      // A /runsync-like job: `sync-` id, result kept 1 minute once answered.
      const trace = traceOriginOf(request)
      const job = await jobs.submit(endpoint, { input }, true, trace ? { trace } : {})
      reply.header('x-request-id', job.id)
      return await (wantsStream(input)
        ? relay(request, reply, endpoint, job.id)
        : answer(request, reply, endpoint, job.id, wait))
    } finally {
      decision.release()
    }
  }

  app.post(
    '/:endpointId/openai/v1/*',
    {
      schema: {
        tags,
        operationId: 'openaiPost',
        summary:
          'OpenAI-compatible call (e.g. /v1/chat/completions): a job with input {openai_route, openai_input}; JSON, or server-sent events with "stream": true',
        params: Params,
        documented: {
          querystring: OpenAIWaitQuery,
          body: OpenAIRequest,
          response: {
            200: {
              description: "the worker's answer",
              content: {
                'application/json': { schema: OpenAIResponse },
                'text/event-stream': { schema: OpenAIEvents },
              },
            },
            ...openaiErrors,
          },
        },
      },
    },
    handler,
  )
  app.get(
    '/:endpointId/openai/v1/*',
    {
      // A HEAD would run the handler and submit a job for nothing.
      exposeHeadRoute: false,
      schema: {
        tags,
        operationId: 'openaiGet',
        summary: 'OpenAI-compatible GET (e.g. /v1/models): a job with input {openai_route}',
        params: Params,
        documented: {
          querystring: OpenAIWaitQuery,
          response: { 200: OpenAIResponse, ...openaiErrors },
        },
      },
    },
    handler,
  )
}
