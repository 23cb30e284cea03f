import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply } from 'fastify'
import type { WorkerService } from '../../domain/serverless/worker-service.js'
import { principalOf } from '../http/authentication.js'
import { logSourcesOf, sendLogStream } from './log-stream.js'
import { LogEvents } from '../openapi/documented-schemas.js'
import { ProblemSchema } from './problem-schema.js'

const WorkerStatusSchema = Type.Union(
  ['RUNNING', 'IDLE', 'INITIALIZING', 'THROTTLED', 'UNHEALTHY'].map((s) => Type.Literal(s)),
)

/** `startBackoff` of the workers list (ours; `/health` has the same). */
const StartBackoffSchema = Type.Object(
  {
    failures: Type.Integer({
      description: 'workers that failed in a row since the last healthy start',
    }),
    lastFailure: Type.Object({
      workerId: Type.String(),
      reason: Type.String({ description: 'e.g. exited with code 1 before asking for a job' }),
      at: Type.String({ format: 'date-time' }),
      lastLines: Type.Array(Type.String(), {
        description:
          "the failed worker's last lines of output (at most 20, each cut at 500 characters), oldest first; empty when it wrote none. Its logs route has them all",
      }),
    }),
    nextStartAt: Type.String({
      format: 'date-time',
      description: 'no worker of the endpoint starts before this',
    }),
  },
  {
    description:
      "only while the endpoint's workers fail in a row: how many, the last failure, and when the next worker starts",
  },
)

export const WorkerListSchema = Type.Object({
  endpointVersion: Type.Integer(),
  summary: Type.Object({
    running: Type.Integer(),
    idle: Type.Integer(),
    initializing: Type.Integer(),
    throttled: Type.Integer(),
    unhealthy: Type.Integer(),
    total: Type.Integer(),
  }),
  workers: Type.Array(
    Type.Object({
      id: Type.String(),
      status: WorkerStatusSchema,
      isStale: Type.Boolean({ description: 'started from an older endpoint version; it drains' }),
      version: Type.Integer(),
      gpuCount: Type.Integer(),
      image: Type.String(),
      uptimeSeconds: Type.Integer(),
      gpuTypeId: Type.Union([Type.String(), Type.Null()]),
      dataCenterId: Type.Union([Type.String(), Type.Null()]),
      startedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
      reason: Type.Union([Type.String(), Type.Null()], {
        description: 'why it is THROTTLED or UNHEALTHY',
      }),
    }),
  ),
  startBackoff: Type.Optional(StartBackoffSchema),
})

const EndpointParams = Type.Object({ id: Type.String({ minLength: 1 }) })
const WorkerParams = Type.Object({
  id: Type.String({ minLength: 1 }),
  workerId: Type.String({ minLength: 1 }),
})
const WorkerLogsQuery = Type.Object({
  source: Type.Optional(
    Type.Union([Type.Literal('container'), Type.Literal('system')], {
      description: 'one source; leave it out for both',
    }),
  ),
  tail: Type.Optional(Type.Integer({ minimum: 0, maximum: 5000, default: 100 })),
  since: Type.Optional(Type.String({ format: 'date-time' })),
  follow: Type.Optional(
    Type.Boolean({ default: true, description: 'keep the stream open for new lines' }),
  ),
})
const errors = { 401: ProblemSchema, 403: ProblemSchema, 404: ProblemSchema, 429: ProblemSchema }
const tags = ['Serverless']

/** The workers the platform runs for an endpoint, and their output (docs/serverless-workers.md). */
export async function workerListRoutes(
  app: FastifyInstance,
  { workers }: { workers: WorkerService },
): Promise<void> {
  app.get<{ Params: Static<typeof EndpointParams> }>(
    '/serverless/:id/workers',
    {
      schema: {
        tags,
        operationId: 'listEndpointWorkers',
        summary: "The endpoint's workers with their status and version",
        params: EndpointParams,
        response: { 200: WorkerListSchema, ...errors },
      },
    },
    async (request) => workers.list(principalOf(request).accountId, request.params.id),
  )

  app.get<{ Params: Static<typeof WorkerParams>; Querystring: Static<typeof WorkerLogsQuery> }>(
    '/serverless/:id/workers/:workerId/logs',
    {
      schema: {
        tags,
        operationId: 'getWorkerLogs',
        summary: "A worker's output and system logs as server-sent events",
        description:
          'Server-sent events: `container` (the worker output) and `system` (what the platform did with it), both when `source` is left out; `id: <ts>/<seq>` (both: `<ts>/<containerSeq>.<systemSeq>`), `data: {"ts","source","line"}`; resume with Last-Event-ID.',
        params: WorkerParams,
        querystring: WorkerLogsQuery,
        response: { ...errors, 422: ProblemSchema },
        documented: { response: { 200: LogEvents } },
      },
    },
    async (request, reply: FastifyReply) => {
      const worker = await workers.get(
        principalOf(request).accountId,
        request.params.id,
        request.params.workerId,
      )
      await sendLogStream(
        request,
        reply,
        request.query,
        logSourcesOf(request.query.source).map((source) => ({
          source,
          read: (query) => workers.readLogs(worker, source, query),
          follow: (afterSeq, signal) => workers.followLogs(worker, source, afterSeq, signal),
        })),
      )
    },
  )
}
