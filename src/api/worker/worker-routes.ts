import { linkRequestSpan } from '../http/trace-context.js'
import { Type } from '@sinclair/typebox'
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  FastifySchema,
  RouteShorthandOptions,
} from 'fastify'
import type { AccountService } from '../../domain/accounts/account-service.js'
import type { Job } from '../../domain/serverless/job.js'
import { parseDoneReport, type DoneReport } from '../../domain/serverless/job-requests.js'
import type { JobService } from '../../domain/serverless/job-service.js'
import { isWorkerKey, type WorkerKeyService } from '../../domain/serverless/worker-keys.js'
import type { CompleteResult, WorkerWriteResult } from '../../domain/serverless/ports.js'
import { AppError } from '../../shared/app-error.js'
import { cutDeepJson, jsonDeeperThan, MAX_JSON_DEPTH } from '../../shared/json-depth.js'
import { authenticate, presentedKey } from '../http/authentication.js'
import {
  acceptAnyBodyAsText,
  intQuery,
  jsonBody,
  perJobRouteLogging,
  refuseReservedSegments,
  stringQuery,
} from '../jobs/http-support.js'
import {
  JobDoneBatchAnswer,
  JobDoneReport,
  JobStopList,
  JobStreamChunk,
  PingAnswer,
  WorkerJob,
  WorkerTakeQuery,
  WorkerWriteAnswer,
} from '../openapi/job-api-schemas.js'
import type { DocumentedSchemas } from '../openapi/documented-schemas.js'
import { ProblemSchema } from '../rest/problem-schema.js'

const WorkerParams = Type.Object({
  endpointId: Type.String({ examples: ['k3x9m2p7q8w4zd'] }),
  workerId: Type.String({ description: "the worker's own id (RUNPOD_POD_ID)" }),
})
// The same workerId as WorkerParams': one parameter in the document, not two of one name.
const WorkerJobParams = Type.Object({
  ...WorkerParams.properties,
  jobId: Type.String(),
})
const NoJob = Type.Null({ description: 'nothing within the wait' })
const WorkerWaitQuery = Type.Object({ wait: WorkerTakeQuery.properties.wait })
const WorkerTakeBatchQuery = Type.Object({
  ...WorkerTakeQuery.properties,
  batch_size: Type.Optional(Type.Integer({ minimum: 1, default: 1, description: 'at most 100' })),
})
const PingQuery = Type.Object({
  job_id: Type.Optional(Type.String({ description: 'the jobs the worker runs, comma-separated' })),
  status: Type.Optional(Type.Literal('unhealthy')),
  check: Type.Optional(Type.String()),
  reason: Type.Optional(Type.String({ maxLength: 256 })),
})
const workerProblems = {
  400: ProblemSchema,
  401: ProblemSchema,
  403: ProblemSchema,
  404: ProblemSchema,
}

export interface WorkerRoutesDeps {
  accounts: AccountService
  jobs: JobService
  workerKeys: WorkerKeyService
}

/**
 * Long-poll of job-take and job-stop when nothing is there, well under runpod-python's 90 s
 * fetch timeout. A worker URL may carry `wait=<ms>` (0 to 60 000) to choose another; the stop
 * channel keeps the take URL's query, so one setting serves both.
 */
export const WORKER_WAIT = { min: 0, max: 60_000, default: 20_000 }
/** The job-stream query parameter numbering a run's chunks (podyard only; docs/job-api.md). */
export const CHUNK_INDEX = 'chunk_index'
/** Largest batch one job-take-batch hands out (worker-vllm asks for up to its concurrency, 30). */
export const MAX_BATCH_SIZE = 100

type WorkerReq = FastifyRequest<{ Params: { endpointId: string; workerId: string } }>

type WorkerJobReq = FastifyRequest<{
  Params: { endpointId: string; workerId: string; jobId: string }
}>

/**
 * Aborted when the client hangs up before its answer is sent (a worker stopping mid long poll),
 * including before the handler ran (during authentication).
 */
function hangUpSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController()
  if (reply.raw.destroyed) controller.abort()
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort()
  })
  return controller.signal
}

/**
 * A take's answer header (podyard's): how many ms after the take arrived the leases of the jobs
 * it hands out end. podyard/worker gives a run up before then unless a heartbeat renewed it,
 * even when no heartbeat was ever answered (docs/worker-sdk.md, "Fencing").
 */
export const LEASE_END_HEADER = 'podyard-lease-ends-after-ms'

function sayLeaseEnd(reply: FastifyReply, leaseEndsAfterMs: number | undefined): void {
  if (leaseEndsAfterMs !== undefined) reply.header(LEASE_END_HEADER, String(leaseEndsAfterMs))
}

/** The worker's view of a job (wire-compat §5.4): only these keys reach the handler. */
function workerJob(job: Job) {
  return {
    id: job.id,
    input: job.input,
    ...(job.webhook !== undefined ? { webhook: job.webhook } : {}),
    ...(job.s3Config !== undefined ? { s3Config: job.s3Config } : {}),
    // The queuing request's span: the worker's own spans can join its trace.
    ...(job.trace !== undefined ? { traceparent: job.trace.traceparent } : {}),
  }
}

/** A job-done-batch body: an array of job-done bodies, each with its job's `id`; else 400. */
function doneBatch(body: unknown): Array<{ id: string; report: DoneReport }> {
  const problem = (detail: string) =>
    new AppError('MALFORMED_REQUEST', `a job-done-batch post is ${DONE_BATCH_SHAPE}: ${detail}`, {
      errors: [detail],
    })
  if (!Array.isArray(body)) throw problem('body: must be an array')
  if (body.length > MAX_BATCH_SIZE) throw problem(`body: at most ${MAX_BATCH_SIZE} results`)
  const ids = new Set<string>()
  return body.map((item, i) => {
    if (!isObject(item) || typeof item.id !== 'string' || item.id === '') {
      throw problem(`body[${i}].id: required, a job id`)
    }
    if (ids.has(item.id)) throw problem(`body[${i}].id: ${item.id} appears twice`)
    ids.add(item.id)
    return { id: item.id, report: parseDoneReport(item) }
  })
}

/** A body the depth scan has already cut down to MAX_JSON_DEPTH, parsed; 400 when not JSON. */
function parseJsonText(text: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch (error) {
    throw new AppError(
      'MALFORMED_REQUEST',
      `the body is not valid JSON: ${(error as Error).message}`,
    )
  }
}

/** The job error of a result nested too deep to store; the caller reads it at /status. */
export const TOO_DEEP_JOB_ERROR = `the worker's result is nested deeper than ${MAX_JSON_DEPTH} levels (the limit is ${MAX_JSON_DEPTH}) and was not stored`

/**
 * Ends a job whose result is nested too deep as FAILED with TOO_DEEP_JOB_ERROR: left running,
 * it would run again once its lease ran out, and fail the same way.
 */
async function failTooDeep(
  jobs: JobService,
  endpointId: string,
  workerId: string,
  jobId: string,
): Promise<WorkerWriteResult | CompleteResult> {
  return jobs.reportDone(endpointId, workerId, jobId, {
    kind: 'finished',
    error: TOO_DEEP_JOB_ERROR,
    stopPod: false,
  })
}

function tooDeepLine(jobId: string, outcome: WorkerWriteResult | CompleteResult): string {
  const what = `the result of job ${jobId} is nested deeper than ${MAX_JSON_DEPTH} levels; the limit is ${MAX_JSON_DEPTH}`
  return outcome.applied
    ? `${what}: the job was ended FAILED with that error`
    : `${what}: it was not recorded (${outcome.reason})`
}

const DONE_BATCH_SHAPE = '[{"id": <job id>, ...the job-done body}, ...]'

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * Who may call the worker routes of `endpointId` (docs/job-api.md, "Worker keys"): the
 * endpoint's worker key (401 when rotated or malformed, 403 when it is another endpoint's), or
 * an API key of the endpoint's account that may write to it (401, 404, 403 as for the job API).
 * Resolves to the endpoint's id.
 */
async function authorizeWorker(
  deps: WorkerRoutesDeps,
  request: FastifyRequest,
  endpointId: string,
): Promise<string> {
  const key = presentedKey(request, 'bearer-or-raw')
  if (typeof key === 'string' && isWorkerKey(key)) {
    const check = await deps.workerKeys.check(key, endpointId)
    if (check.ok) return check.endpointId
    throw new AppError(
      check.reason === 'other-endpoint' ? 'FORBIDDEN' : 'UNAUTHENTICATED',
      check.detail,
    )
  }
  const principal = await authenticate(deps.accounts, request, 'bearer-or-raw')
  return (await deps.jobs.endpointFor(principal, endpointId, true)).id
}

/**
 * The worker protocol runpod-python's `runpod.serverless.start` speaks (wire-compat §5;
 * docs/job-api.md). Workers send the key raw in `Authorization`; Bearer is accepted too.
 * In the OpenAPI document under its own tag: it is for workers, not API users.
 */
export async function workerRoutes(app: FastifyInstance, deps: WorkerRoutesDeps): Promise<void> {
  const { jobs } = deps
  acceptAnyBodyAsText(app)
  // The endpoint each request was authorized for (set by the onRequest hook below).
  const authorized = new WeakMap<FastifyRequest, string>()
  app.addHook('onRequest', async (request) => {
    await refuseReservedSegments(request)
    const { endpointId } = request.params as { endpointId?: string }
    if (endpointId === undefined) return
    authorized.set(request, await authorizeWorker(deps, request, endpointId))
  })
  const endpointOf = async (request: WorkerReq) => {
    const endpointId = authorized.get(request)
    if (endpointId === undefined) throw new Error(`worker route ${request.url} was not authorized`)
    return endpointId
  }
  const perJob = perJobRouteLogging(app)
  /** Each route's part of the OpenAPI document (tag Worker protocol); nothing is validated. */
  const options = (
    operationId: string,
    summary: string,
    params: typeof WorkerParams | typeof WorkerJobParams,
    documented: DocumentedSchemas,
  ): Pick<RouteShorthandOptions, 'childLoggerFactory'> & { schema: FastifySchema } => ({
    schema: {
      tags: ['Worker protocol'],
      operationId,
      summary,
      security: [{ workerKey: [] as string[] }, { bearer: [] as string[] }],
      // Params too: validating them would be a step of every worker request for nothing.
      documented: {
        ...documented,
        params,
        response: { ...documented.response, ...workerProblems },
      },
    },
    ...perJob,
  })
  const jobInProgress = (request: FastifyRequest) => stringQuery(request, 'job_in_progress') === '1'

  app.get(
    '/:endpointId/job-take/:workerId',
    options('takeJob', 'Take the next job, long-polling up to ?wait= ms', WorkerParams, {
      querystring: WorkerTakeQuery,
      response: { 200: WorkerJob, 204: NoJob },
    }),
    async (request: WorkerReq, reply) => {
      const arrivedAt = jobs.nowMs()
      const waitMs = intQuery(request, 'wait', WORKER_WAIT)
      const endpointId = await endpointOf(request)
      const [job] = await jobs.take(endpointId, request.params.workerId, {
        max: 1,
        waitMs,
        jobInProgress: jobInProgress(request),
        signal: hangUpSignal(reply),
      })
      if (job === undefined) return reply.code(204).send()
      sayLeaseEnd(reply, jobs.leaseEndsAfterMs([job], arrivedAt))
      if (job.trace) linkRequestSpan(request, job.trace.traceparent)
      return workerJob(job)
    },
  )

  app.get(
    '/:endpointId/job-take-batch/:workerId',
    options('takeJobBatch', 'Take up to ?batch_size= jobs at once', WorkerParams, {
      querystring: WorkerTakeBatchQuery,
      response: { 200: Type.Array(WorkerJob), 204: NoJob },
    }),
    async (request: WorkerReq, reply) => {
      const arrivedAt = jobs.nowMs()
      const waitMs = intQuery(request, 'wait', WORKER_WAIT)
      const batchSize = intQuery(request, 'batch_size', {
        min: 1,
        max: Number.MAX_SAFE_INTEGER,
        default: 1,
      })
      const endpointId = await endpointOf(request)
      const taken = await jobs.take(endpointId, request.params.workerId, {
        max: Math.min(batchSize, MAX_BATCH_SIZE),
        waitMs,
        jobInProgress: jobInProgress(request),
        signal: hangUpSignal(reply),
      })
      if (taken.length === 0) return reply.code(204).send()
      sayLeaseEnd(reply, jobs.leaseEndsAfterMs(taken, arrivedAt))
      for (const job of taken) if (job.trace) linkRequestSpan(request, job.trace.traceparent)
      return taken.map(workerJob)
    },
  )

  app.post(
    '/:endpointId/job-done/:workerId/:jobId',
    options('reportJobDone', "A job's result, error or progress", WorkerJobParams, {
      body: JobDoneReport,
      response: { 200: WorkerWriteAnswer },
    }),
    async (request: WorkerJobReq) => {
      const endpointId = await endpointOf(request)
      const { workerId, jobId } = request.params
      const text = typeof request.body === 'string' ? request.body : ''
      if (jsonDeeperThan(text)) {
        const outcome = await failTooDeep(jobs, endpointId, workerId, jobId)
        const problem = `body: ${tooDeepLine(jobId, outcome)}`
        throw new AppError('MALFORMED_REQUEST', `the result is not valid: ${problem}`, {
          errors: [problem],
        })
      }
      const report = parseDoneReport(jsonBody(request))
      const result = await jobs.reportDone(endpointId, workerId, jobId, report)
      // A late or stale report is answered 200 all the same: the worker would only retry it.
      return result.applied ? { status: 'ok' } : { status: 'ignored', reason: result.reason }
    },
  )

  // podyard's own worker SDK: the results of several jobs in one post (docs/job-api.md,
  // "Worker protocol"). Each item is a job-done body with the job's `id`; a request per job was
  // half of the server's requests at high throughput (bench/README.md).
  app.post(
    '/:endpointId/job-done-batch/:workerId',
    options('reportJobsDone', 'The results of several jobs in one post', WorkerParams, {
      body: Type.Array(Type.Intersect([Type.Object({ id: Type.String() }), JobDoneReport])),
      response: { 200: JobDoneBatchAnswer },
    }),
    async (request: WorkerReq) => {
      const endpointId = await endpointOf(request)
      const { workerId } = request.params
      // Results nested too deep are cut out before parsing, so that their jobs can be named
      // and failed while the other results of the post are recorded.
      const cut = cutDeepJson(typeof request.body === 'string' ? request.body : '')
      const items = doneBatch(cut.cut ? parseJsonText(cut.text) : jsonBody(request))
      const tooDeep = new Set(cut.cutItems)
      const results = await Promise.all(
        items.map(async ({ id, report }, i) => {
          if (tooDeep.has(i)) {
            return { id, outcome: await failTooDeep(jobs, endpointId, workerId, id) }
          }
          const result = await jobs.reportDone(endpointId, workerId, id, report)
          return result.applied
            ? { id, status: 'ok' }
            : { id, status: 'ignored', reason: result.reason }
        }),
      )
      if (tooDeep.size === 0) return { results }
      const problems = results.flatMap((result, i) =>
        'outcome' in result && result.outcome !== undefined
          ? [`body[${i}]: ${tooDeepLine(result.id, result.outcome)}`]
          : [],
      )
      throw new AppError(
        'MALFORMED_REQUEST',
        `${problems.length} of the ${items.length} results are not valid (the others were recorded): ${problems.join('; ')}`,
        { errors: problems },
      )
    },
  )

  app.post(
    '/:endpointId/job-stream/:workerId/:jobId',
    options('streamJobOutput', 'One chunk of a streaming job', WorkerJobParams, {
      body: JobStreamChunk,
      response: { 200: WorkerWriteAnswer },
    }),
    async (request: WorkerJobReq) => {
      const endpointId = await endpointOf(request)
      const body = jsonBody(request)
      if (!isObject(body) || !('output' in body)) {
        throw new AppError('MALFORMED_REQUEST', 'a stream post is {"output": <chunk>}', {
          errors: ['body.output: required'],
        })
      }
      // podyard's worker SDK numbers a run's chunks, so that one sent again is appended once.
      const chunkIndex = intQuery(request, CHUNK_INDEX, {
        min: 0,
        max: Number.MAX_SAFE_INTEGER,
        default: -1,
      })
      const result = await jobs.appendStream(
        endpointId,
        request.params.workerId,
        request.params.jobId,
        body.output,
        chunkIndex < 0 ? undefined : chunkIndex,
      )
      return result.applied ? { status: 'ok' } : { status: 'ignored', reason: result.reason }
    },
  )

  app.get(
    '/:endpointId/job-stop/:workerId',
    options(
      'jobsToStop',
      'The jobs to abandon (cancelled, timed out), long-polling',
      WorkerParams,
      {
        querystring: WorkerWaitQuery,
        response: { 200: JobStopList, 204: NoJob },
      },
    ),
    async (request: WorkerReq, reply) => {
      const waitMs = intQuery(request, 'wait', WORKER_WAIT)
      const endpointId = await endpointOf(request)
      const jobsToStop = await jobs.stops(
        endpointId,
        request.params.workerId,
        waitMs,
        hangUpSignal(reply),
      )
      if (jobsToStop.length === 0) return reply.code(204).send()
      return { jobsToStop }
    },
  )

  app.get(
    '/:endpointId/ping/:workerId',
    options('pingWorker', "The worker's heartbeat: renews the leases of ?job_id=", WorkerParams, {
      querystring: PingQuery,
      response: { 200: PingAnswer },
    }),
    async (request: WorkerReq) => {
      const endpointId = await endpointOf(request)
      const jobIds = (stringQuery(request, 'job_id') ?? '')
        .split(',')
        .map((id) => id.trim())
        .filter((id) => id !== '')
      const unhealthy =
        stringQuery(request, 'status') === 'unhealthy'
          ? {
              check: stringQuery(request, 'check') ?? '',
              reason: (stringQuery(request, 'reason') ?? '').slice(0, 256),
            }
          : undefined
      const renewed = await jobs.ping(endpointId, request.params.workerId, {
        jobIds,
        ...(unhealthy ? { unhealthy } : {}),
      })
      // `leaseMs` (podyard's): how long a lease lasts unrenewed; podyard/worker gives up a run it
      // could not renew for that long (docs/worker-sdk.md, "Fencing"). runpod-python ignores it.
      return { status: 'ok', renewed, leaseMs: jobs.leaseMs }
    },
  )
}
