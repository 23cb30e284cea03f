import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ModelService } from '../../domain/models/model-service.js'
import {
  modelInputOf,
  openaiEvents,
  openaiModelList,
  openaiResponse,
  textOutput,
  wantsEvents,
  type OpenAIModelCall,
} from '../../domain/models/openai-model-bridge.js'
import type { JobBody } from '../../domain/serverless/job-body.js'
import type { LimitedOperation } from '../../domain/serverless/operation-limits.js'
import type { Clock } from '../../shared/clock.js'
import { principalOf } from '../http/authentication.js'
import { traced } from '../http/trace-context.js'
import { intQuery, jsonBody } from '../jobs/http-support.js'
import { OPENAI_WAIT, answerErrorsTheOpenAIWay, openaiErrorBody } from '../jobs/openai-routes.js'

export interface ModelOpenAIRoutesDeps {
  models: ModelService
  clock: Clock
  /** The text models' ids. */
  modelIds: string[]
  /** Runs `handle` within the model's limits for the caller (model-routes.ts). */
  limited: <T>(
    request: FastifyRequest,
    modelId: string,
    operation: LimitedOperation,
    handle: () => Promise<T>,
  ) => Promise<T>
}

/** Left out of the OpenAPI document, as the other per-model routes (model-routes.ts). */
const perModel = { tags: ['Public models'], hide: true }

/** Why a job gave no OpenAI answer, as OpenAI's error body and an HTTP status. */
function failure(body: JobBody): { status: number; message: string; code: string } {
  switch (body.status) {
    case 'FAILED':
      return { status: 500, message: body.error ?? 'the model failed', code: 'job_failed' }
    case 'TIMED_OUT':
      return { status: 504, message: `job ${body.id} timed out`, code: 'job_timed_out' }
    case 'CANCELLED':
      return { status: 409, message: `job ${body.id} was cancelled`, code: 'job_cancelled' }
    case 'COMPLETED':
      return { status: 502, message: 'the model answered no text', code: 'unexpected_output' }
    default:
      return {
        status: 504,
        message: `job ${body.id} is still ${body.status} after the wait; poll /v2/<model_id>/status/${body.id}`,
        code: 'job_pending',
      }
  }
}

/**
 * `/v2/<model_id>/openai/v1/{chat/completions,completions,models}` for the public text models
 * (docs/public-endpoints.md): each call is a `/runsync` job of the model, priced and charged as
 * one; the answer is OpenAI's shape, or its server-sent events when `"stream": true`. Errors
 * are OpenAI's `{"error": {message, type, param, code}}`, for OpenAI's clients.
 */
export async function modelOpenAIRoutes(
  app: FastifyInstance,
  deps: ModelOpenAIRoutesDeps,
): Promise<void> {
  const { models, clock } = deps
  answerErrorsTheOpenAIWay(app)

  const complete = (modelId: string, call: OpenAIModelCall) =>
    async function handler(request: FastifyRequest, reply: FastifyReply) {
      const wait = intQuery(request, 'wait', OPENAI_WAIT)
      const body = jsonBody(request)
      const principal = principalOf(request)
      const answer = await deps.limited(request, modelId, 'openai', async () => {
        const input = modelInputOf(call, body)
        const { job } = await models.submit(principal, modelId, { input }, true, traced(request))
        reply.header('x-request-id', job.id)
        return models.waitForEnd(principal, modelId, job.id, wait)
      })
      const out = answer.status === 'COMPLETED' ? textOutput(answer.output) : undefined
      if (!out) {
        const failed = failure(answer)
        // A retry would run (and charge) another job: OpenAI's clients are told not to.
        return reply
          .code(failed.status)
          .header('x-should-retry', 'false')
          .send(openaiErrorBody(failed.status, failed.message, failed.code))
      }
      const context = {
        call,
        jobId: answer.id,
        modelId,
        created: Math.floor(clock.now().getTime() / 1000),
      }
      if (!wantsEvents(body)) return reply.send(openaiResponse(context, out))
      const events = openaiEvents(context, out)
      return reply
        .type('text/event-stream; charset=utf-8')
        .header('cache-control', 'no-cache')
        .send(events.map((data) => `data: ${data}\n\n`).join(''))
    }

  for (const modelId of deps.modelIds) {
    const base = `/${modelId}/openai/v1`
    app.post(
      `${base}/chat/completions`,
      {
        schema: {
          ...perModel,
          summary: `OpenAI chat completion with ${modelId}; "stream": true for server-sent events`,
        },
      },
      complete(modelId, 'chat'),
    )
    app.post(
      `${base}/completions`,
      { schema: { ...perModel, summary: `OpenAI (legacy) completion with ${modelId}` } },
      complete(modelId, 'completion'),
    )
    app.get(
      `${base}/models`,
      { schema: { ...perModel, summary: `The model behind ${base}` } },
      async () => openaiModelList(modelId, Math.floor(clock.now().getTime() / 1000)),
    )
  }
}
