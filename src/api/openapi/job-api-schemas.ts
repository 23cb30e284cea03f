import { Type } from '@sinclair/typebox'
import {
  DEFAULT_EXECUTION_TIMEOUT_MS,
  DEFAULT_TTL_MS,
  JOB_STATUSES,
  MAX_EXECUTION_TIMEOUT_MS,
  MAX_TTL_MS,
  MIN_EXECUTION_TIMEOUT_MS,
  MIN_TTL_MS,
} from '../../domain/serverless/job.js'

/**
 * What the OpenAPI document shows of the job API and the public models' job routes. Their
 * handlers read the body as text and check it themselves (src/api/jobs/http-support.ts:
 * runpod-python's worker posts JSON labelled as a form), so these schemas document the wire
 * and validate nothing; test/api/openapi-document.test.ts checks real answers against them.
 */

const JobStatus = Type.Union(
  JOB_STATUSES.map((s) => Type.Literal(s)),
  { description: 'IN_QUEUE, IN_PROGRESS, then one of the terminal statuses' },
)
const Anything = (description: string) => Type.Unknown({ description })

export const JobPolicy = Type.Object(
  {
    executionTimeout: Type.Optional(
      Type.Integer({
        minimum: MIN_EXECUTION_TIMEOUT_MS,
        maximum: MAX_EXECUTION_TIMEOUT_MS,
        description: `ms the job may run once taken (default the endpoint's, else ${DEFAULT_EXECUTION_TIMEOUT_MS})`,
      }),
    ),
    ttl: Type.Optional(
      Type.Integer({
        minimum: MIN_TTL_MS,
        maximum: MAX_TTL_MS,
        description: `ms the job lives from submission, queued or running (default ${DEFAULT_TTL_MS})`,
      }),
    ),
    lowPriority: Type.Optional(
      Type.Boolean({ description: 'taken only when no other job is waiting; never scales up' }),
    ),
  },
  { title: 'JobPolicy' },
)

export const S3Config = Type.Object(
  {
    accessId: Type.String(),
    accessSecret: Type.String(),
    bucketName: Type.String(),
    endpointUrl: Type.String(),
    objectPath: Type.Optional(Type.String()),
  },
  {
    title: 'S3Config',
    description: 'handed to the worker with the job, never shown by /status',
  },
)

export const JobSubmission = Type.Object(
  {
    input: Type.Record(Type.String(), Type.Unknown(), {
      description: "the worker handler's input: any JSON object",
      examples: [{ prompt: 'a lighthouse at dusk' }],
    }),
    webhook: Type.Optional(
      Type.String({
        format: 'uri',
        description: 'POSTed the /status body once the job ends (retried twice, 10 s apart)',
      }),
    ),
    policy: Type.Optional(JobPolicy),
    s3Config: Type.Optional(S3Config),
  },
  { title: 'JobSubmission', examples: [{ input: { prompt: 'a lighthouse at dusk' } }] },
)

export const QueuedJob = Type.Object(
  {
    id: Type.String({ examples: ['0193d3f2-6b1e-7c3a-9f4e-2a6c1b8d5e70'] }),
    status: JobStatus,
  },
  { title: 'QueuedJob' },
)

export const Job = Type.Object(
  {
    id: Type.String({
      description: '`sync-` prefixed for /runsync and OpenAI-route jobs',
      examples: ['sync-0193d3f2-6b1e-7c3a-9f4e-2a6c1b8d5e70'],
    }),
    status: JobStatus,
    delayTime: Type.Integer({ minimum: 0, description: 'ms from submission to start (or now)' }),
    executionTime: Type.Integer({ minimum: 0, description: 'ms from start to end (or now)' }),
    output: Type.Optional(Anything("the handler's output (COMPLETED) or its last progress")),
    error: Type.Optional(Type.String({ description: 'why the job FAILED' })),
    workerId: Type.Optional(Type.String()),
  },
  { title: 'Job' },
)

export const JobStream = Type.Object(
  {
    status: JobStatus,
    stream: Type.Array(Type.Object({ output: Anything('one chunk the handler yielded') }), {
      description: 'the chunks not yet delivered to any /stream caller, oldest first',
    }),
  },
  { title: 'JobStream' },
)

const count = (description: string) => Type.Integer({ minimum: 0, description })

export const EndpointHealth = Type.Object(
  {
    jobs: Type.Object({
      completed: count('COMPLETED jobs still retained'),
      failed: count('FAILED and TIMED_OUT jobs still retained'),
      inProgress: count('jobs a worker runs now'),
      inQueue: count('jobs waiting for a worker'),
      retried: count('retained jobs that were retried at least once'),
    }),
    workers: Type.Object({
      idle: count('workers waiting for a job'),
      initializing: count('workers starting'),
      ready: count('workers ready'),
      running: count('workers running a job'),
      throttled: count('workers that cannot start for lack of capacity'),
      unhealthy: count('workers that failed their health check'),
    }),
    startBackoff: Type.Optional(
      Type.Object(
        {
          failures: count('workers that failed in a row since the last healthy start'),
          lastFailure: Type.Object({
            workerId: Type.String(),
            reason: Type.String({ description: "the worker's reason in the workers list" }),
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
        { description: 'present while worker starts are backed off after failures in a row' },
      ),
    ),
  },
  { title: 'EndpointHealth' },
)

export const JobRequests = Type.Object(
  {
    requests: Type.Array(
      Type.Object({
        id: Type.String(),
        status: JobStatus,
        delayTime: Type.Integer({ minimum: 0 }),
        executionTime: Type.Integer({ minimum: 0 }),
        workerId: Type.Optional(Type.String()),
        createdAt: Type.String({ format: 'date-time' }),
        completedAt: Type.Optional(Type.String({ format: 'date-time' })),
        attempts: Type.Integer({ minimum: 0 }),
        retries: Type.Integer({ minimum: 0 }),
      }),
    ),
    page: Type.Integer({ minimum: 1 }),
    pageSize: Type.Integer({ minimum: 1 }),
    total: Type.Integer({ minimum: 0 }),
  },
  { title: 'JobRequests' },
)

export const PurgeQueueResult = Type.Object(
  {
    removed: Type.Integer({ minimum: 0, description: 'queued jobs deleted' }),
    status: Type.Literal('completed'),
  },
  { title: 'PurgeQueueResult' },
)

/** `?wait=` of /runsync and /status-sync. */
export const SyncWaitQuery = Type.Object({
  wait: Type.Optional(
    Type.Integer({
      minimum: 1_000,
      maximum: 300_000,
      default: 90_000,
      description: 'ms to wait for the job to end before answering its id and status',
    }),
  ),
})

export const RequestsQuery = Type.Object({
  page: Type.Optional(Type.Integer({ minimum: 1, default: 1 })),
  pageSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
})

/** OpenAI's request and answer bodies, passed through to and from the worker as they are. */
export const OpenAIRequest = Type.Object(
  {
    model: Type.String({ examples: ['podyard-reference-text'] }),
    messages: Type.Optional(
      Type.Array(Type.Object({ role: Type.String(), content: Type.Unknown() })),
    ),
    prompt: Type.Optional(Type.Unknown()),
    stream: Type.Optional(
      Type.Boolean({ description: 'answer server-sent events (text/event-stream)' }),
    ),
  },
  {
    title: 'OpenAIRequest',
    additionalProperties: true,
    examples: [
      { model: 'podyard-reference-text', messages: [{ role: 'user', content: 'Say hello' }] },
    ],
  },
)

export const OpenAIResponse = Type.Object(
  {},
  {
    title: 'OpenAIResponse',
    additionalProperties: true,
    description: "OpenAI's answer shape (chat.completion, text_completion or list)",
  },
)

export const OpenAIError = Type.Object(
  {
    error: Type.Object({
      message: Type.String(),
      type: Type.String(),
      param: Type.Union([Type.String(), Type.Null()]),
      code: Type.Union([Type.String(), Type.Null()]),
    }),
  },
  { title: 'OpenAIError' },
)

// ---- worker protocol ----

export const WorkerJob = Type.Object(
  {
    id: Type.String(),
    input: Type.Unknown(),
    webhook: Type.Optional(Type.String()),
    s3Config: Type.Optional(S3Config),
    traceparent: Type.Optional(
      Type.String({
        description:
          'podyard only, when the server traces: the W3C traceparent of the request that queued the job, for the worker\'s own spans (docs/job-api.md, "Tracing a job")',
        examples: ['00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'],
      }),
    ),
  },
  { title: 'WorkerJob' },
)

export const JobDoneReport = Type.Object(
  {
    output: Type.Optional(Anything("the handler's result")),
    error: Type.Optional(
      Type.Unknown({ description: 'present when the handler failed (a string, or JSON kept)' }),
    ),
    status: Type.Optional(
      Type.Literal('IN_PROGRESS', { description: 'a progress update, not the end of the job' }),
    ),
    stopPod: Type.Optional(Type.Boolean({ description: 'stop this worker after the job' })),
  },
  { title: 'JobDoneReport', additionalProperties: true },
)

export const WorkerWriteAnswer = Type.Object(
  {
    status: Type.Union([Type.Literal('ok'), Type.Literal('ignored')]),
    reason: Type.Optional(
      Type.String({ description: 'why a late or stale report was not recorded' }),
    ),
  },
  { title: 'WorkerWriteAnswer' },
)

export const JobDoneBatchAnswer = Type.Object(
  {
    results: Type.Array(
      Type.Object({
        id: Type.String(),
        status: Type.Union([Type.Literal('ok'), Type.Literal('ignored')]),
        reason: Type.Optional(Type.String()),
      }),
    ),
  },
  { title: 'JobDoneBatchAnswer' },
)

export const JobStreamChunk = Type.Object(
  { output: Anything('one chunk') },
  { title: 'JobStreamChunk' },
)

export const JobStopList = Type.Object(
  { jobsToStop: Type.Array(Type.String(), { description: 'jobs the worker must abandon now' }) },
  { title: 'JobStopList' },
)

export const PingAnswer = Type.Object(
  {
    status: Type.Literal('ok'),
    renewed: Type.Array(Type.String(), { description: 'the jobs whose leases were renewed' }),
    leaseMs: Type.Integer({ minimum: 1, description: 'how long a lease lasts unrenewed' }),
  },
  { title: 'PingAnswer' },
)

export const WorkerTakeQuery = Type.Object({
  wait: Type.Optional(
    Type.Integer({ minimum: 0, maximum: 60_000, default: 20_000, description: 'ms to long-poll' }),
  ),
  job_in_progress: Type.Optional(
    Type.Union([Type.Literal('0'), Type.Literal('1')], {
      description: '1 renews the leases of the jobs the worker holds; 0 says it holds none',
    }),
  ),
  gpu: Type.Optional(Type.String()),
})
