import { retryAfterMs } from './backoff.js'
import { answerOf, readAnswer, refused, type Answer } from './delivery.js'
import type { DoneBody } from './job-result.js'
import type { WorkerConnection } from './worker-config.js'
import { withQuery } from './worker-config.js'
import type { HttpClient, HttpResponse } from './worker-http.js'

/** A job as the platform hands it to a worker (wire-compat §5.4); every key reaches the handler. */
export interface WorkerJob<Input = Record<string, unknown>> {
  id: string
  input: Input
  webhook?: string
  s3Config?: {
    accessId: string
    accessSecret: string
    bucketName: string
    endpointUrl: string
    objectPath?: string
  }
  /**
   * podyard's, when the server traces: the W3C trace context of the request that queued the
   * job, to make the parent of the handler's own spans (docs/worker-sdk.md, "Handlers").
   */
  traceparent?: string
  [key: string]: unknown
}

/** A take that could not be served: the caller backs off for `retryAfterMs`. */
export class TakeRefused extends Error {
  override name = 'TakeRefused'
  constructor(
    message: string,
    readonly retryAfterMs: number,
  ) {
    super(message)
  }
}

/** Results one job-done-batch post carries at most (the server's limit is 100). */
export const MAX_DONE_BATCH = 100

/**
 * podyard's job-done-batch URL for a job-done URL of the usual shape
 * (`.../job-done/<worker>/$ID[?query]`), else undefined (then every result is its own post).
 */
export function doneBatchUrl(doneUrl: string): string | undefined {
  const match = /^(.*)\/job-done\/([^/?]+)\/\$ID(\?.*)?$/.exec(doneUrl)
  return match ? `${match[1]}/job-done-batch/${match[2]}${match[3] ?? ''}` : undefined
}

interface PendingDone {
  jobId: string
  body: DoneBody
  isStream: boolean
  resolve(answer: Answer): void
  reject(error: unknown): void
}

/** runpod-python sleeps 5 s when a take is answered 429. */
export const RATE_LIMITED_BACKOFF_MS = 5_000
/**
 * A take or job-stop with no answer after this long is given up and made again (runpod-python's
 * fetch timeout; podyard's long polls last at most 60 s).
 */
export const LONG_POLL_TIMEOUT_MS = 90_000
/** A report (result, chunk, progress update) with no answer after this long is sent again. */
export const REPORT_TIMEOUT_MS = 60_000
/** The podyard-only query parameter numbering a run's stream chunks (docs/job-api.md). */
export const CHUNK_INDEX_PARAM = 'chunk_index'

function failure(what: string, response: HttpResponse): Error {
  return new Error(`${what} answered ${response.status}: ${response.body.slice(0, 500)}`)
}

function asJob(value: unknown): WorkerJob {
  if (
    typeof value !== 'object' ||
    value === null ||
    typeof (value as { id?: unknown }).id !== 'string' ||
    !('input' in value)
  ) {
    throw new Error(`job-take returned something that is not a job: ${JSON.stringify(value)}`)
  }
  return value as WorkerJob
}

/**
 * The calls of runpod-python's worker, as it makes them (wire-compat §5): the raw key in
 * `Authorization`, JSON bodies labelled `application/x-www-form-urlencoded`, query parameters
 * appended to the platform's URLs.
 */
export class WorkerProtocol {
  private readonly auth: Record<string, string>
  /** Undefined when the URL has another shape or the server does not know the route. */
  private batchUrl: string | undefined
  private pendingDone: PendingDone[] = []
  private doneFlushing = false

  constructor(
    private readonly connection: WorkerConnection,
    private readonly http: HttpClient,
    private readonly version: string,
  ) {
    this.auth = { authorization: connection.apiKey }
    this.batchUrl = doneBatchUrl(connection.doneUrl)
  }

  get canStream(): boolean {
    return this.connection.streamUrl !== undefined
  }

  get pingIntervalMs(): number {
    return this.connection.pingIntervalMs
  }

  get stopChannelAvailable(): boolean {
    return this.connection.takeUrl.includes('/job-take/')
  }

  /**
   * Up to `count` jobs (job-take for one, job-take-batch for more), after the server's long poll,
   * and how long after the take arrived their leases end, where the answer says (podyard's).
   */
  async take(count: number, jobInProgress: boolean, signal?: AbortSignal): Promise<Taken> {
    const url =
      count === 1
        ? withQuery(this.connection.takeUrl, { job_in_progress: jobInProgress ? 1 : 0 })
        : withQuery(this.connection.takeUrl.replace('/job-take/', '/job-take-batch/'), {
            batch_size: count,
            job_in_progress: jobInProgress ? 1 : 0,
          })
    const response = await this.http.request('GET', url, {
      headers: this.auth,
      timeoutMs: LONG_POLL_TIMEOUT_MS,
      ...(signal ? { signal } : {}),
    })
    // 400 is what a FlashBoot worker gets when there is nothing for it (runpod-python: none).
    if (response.status === 204 || response.status === 400) return { jobs: [] }
    if (response.status === 429) {
      throw new TakeRefused(
        'job-take answered 429',
        retryAfterMs(response.headers['retry-after']) || RATE_LIMITED_BACKOFF_MS,
      )
    }
    if (response.status !== 200) throw failure('job-take', response)
    if (response.body.trim() === '') return { jobs: [] }
    const parsed = JSON.parse(response.body) as unknown
    const jobs = Array.isArray(parsed) ? parsed.map(asJob) : [asJob(parsed)]
    const leaseEndsAfterMs = Number(response.headers[LEASE_END_HEADER])
    return Number.isFinite(leaseEndsAfterMs) && leaseEndsAfterMs >= 0
      ? { jobs, leaseEndsAfterMs }
      : { jobs }
  }

  /**
   * A result or a progress update (`{status: 'IN_PROGRESS', output}`) of a job: the platform's
   * answer, or a rejection (a `RefusedError` for an error status).
   */
  async done(jobId: string, body: unknown, isStream: boolean): Promise<Answer> {
    const url = withQuery(this.connection.doneUrl.replaceAll('$ID', jobId), { isStream })
    const response = await this.post(url, jobId, body)
    if (response.status !== 200) throw refused('job-done', response)
    return readAnswer(response.body)
  }

  /**
   * A job's result, sent together with the other results that are ready in the same turn of the
   * event loop (or while the previous batch was being posted) as one job-done-batch post: with
   * many jobs in flight, one request per result was most of the server's work. A single result,
   * or a server without the route (404: RunPod, older podyard), gets a plain job-done post, and
   * so does each result of a batch too large for the server (413). Resolves with the platform's
   * answer for this job; rejects as `done` does (the whole batch failed). `alone`: no other
   * result can be ready (a worker of concurrency 1), so it is posted at once.
   */
  finish(jobId: string, body: DoneBody, isStream: boolean, alone = false): Promise<Answer> {
    if (this.batchUrl === undefined || alone) return this.done(jobId, body, isStream)
    return new Promise<Answer>((resolve, reject) => {
      this.pendingDone.push({ jobId, body, isStream, resolve, reject })
      this.scheduleDone()
    })
  }

  private scheduleDone(): void {
    if (this.doneFlushing || this.pendingDone.length === 0) return
    this.doneFlushing = true
    setImmediate(() => {
      void this.flushDone().finally(() => {
        this.doneFlushing = false
        this.scheduleDone()
      })
    })
  }

  private async flushDone(): Promise<void> {
    const batch = this.pendingDone.splice(0, MAX_DONE_BATCH)
    const url = this.batchUrl
    if (batch.length > 1 && url !== undefined) {
      try {
        const response = await this.post(
          url,
          undefined,
          batch.map((entry) => ({ ...entry.body, id: entry.jobId })),
        )
        if (response.status === 200) {
          const answers = batchAnswers(response.body)
          for (const entry of batch) entry.resolve(answerOf(answers.get(entry.jobId)))
          return
        }
        if (response.status === 404) this.batchUrl = undefined
        else if (response.status !== 413) throw refused('job-done-batch', response)
      } catch (error) {
        for (const entry of batch) entry.reject(error)
        return
      }
    }
    await Promise.all(
      batch.map((entry) =>
        this.done(entry.jobId, entry.body, entry.isStream).then(entry.resolve, entry.reject),
      ),
    )
  }

  /**
   * One stream chunk; runpod-python labels these `isStream=false` (sic). `index` numbers the
   * run's chunks from 0, so that podyard appends a chunk sent again (its answer lost) only once.
   */
  async stream(jobId: string, output: unknown, index: number): Promise<Answer> {
    const template = this.connection.streamUrl
    if (template === undefined) throw new Error('no job-stream URL is configured')
    const url = withQuery(template.replaceAll('$ID', jobId), {
      isStream: false,
      [CHUNK_INDEX_PARAM]: index,
    })
    const response = await this.post(url, jobId, { output })
    if (response.status !== 200) throw refused('job-stream', response)
    return readAnswer(response.body)
  }

  /** The ids of running jobs the platform wants stopped, after the server's long poll. */
  async stops(signal?: AbortSignal): Promise<string[]> {
    const url = this.connection.takeUrl.replace('/job-take/', '/job-stop/')
    const response = await this.http.request('GET', url, {
      headers: this.auth,
      timeoutMs: LONG_POLL_TIMEOUT_MS,
      ...(signal ? { signal } : {}),
    })
    if (response.status === 204) return []
    if (response.status !== 200) throw failure('job-stop', response)
    if (response.body.trim() === '') return []
    const parsed = JSON.parse(response.body) as { jobsToStop?: unknown }
    return Array.isArray(parsed.jobsToStop)
      ? parsed.jobsToStop.filter((id): id is string => typeof id === 'string')
      : []
  }

  /**
   * The heartbeat: names the jobs in flight, which renews their leases. Resolves with the ids
   * the platform renewed (podyard's `renewed`: the jobs this worker holds), undefined when the
   * answer does not say (RunPod) or there is no ping URL.
   */
  async ping(jobIds: string[], timeoutMs: number): Promise<PingAnswer | undefined> {
    const template = this.connection.pingUrl
    if (template === undefined) return undefined
    const url = withQuery(template, {
      ...(jobIds.length > 0 ? { job_id: jobIds.join(',') } : {}),
      runpod_version: this.version,
    })
    const response = await this.http.request('GET', url, { headers: this.auth, timeoutMs })
    if (response.status !== 200) throw failure('ping', response)
    return pingAnswer(response.body)
  }

  private post(url: string, jobId: string | undefined, body: unknown): Promise<HttpResponse> {
    return this.http.request('POST', url, {
      timeoutMs: REPORT_TIMEOUT_MS,
      headers: {
        ...this.auth,
        'content-type': 'application/x-www-form-urlencoded',
        charset: 'utf-8',
        ...(jobId === undefined ? {} : { 'x-request-id': jobId }),
      },
      body: JSON.stringify(body),
    })
  }
}

/** A job-done-batch answer's `results`, by job id. */
function batchAnswers(body: string): Map<string, unknown> {
  const answers = new Map<string, unknown>()
  try {
    const { results } = JSON.parse(body) as { results?: unknown }
    if (Array.isArray(results)) {
      for (const result of results) {
        const id = (result as { id?: unknown } | null)?.id
        if (typeof id === 'string') answers.set(id, result)
      }
    }
  } catch {
    // Not podyard's answer: every result counts as applied, as a plain 200 does.
  }
  return answers
}

/**
 * podyard's take answer header: how many ms after the take arrived the leases of the jobs it
 * hands out end (RunPod's answers do not carry it).
 */
const LEASE_END_HEADER = 'podyard-lease-ends-after-ms'

/** What a take's answer hands out. */
export interface Taken {
  jobs: WorkerJob[]
  /** How many ms after the take arrived the jobs' leases end, where the answer says. */
  leaseEndsAfterMs?: number
}

/**
 * What a heartbeat's answer says (podyard's; RunPod's answer carries neither): the jobs whose
 * leases it renewed, and how long a lease lasts.
 */
export interface PingAnswer {
  renewed?: string[]
  leaseMs?: number
}

function pingAnswer(body: string): PingAnswer {
  try {
    const { renewed, leaseMs } = JSON.parse(body) as { renewed?: unknown; leaseMs?: unknown }
    return {
      ...(Array.isArray(renewed)
        ? { renewed: renewed.filter((id): id is string => typeof id === 'string') }
        : {}),
      ...(typeof leaseMs === 'number' && Number.isFinite(leaseMs) && leaseMs > 0
        ? { leaseMs }
        : {}),
    }
  } catch {
    return {}
  }
}
