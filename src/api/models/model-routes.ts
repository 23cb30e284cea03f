import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { AccountService } from '../../domain/accounts/account-service.js'
import { MODEL_KINDS, PRICE_UNITS } from '../../domain/models/model.js'
import type { ModelService } from '../../domain/models/model-service.js'
import type { ObjectUrlSigner } from '../../domain/models/signed-urls.js'
import type { LimitedOperation } from '../../domain/serverless/operation-limits.js'
import { AppError } from '../../shared/app-error.js'
import type { Clock } from '../../shared/clock.js'
import { authenticate, principalOf } from '../http/authentication.js'
import { traced } from '../http/trace-context.js'
import {
  acceptAnyBodyAsText,
  intQuery,
  jsonBody,
  RESERVED_FIRST_SEGMENTS,
  stringQuery,
} from '../jobs/http-support.js'
import { installJobApiErrors } from '../jobs/job-api-errors.js'
import { JobLimiter, limitExceeded } from '../jobs/job-limiter.js'
import {
  RUN_BODY_LIMIT,
  RUNSYNC_BODY_LIMIT,
  STREAM_WAIT_MS,
  SYNC_WAIT,
} from '../jobs/job-routes.js'
import { ProblemSchema } from '../rest/problem-schema.js'
import { modelOpenAIRoutes } from './model-openai-routes.js'

export interface ModelRoutesDeps {
  accounts: AccountService
  models: ModelService
  signer: ObjectUrlSigner
  clock: Clock
  /** Limits per model and caller; default: the spec's table, as for endpoints. */
  limiter?: JobLimiter
}

const tags = ['Public models']
const PublicModel = Type.Object(
  {
    id: Type.String({ examples: ['podyard-reference-text'] }),
    kind: Type.Union(MODEL_KINDS.map((k) => Type.Literal(k))),
    name: Type.String(),
    description: Type.String(),
    price: Type.Object({
      unit: Type.Union(PRICE_UNITS.map((u) => Type.Literal(u))),
      usd: Type.Number({ minimum: 0, description: 'USD per unit' }),
    }),
    reference: Type.Boolean({ description: "podyard's reference model, not a real one" }),
    input: Type.Record(Type.String(), Type.Unknown(), {
      description: "the JSON schema of the model's input",
    }),
  },
  { title: 'PublicModel' },
)
/**
 * Each model's copy of a job route is left out of the OpenAPI document: it shows the job API's
 * `/v2/{endpointId}/...` operations once, tagged Public models too, with a model id in place of
 * the endpoint id (a client generated from it calls both the same way).
 */
const perModel = { tags, hide: true }
const JobParams = Type.Object({ jobId: Type.String() })
type JobReq = FastifyRequest<{ Params: { jobId: string } }>

/**
 * `/v2/<model_id>/{run,runsync,status,status-sync,stream,cancel}` (docs/public-endpoints.md):
 * the job API of public models. Each model's paths are static routes, which Fastify's router
 * prefers to the `/v2/<endpoint_id>/...` routes of the job API, so a model id can never be
 * taken for an endpoint id (it has a hyphen; endpoint ids have none). Also `GET
 * /v2/objects/<key>`, the signed URLs of stored results, which need no API key.
 */
export async function modelRoutes(app: FastifyInstance, deps: ModelRoutesDeps): Promise<void> {
  const { models, clock } = deps
  await app.register(async (jobs) => {
    acceptAnyBodyAsText(jobs)
    installJobApiErrors(jobs)
    jobs.addHook('onRequest', async (request) => {
      request.principal = await authenticate(deps.accounts, request, 'bearer-or-raw')
    })
    const limiter = deps.limiter ?? new JobLimiter({ clock })
    // Limits count per model and caller: one account's burst must not starve the others.
    const limited = async <T>(
      request: FastifyRequest,
      modelId: string,
      operation: LimitedOperation,
      handle: () => Promise<T>,
    ): Promise<T> => {
      const key = `${modelId}/${principalOf(request).accountId}`
      const decision = limiter.admit(key, operation, 0)
      if (!decision.allowed) throw limitExceeded(modelId, decision)
      try {
        return await handle()
      } finally {
        decision.release()
      }
    }

    for (const modelId of models.ids()) {
      if (RESERVED_FIRST_SEGMENTS.has(modelId)) {
        throw new Error(`model id ${modelId} is a reserved path segment of the API`)
      }
      const base = `/${modelId}`
      jobs.post(
        `${base}/run`,
        {
          bodyLimit: RUN_BODY_LIMIT,
          schema: { ...perModel, summary: `Queue a job of ${modelId}` },
        },
        async (request) =>
          limited(request, modelId, 'run', async () => {
            const { job } = await models.submit(
              principalOf(request),
              modelId,
              jsonBody(request),
              false,
              traced(request),
            )
            return { id: job.id, status: job.status }
          }),
      )
      jobs.post(
        `${base}/runsync`,
        {
          bodyLimit: RUNSYNC_BODY_LIMIT,
          schema: { ...perModel, summary: `Run a job of ${modelId} and wait up to ?wait= ms` },
        },
        async (request) => {
          const wait = intQuery(request, 'wait', SYNC_WAIT)
          return limited(request, modelId, 'runsync', async () => {
            const principal = principalOf(request)
            const { job } = await models.submit(
              principal,
              modelId,
              jsonBody(request),
              true,
              traced(request),
            )
            const body = await models.waitForEnd(principal, modelId, job.id, wait)
            return body.status === 'IN_QUEUE' || body.status === 'IN_PROGRESS'
              ? { id: body.id, status: body.status }
              : body
          })
        },
      )
      const status = async (request: JobReq) =>
        limited(request, modelId, 'status', () =>
          models.status(principalOf(request), modelId, request.params.jobId),
        )
      for (const method of ['GET', 'POST'] as const) {
        jobs.route({
          method,
          url: `${base}/status/:jobId`,
          schema: {
            ...perModel,
            summary: `Status and output of a job of ${modelId}`,
            params: JobParams,
          },
          handler: status,
        })
      }
      jobs.get(
        `${base}/status-sync/:jobId`,
        { schema: { ...perModel, summary: 'Status, waiting up to ?wait= ms', params: JobParams } },
        async (request: JobReq) => {
          const wait = intQuery(request, 'wait', SYNC_WAIT)
          return limited(request, modelId, 'status', () =>
            models.waitForEnd(principalOf(request), modelId, request.params.jobId, wait),
          )
        },
      )
      const stream = async (request: JobReq) =>
        limited(request, modelId, 'stream', async () => {
          const read = await models.stream(
            principalOf(request),
            modelId,
            request.params.jobId,
            STREAM_WAIT_MS,
          )
          return { status: read.status, stream: read.chunks.map((c) => ({ output: c.output })) }
        })
      for (const method of ['GET', 'POST'] as const) {
        jobs.route({
          method,
          url: `${base}/stream/:jobId`,
          schema: { ...perModel, summary: 'Stream chunks not yet delivered', params: JobParams },
          handler: stream,
        })
      }
      jobs.post(
        `${base}/cancel/:jobId`,
        { schema: { ...perModel, summary: `Cancel a job of ${modelId}`, params: JobParams } },
        async (request: JobReq) => {
          jsonBody(request)
          return limited(request, modelId, 'cancel', () =>
            models.cancel(principalOf(request), modelId, request.params.jobId),
          )
        },
      )
    }
    // Text models also answer OpenAI's API, as an endpoint's /openai/v1/* does.
    await jobs.register(modelOpenAIRoutes, {
      models,
      clock,
      modelIds: models
        .list()
        .filter((m) => m.kind === 'text')
        .map((m) => m.id),
      limited,
    })
  })

  // The signature is the credential: no API key, so that the URL works in a browser or <img>.
  app.get(
    '/objects/*',
    {
      schema: {
        tags,
        operationId: 'getResultObject',
        summary: 'A stored result behind a signed URL',
        security: [],
        documented: {
          querystring: Type.Object({
            expires: Type.String({ description: 'Unix seconds; part of the signed URL' }),
            signature: Type.String({ description: 'part of the signed URL' }),
          }),
          response: {
            200: {
              description: 'the object (an image is image/png)',
              content: { 'image/png': { schema: Type.String({ format: 'binary' }) } },
            },
          },
        },
        response: { 403: ProblemSchema, 404: ProblemSchema, 410: ProblemSchema },
      },
    },
    async (request: FastifyRequest<{ Params: { '*': string } }>, reply: FastifyReply) => {
      const key = request.params['*']
      const check = deps.signer.check(
        key,
        stringQuery(request, 'expires'),
        stringQuery(request, 'signature'),
        clock.now(),
      )
      if (!check.ok && check.reason === 'bad-signature') {
        throw new AppError('FORBIDDEN', 'the URL signature is missing or not valid')
      }
      if (!check.ok) {
        throw new AppError(
          'GONE',
          'this URL has expired: result URLs of public models work for 7 days after generation',
        )
      }
      const object = await models.object(key)
      const expires = Number(stringQuery(request, 'expires'))
      const maxAge = Math.max(0, Math.floor(expires - clock.now().getTime() / 1000))
      return reply
        .type(object.contentType)
        .header('cache-control', `private, max-age=${maxAge}`)
        .send(object.body)
    },
  )
}

/** `GET /v2/catalog/models`: registered inside the REST API (its guard and rate limits). */
export async function modelCatalogRoutes(
  app: FastifyInstance,
  deps: { models: ModelService },
): Promise<void> {
  app.get(
    '/catalog/models',
    {
      schema: {
        tags: ['Catalog'],
        operationId: 'listModels',
        summary: 'The public models any account may call at /v2/<model_id>/runsync',
        documented: {
          response: { 200: Type.Array(PublicModel), 401: ProblemSchema, 429: ProblemSchema },
        },
      },
    },
    async () => deps.models.list(),
  )
}
