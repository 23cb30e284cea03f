import { Type } from '@sinclair/typebox'
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify'
import type { AccountService } from '../../domain/accounts/account-service.js'
import type { EndpointView } from '../../domain/serverless/endpoint.js'
import type { JobService } from '../../domain/serverless/job-service.js'
import type { LimitedOperation } from '../../domain/serverless/operation-limits.js'
import { AppError } from '../../shared/app-error.js'
import type { Clock } from '../../shared/clock.js'
import { authenticate, principalOf } from '../http/authentication.js'
import {
  acceptAnyBodyAsText,
  intQuery,
  jsonBody,
  perJobRouteLogging,
  refuseReservedSegments,
} from './http-support.js'
import { installJobApiErrors } from './job-api-errors.js'
import { JobLimiter, limitExceeded } from './job-limiter.js'
import { jobBody, requestLine } from './job-view.js'
import { openaiRoutes } from './openai-routes.js'
import {
  EndpointHealth,
  Job,
  JobRequests,
  JobStream,
  JobSubmission,
  PurgeQueueResult,
  QueuedJob,
  RequestsQuery,
  SyncWaitQuery,
} from '../openapi/job-api-schemas.js'
import { ProblemSchema } from '../rest/problem-schema.js'
import { traced } from '../http/trace-context.js'

export interface JobRoutesDeps {
  accounts: AccountService
  jobs: JobService
  clock: Clock
  /** Rate and concurrency limits per endpoint and operation; default: the spec's table. */
  limiter?: JobLimiter
  /** The endpoint's running workers, which raise its limits (0 when not given). */
  runningWorkers?: (endpointId: string) => number
}

/** `?wait=` of /runsync and /status-sync (wire-compat §4.1): default 90 s, 1 s to 5 min. */
export const SYNC_WAIT = { min: 1_000, max: 300_000, default: 90_000 }
/** How long an empty /stream read waits for a chunk, so a client re-polling at once does not spin. */
export const STREAM_WAIT_MS = 2_000
/** Body limits of wire-compat §4.1 ("Payload limits"); /runsync has the app's 20 MB. */
export const RUN_BODY_LIMIT = 10 * 1024 * 1024
export const RUNSYNC_BODY_LIMIT = 20 * 1024 * 1024

const megabytes = (bytes: number) =>
  bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MB` : `${bytes} bytes`

const endpointId = Type.String({
  description: "the endpoint's id; for the routes tagged Public models, a public model's id too",
  examples: ['k3x9m2p7q8w4zd'],
})
const EndpointParams = Type.Object({ endpointId })
const JobParams = Type.Object({ endpointId, jobId: Type.String() })
const tags = ['Job API']
/** Routes a public model answers too, at `/v2/<model_id>/...` (src/api/models/model-routes.ts). */
const modelTags = ['Job API', 'Public models']
/** The job API's errors (problem+json), for the document. */
const problems = {
  400: ProblemSchema,
  401: ProblemSchema,
  403: ProblemSchema,
  404: ProblemSchema,
  429: ProblemSchema,
}

/** A new job: a public model's price above the balance, or billing enforced at zero (402). */
const submitProblems = { ...problems, 402: ProblemSchema, 413: ProblemSchema }

type EndpointReq = FastifyRequest<{ Params: { endpointId: string } }>
type JobReq = FastifyRequest<{ Params: { endpointId: string; jobId: string } }>

/**
 * The job API of queue-based endpoints, `/v2/<endpoint_id>/...` (docs/job-api.md). Every success
 * is HTTP 200: runpod-sdk treats any other 2xx as a failure.
 */
export async function jobRoutes(app: FastifyInstance, deps: JobRoutesDeps): Promise<void> {
  const { jobs, clock } = deps
  const perJob = perJobRouteLogging(app)
  acceptAnyBodyAsText(app)
  // One hook, not two: each hook is a step of every request (bench/README.md).
  app.addHook('onRequest', async (request) => {
    await refuseReservedSegments(request)
    request.principal = await authenticate(deps.accounts, request, 'bearer-or-raw')
  })
  const endpointOf = (request: EndpointReq, write: boolean) =>
    jobs.endpointFor(principalOf(request), request.params.endpointId, write)
  const now = () => clock.now()
  const limiter = deps.limiter ?? new JobLimiter({ clock })
  const runningWorkers = deps.runningWorkers ?? (() => 0)
  /**
   * Runs `handle` once the request is within the endpoint's limits for `operation` (spec
   * "Limits > Serverless"): 429 with Retry-After otherwise. Unknown or foreign endpoints are
   * 404 before anything is counted.
   */
  const limited = async <T>(
    request: EndpointReq,
    operation: LimitedOperation,
    write: boolean,
    handle: (endpoint: EndpointView) => Promise<T>,
  ): Promise<T> => {
    const endpoint = await endpointOf(request, write)
    const decision = limiter.admit(endpoint.id, operation, runningWorkers(endpoint.id))
    if (!decision.allowed) throw limitExceeded(endpoint.id, decision)
    try {
      return await handle(endpoint)
    } finally {
      decision.release()
    }
  }

  // Fastify's 413 names no limit; a client should learn which one it crossed.
  installJobApiErrors(app, (error: FastifyError, request) => {
    if (error.code !== 'FST_ERR_CTP_BODY_TOO_LARGE') return error
    const limit = request.routeOptions.bodyLimit ?? RUNSYNC_BODY_LIMIT
    const path = (request.routeOptions.url ?? '').replace(/^.*\/:endpointId/, '')
    return new AppError(
      'PAYLOAD_TOO_LARGE',
      `the request body is larger than the ${megabytes(limit)} limit of ${path || 'this route'}`,
    )
  })

  app.post(
    '/:endpointId/run',
    {
      ...perJob,
      bodyLimit: RUN_BODY_LIMIT,
      schema: {
        tags: modelTags,
        operationId: 'runJob',
        summary: 'Queue a job',
        params: EndpointParams,
        documented: {
          body: JobSubmission,
          response: { 200: QueuedJob, ...submitProblems },
        },
      },
    },
    async (request: EndpointReq) =>
      limited(request, 'run', true, async (endpoint) => {
        const job = await jobs.submit(endpoint, jsonBody(request), false, traced(request))
        return { id: job.id, status: job.status }
      }),
  )

  app.post(
    '/:endpointId/runsync',
    {
      ...perJob,
      bodyLimit: RUNSYNC_BODY_LIMIT,
      schema: {
        tags: modelTags,
        operationId: 'runJobSync',
        summary: 'Queue a job and wait for it up to ?wait= ms',
        description:
          'Answers the finished job, or its id and status when it is still queued or running after the wait.',
        params: EndpointParams,
        documented: {
          body: JobSubmission,
          querystring: SyncWaitQuery,
          response: { 200: Type.Union([Job, QueuedJob]), ...submitProblems },
        },
      },
    },
    async (request: EndpointReq) => {
      const wait = intQuery(request, 'wait', SYNC_WAIT)
      return limited(request, 'runsync', true, async (endpoint) => {
        const submitted = await jobs.submit(endpoint, jsonBody(request), true, traced(request))
        const job = await jobs.waitForEnd(endpoint.id, submitted.id, wait, submitted)
        return job.status === 'IN_QUEUE' || job.status === 'IN_PROGRESS'
          ? { id: job.id, status: job.status }
          : jobBody(job, now())
      })
    },
  )

  const status = async (request: JobReq) =>
    limited(request, 'status', false, async (endpoint) =>
      jobBody(await jobs.get(endpoint.id, request.params.jobId), now()),
    )
  for (const method of ['GET', 'POST'] as const) {
    app.route({
      ...perJob,
      method,
      url: '/:endpointId/status/:jobId',
      schema: {
        tags: modelTags,
        operationId: method === 'GET' ? 'getJobStatus' : 'postJobStatus',
        summary: 'Status, timings and output of a job',
        params: JobParams,
        documented: { response: { 200: Job, ...problems } },
      },
      handler: status,
    })
  }

  app.get(
    '/:endpointId/status-sync/:jobId',
    {
      schema: {
        tags: modelTags,
        operationId: 'getJobStatusSync',
        summary: 'Status of a job, waiting up to ?wait= ms for it to finish',
        params: JobParams,
        documented: { querystring: SyncWaitQuery, response: { 200: Job, ...problems } },
      },
    },
    async (request: JobReq) => {
      const wait = intQuery(request, 'wait', SYNC_WAIT)
      return limited(request, 'status', false, async (endpoint) =>
        jobBody(await jobs.waitForEnd(endpoint.id, request.params.jobId, wait), now()),
      )
    },
  )

  const stream = async (request: JobReq) =>
    limited(request, 'stream', false, async (endpoint) => {
      const read = await jobs.readStream(endpoint.id, request.params.jobId, STREAM_WAIT_MS)
      return { status: read.status, stream: read.chunks.map((c) => ({ output: c.output })) }
    })
  for (const method of ['GET', 'POST'] as const) {
    app.route({
      method,
      url: '/:endpointId/stream/:jobId',
      schema: {
        tags: modelTags,
        operationId: method === 'GET' ? 'getJobStream' : 'postJobStream',
        summary: 'Stream chunks not yet delivered',
        params: JobParams,
        documented: { response: { 200: JobStream, ...problems } },
      },
      handler: stream,
    })
  }

  app.post(
    '/:endpointId/cancel/:jobId',
    {
      schema: {
        tags: modelTags,
        operationId: 'cancelJob',
        summary: 'Cancel a job',
        params: JobParams,
        documented: { response: { 200: Job, ...problems } },
      },
    },
    async (request: JobReq) => {
      jsonBody(request)
      return limited(request, 'cancel', true, async (endpoint) =>
        jobBody(await jobs.cancel(endpoint.id, request.params.jobId), now()),
      )
    },
  )

  app.post(
    '/:endpointId/retry/:jobId',
    {
      schema: {
        tags,
        operationId: 'retryJob',
        summary: 'Requeue a FAILED or TIMED_OUT job',
        params: JobParams,
        documented: { response: { 200: QueuedJob, ...problems } },
      },
    },
    async (request: JobReq) => {
      jsonBody(request)
      const endpoint = await endpointOf(request, true)
      const job = await jobs.retry(endpoint.id, request.params.jobId)
      return { id: job.id, status: job.status }
    },
  )

  app.post(
    '/:endpointId/purge-queue',
    {
      schema: {
        tags,
        operationId: 'purgeQueue',
        summary: 'Delete the queued jobs',
        params: EndpointParams,
        documented: { response: { 200: PurgeQueueResult, ...problems } },
      },
    },
    async (request: EndpointReq) => {
      jsonBody(request)
      return limited(request, 'purge-queue', true, async (endpoint) => ({
        removed: await jobs.purgeQueue(endpoint.id),
        status: 'completed',
      }))
    },
  )

  app.get(
    '/:endpointId/health',
    {
      schema: {
        tags,
        operationId: 'getEndpointHealth',
        summary: 'Job and worker counts',
        params: EndpointParams,
        documented: { response: { 200: EndpointHealth, ...problems } },
      },
    },
    async (request: EndpointReq) =>
      limited(request, 'health', false, async (endpoint) => jobs.health(endpoint.id)),
  )

  app.get(
    '/:endpointId/requests',
    {
      schema: {
        tags,
        operationId: 'listJobRequests',
        summary: 'The endpoint jobs, newest first, paged',
        params: EndpointParams,
        documented: { querystring: RequestsQuery, response: { 200: JobRequests, ...problems } },
      },
    },
    async (request: EndpointReq) => {
      const page = intQuery(request, 'page', { min: 1, max: 1_000_000, default: 1 })
      const pageSize = intQuery(request, 'pageSize', { min: 1, max: 500, default: 50 })
      return limited(request, 'requests', false, async (endpoint) => {
        const result = await jobs.requests(endpoint.id, page, pageSize)
        const at = now()
        return {
          requests: result.jobs.map((job) => requestLine(job, at)),
          page: result.page,
          pageSize: result.pageSize,
          total: result.total,
        }
      })
    },
  )

  // `/openai/v1/*`: a child plugin, so it shares this plugin's hooks (authentication, reserved
  // segments) and limiter but answers errors in OpenAI's shape.
  await app.register(openaiRoutes, { jobs, limiter, runningWorkers })
}
