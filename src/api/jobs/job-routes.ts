import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { AccountService } from '../../domain/accounts/account-service.js'
import type { JobService } from '../../domain/serverless/job-service.js'
import type { Clock } from '../../shared/clock.js'
import { authenticate, principalOf } from '../http/authentication.js'
import { acceptAnyBodyAsText, intQuery, jsonBody, refuseReservedSegments } from './http-support.js'
import { jobBody, requestLine } from './job-view.js'

export interface JobRoutesDeps {
  accounts: AccountService
  jobs: JobService
  clock: Clock
}

/** `?wait=` of /runsync and /status-sync (wire-compat §4.1): default 90 s, 1 s to 5 min. */
export const SYNC_WAIT = { min: 1_000, max: 300_000, default: 90_000 }
/** How long an empty /stream read waits for a chunk, so a client re-polling at once does not spin. */
export const STREAM_WAIT_MS = 2_000
/** Body limits of wire-compat §4.1 ("Payload limits"); /runsync has the app's 20 MB. */
export const RUN_BODY_LIMIT = 10 * 1024 * 1024

const EndpointParams = Type.Object({ endpointId: Type.String() })
const JobParams = Type.Object({ endpointId: Type.String(), jobId: Type.String() })
const tags = ['Job API']

type EndpointReq = FastifyRequest<{ Params: { endpointId: string } }>
type JobReq = FastifyRequest<{ Params: { endpointId: string; jobId: string } }>

/**
 * The job API of queue-based endpoints, `/v2/<endpoint_id>/...` (docs/job-api.md). Every success
 * is HTTP 200: runpod-sdk treats any other 2xx as a failure.
 */
export async function jobRoutes(app: FastifyInstance, deps: JobRoutesDeps): Promise<void> {
  const { jobs, clock } = deps
  acceptAnyBodyAsText(app)
  app.addHook('onRequest', refuseReservedSegments)
  app.addHook('onRequest', async (request) => {
    request.principal = await authenticate(deps.accounts, request, 'bearer-or-raw')
  })
  const endpointOf = (request: EndpointReq, write: boolean) =>
    jobs.endpointFor(principalOf(request), request.params.endpointId, write)
  const now = () => clock.now()

  app.post(
    '/:endpointId/run',
    {
      bodyLimit: RUN_BODY_LIMIT,
      schema: { tags, operationId: 'runJob', summary: 'Queue a job', params: EndpointParams },
    },
    async (request: EndpointReq) => {
      const endpoint = await endpointOf(request, true)
      const job = await jobs.submit(endpoint, jsonBody(request), false)
      return { id: job.id, status: job.status }
    },
  )

  app.post(
    '/:endpointId/runsync',
    {
      schema: {
        tags,
        operationId: 'runJobSync',
        summary: 'Queue a job and wait for it up to ?wait= ms',
        params: EndpointParams,
      },
    },
    async (request: EndpointReq) => {
      const wait = intQuery(request, 'wait', SYNC_WAIT)
      const endpoint = await endpointOf(request, true)
      const submitted = await jobs.submit(endpoint, jsonBody(request), true)
      const job = await jobs.waitForEnd(endpoint.id, submitted.id, wait)
      return job.status === 'IN_QUEUE' || job.status === 'IN_PROGRESS'
        ? { id: job.id, status: job.status }
        : jobBody(job, now())
    },
  )

  const status = async (request: JobReq) => {
    const endpoint = await endpointOf(request, false)
    return jobBody(await jobs.get(endpoint.id, request.params.jobId), now())
  }
  for (const method of ['GET', 'POST'] as const) {
    app.route({
      method,
      url: '/:endpointId/status/:jobId',
      schema: {
        tags,
        operationId: method === 'GET' ? 'getJobStatus' : 'postJobStatus',
        summary: 'Status, timings and output of a job',
        params: JobParams,
      },
      handler: status,
    })
  }

  app.get(
    '/:endpointId/status-sync/:jobId',
    {
      schema: {
        tags,
        operationId: 'getJobStatusSync',
        summary: 'Status of a job, waiting up to ?wait= ms for it to finish',
        params: JobParams,
      },
    },
    async (request: JobReq) => {
      const wait = intQuery(request, 'wait', SYNC_WAIT)
      const endpoint = await endpointOf(request, false)
      return jobBody(await jobs.waitForEnd(endpoint.id, request.params.jobId, wait), now())
    },
  )

  const stream = async (request: JobReq) => {
    const endpoint = await endpointOf(request, false)
    const read = await jobs.readStream(endpoint.id, request.params.jobId, STREAM_WAIT_MS)
    return { status: read.status, stream: read.chunks.map((c) => ({ output: c.output })) }
  }
  for (const method of ['GET', 'POST'] as const) {
    app.route({
      method,
      url: '/:endpointId/stream/:jobId',
      schema: {
        tags,
        operationId: method === 'GET' ? 'getJobStream' : 'postJobStream',
        summary: 'Stream chunks not yet delivered',
        params: JobParams,
      },
      handler: stream,
    })
  }

  app.post(
    '/:endpointId/cancel/:jobId',
    { schema: { tags, operationId: 'cancelJob', summary: 'Cancel a job', params: JobParams } },
    async (request: JobReq) => {
      jsonBody(request)
      const endpoint = await endpointOf(request, true)
      return jobBody(await jobs.cancel(endpoint.id, request.params.jobId), now())
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
      },
    },
    async (request: EndpointReq) => {
      jsonBody(request)
      const endpoint = await endpointOf(request, true)
      return { removed: await jobs.purgeQueue(endpoint.id), status: 'completed' }
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
      },
    },
    async (request: EndpointReq) => {
      const endpoint = await endpointOf(request, false)
      return jobs.health(endpoint.id)
    },
  )

  app.get(
    '/:endpointId/requests',
    {
      schema: {
        tags,
        operationId: 'listJobRequests',
        summary: 'The endpoint jobs, newest first, paged',
        params: EndpointParams,
      },
    },
    async (request: EndpointReq) => {
      const page = intQuery(request, 'page', { min: 1, max: 1_000_000, default: 1 })
      const pageSize = intQuery(request, 'pageSize', { min: 1, max: 500, default: 50 })
      const endpoint = await endpointOf(request, false)
      const result = await jobs.requests(endpoint.id, page, pageSize)
      const at = now()
      return {
        requests: result.jobs.map((job) => requestLine(job, at)),
        page: result.page,
        pageSize: result.pageSize,
        total: result.total,
      }
    },
  )
}
