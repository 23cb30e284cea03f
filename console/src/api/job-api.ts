import type { Answer, Described } from './types'
import { routeOf, type RawApi } from './raw-api'

/*
 * The job API (docs/job-api.md). Its routes are in the OpenAPI document without schemas so
 * far; the shapes below are the documented ones and give way to the document's own as soon as
 * it describes them (`Described`).
 */

export type JobStatus =
  'IN_QUEUE' | 'IN_PROGRESS' | 'COMPLETED' | 'FAILED' | 'CANCELLED' | 'TIMED_OUT'

export const FINISHED: ReadonlySet<string> = new Set([
  'COMPLETED',
  'FAILED',
  'CANCELLED',
  'TIMED_OUT',
])

interface DocumentedJob {
  id: string
  status: JobStatus
  delayTime?: number
  executionTime?: number
  output?: unknown
  error?: string
  workerId?: string
}

interface DocumentedStream {
  status: JobStatus
  stream: Array<{ output: unknown }>
}

interface DocumentedHealth {
  jobs: { completed: number; failed: number; inProgress: number; inQueue: number; retried: number }
  workers: {
    idle: number
    running: number
    ready?: number
    initializing?: number
    throttled?: number
    unhealthy?: number
  }
  startBackoff?: {
    failures: number
    lastFailure?: { reason: string; lastLines?: string[] }
    nextStartAt: string
  }
}

interface DocumentedRequests {
  requests: Array<{
    id: string
    status: JobStatus
    delayTime: number
    executionTime: number
    workerId?: string
    createdAt: string
    completedAt?: string
    attempts: number
    retries: number
  }>
  page: number
  pageSize: number
  total: number
}

export type JobView = Described<Answer<'/v2/{endpointId}/status/{jobId}', 'get'>, DocumentedJob>
export type JobStream = Described<
  Answer<'/v2/{endpointId}/stream/{jobId}', 'get'>,
  DocumentedStream
>
export type EndpointHealth = Described<Answer<'/v2/{endpointId}/health', 'get'>, DocumentedHealth>
export type JobRequests = Described<Answer<'/v2/{endpointId}/requests', 'get'>, DocumentedRequests>
export type JobRequest = JobRequests['requests'][number]

/** What `/run` and `/runsync` take: `input`, and optionally webhook, policy, s3Config. */
export type JobSubmission = { input: Record<string, unknown> } & Record<string, unknown>

export const jobApi = {
  run: (raw: RawApi, endpointId: string, body: JobSubmission) =>
    raw.json<JobView>(routeOf('/v2/{endpointId}/run', { endpointId }), { method: 'POST', body }),
  runsync: (raw: RawApi, endpointId: string, body: JobSubmission, signal?: AbortSignal) =>
    raw.json<JobView>(routeOf('/v2/{endpointId}/runsync', { endpointId }), {
      method: 'POST',
      body,
      ...(signal ? { signal } : {}),
    }),
  status: (raw: RawApi, endpointId: string, jobId: string) =>
    raw.json<JobView>(routeOf('/v2/{endpointId}/status/{jobId}', { endpointId, jobId })),
  stream: (raw: RawApi, endpointId: string, jobId: string, signal?: AbortSignal) =>
    raw.json<JobStream>(routeOf('/v2/{endpointId}/stream/{jobId}', { endpointId, jobId }), {
      ...(signal ? { signal } : {}),
    }),
  cancel: (raw: RawApi, endpointId: string, jobId: string) =>
    raw.json<JobView>(routeOf('/v2/{endpointId}/cancel/{jobId}', { endpointId, jobId }), {
      method: 'POST',
    }),
  health: (raw: RawApi, endpointId: string) =>
    raw.json<EndpointHealth>(routeOf('/v2/{endpointId}/health', { endpointId })),
  requests: (raw: RawApi, endpointId: string, pageSize = 20) =>
    raw.json<JobRequests>(
      `${routeOf('/v2/{endpointId}/requests', { endpointId })}?page=1&pageSize=${pageSize}`,
    ),
}
