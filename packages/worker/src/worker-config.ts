import { randomUUID } from 'node:crypto'

/** runpod-python's default heartbeat period (`RUNPOD_PING_INTERVAL`, in ms). */
export const DEFAULT_PING_INTERVAL_MS = 10_000

/** Where and as whom a worker talks to the platform; explicit options win over the environment. */
export interface WorkerConnectionOptions {
  /**
   * The endpoint's job API base, `http(s)://<host>/v2/<endpoint_id>`: the four worker URLs are
   * derived from it. Use this or the `*Url` templates (or the RUNPOD_WEBHOOK_* environment).
   */
  endpointUrl?: string
  /** job-take URL template; `$ID` is the worker id (RUNPOD_WEBHOOK_GET_JOB). */
  takeUrl?: string
  /** job-done URL template; `$RUNPOD_POD_ID` worker id, `$ID` job id (RUNPOD_WEBHOOK_POST_OUTPUT). */
  doneUrl?: string
  /** job-stream URL template, substituted like doneUrl (RUNPOD_WEBHOOK_POST_STREAM). */
  streamUrl?: string
  /** Heartbeat URL template; `$RUNPOD_POD_ID` is the worker id (RUNPOD_WEBHOOK_PING). */
  pingUrl?: string
  /** Sent raw in `Authorization` on every call (RUNPOD_AI_API_KEY). */
  apiKey?: string
  /** The worker id (RUNPOD_POD_ID); a random UUID when neither is given. */
  workerId?: string
  /** Heartbeat period in ms (RUNPOD_PING_INTERVAL); default 10 000. */
  pingIntervalMs?: number
  /** The environment to read instead of `process.env` (tests). */
  env?: Record<string, string | undefined>
}

/** The URLs with the worker id substituted; `$ID` in done and stream is left for the job id. */
export interface WorkerConnection {
  workerId: string
  apiKey: string
  takeUrl: string
  doneUrl: string
  streamUrl: string | undefined
  pingUrl: string | undefined
  pingIntervalMs: number
}

export class WorkerConfigError extends Error {
  override name = 'WorkerConfigError'
}

const nonEmpty = (value: string | undefined) =>
  value === undefined || value === '' ? undefined : value

/** Whether a job-take URL is configured, by the options or the environment. */
export function hasTakeUrl(options: WorkerConnectionOptions = {}): boolean {
  const env = options.env ?? process.env
  return (
    nonEmpty(options.takeUrl) !== undefined ||
    nonEmpty(options.endpointUrl) !== undefined ||
    nonEmpty(env.RUNPOD_WEBHOOK_GET_JOB) !== undefined
  )
}

/** The URL templates podyard's worker routes have under an endpoint's job API base. */
export function endpointWorkerUrls(endpointUrl: string): {
  takeUrl: string
  doneUrl: string
  streamUrl: string
  pingUrl: string
} {
  const base = endpointUrl.replace(/\/+$/, '')
  if (!URL.canParse(base)) throw new WorkerConfigError(`endpointUrl ${base} is not a URL`)
  return {
    takeUrl: `${base}/job-take/$ID`,
    doneUrl: `${base}/job-done/$RUNPOD_POD_ID/$ID`,
    streamUrl: `${base}/job-stream/$RUNPOD_POD_ID/$ID`,
    pingUrl: `${base}/ping/$RUNPOD_POD_ID`,
  }
}

/**
 * Resolves the connection as runpod-python's worker reads its environment (wire-compat §5.2),
 * with explicit options first. Unlike runpod-python the heartbeat runs whenever a ping URL is
 * known (runpod-python skips it without RUNPOD_POD_ID), since without it a job longer than
 * the lease would be re-queued.
 */
export function resolveConnection(options: WorkerConnectionOptions = {}): WorkerConnection {
  const env = options.env ?? process.env
  const derived = options.endpointUrl ? endpointWorkerUrls(options.endpointUrl) : undefined
  const pick = (explicit: string | undefined, fromEndpoint: string | undefined, name: string) =>
    nonEmpty(explicit) ?? fromEndpoint ?? nonEmpty(env[name])
  const takeTemplate = pick(options.takeUrl, derived?.takeUrl, 'RUNPOD_WEBHOOK_GET_JOB')
  const doneTemplate = pick(options.doneUrl, derived?.doneUrl, 'RUNPOD_WEBHOOK_POST_OUTPUT')
  const streamTemplate = pick(options.streamUrl, derived?.streamUrl, 'RUNPOD_WEBHOOK_POST_STREAM')
  const pingTemplate = pick(options.pingUrl, derived?.pingUrl, 'RUNPOD_WEBHOOK_PING')
  if (takeTemplate === undefined) {
    throw new WorkerConfigError(
      'no job-take URL: pass endpointUrl (or takeUrl) or set RUNPOD_WEBHOOK_GET_JOB; to run one job without a server, pass --test_input \'{"input": ...}\' or put it in ./test_input.json',
    )
  }
  if (doneTemplate === undefined) {
    throw new WorkerConfigError(
      'no job-done URL: pass endpointUrl (or doneUrl) or set RUNPOD_WEBHOOK_POST_OUTPUT',
    )
  }
  const apiKey = nonEmpty(options.apiKey) ?? nonEmpty(env.RUNPOD_AI_API_KEY)
  if (apiKey === undefined) {
    throw new WorkerConfigError('no API key: pass apiKey or set RUNPOD_AI_API_KEY')
  }
  const workerId = nonEmpty(options.workerId) ?? nonEmpty(env.RUNPOD_POD_ID) ?? randomUUID()
  let pingIntervalMs = options.pingIntervalMs
  if (pingIntervalMs === undefined && nonEmpty(env.RUNPOD_PING_INTERVAL) !== undefined) {
    pingIntervalMs = Number(env.RUNPOD_PING_INTERVAL)
  }
  pingIntervalMs ??= DEFAULT_PING_INTERVAL_MS
  if (!Number.isFinite(pingIntervalMs) || pingIntervalMs <= 0) {
    throw new WorkerConfigError(
      `the ping interval must be a positive number of ms, not ${String(pingIntervalMs)}`,
    )
  }
  // runpod-python substitutes only `$ID` in the take URL, and `$RUNPOD_POD_ID` first elsewhere.
  const withWorker = (template: string) => template.replaceAll('$RUNPOD_POD_ID', workerId)
  return {
    workerId,
    apiKey,
    takeUrl: takeTemplate.replaceAll('$ID', workerId),
    doneUrl: withWorker(doneTemplate),
    streamUrl: streamTemplate === undefined ? undefined : withWorker(streamTemplate),
    pingUrl: pingTemplate === undefined ? undefined : withWorker(pingTemplate),
    pingIntervalMs,
  }
}

/** Appends query parameters as runpod-python does (`&name=value`), adding `?` when missing. */
export function withQuery(url: string, params: Record<string, string | number | boolean>): string {
  const pairs = Object.entries(params).map(
    ([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(String(value))}`,
  )
  if (pairs.length === 0) return url
  const separator = !url.includes('?') ? '?' : url.endsWith('?') || url.endsWith('&') ? '' : '&'
  return `${url}${separator}${pairs.join('&')}`
}
