import { createParser } from 'eventsource-parser'
import { STATUS_CODES } from 'node:http'

/** A problem+json body (docs/api.md, "Errors"). */
export interface Problem {
  title?: string
  detail?: string
  errors?: string[]
}

/**
 * A small client of podyard's REST API, used by the CLI. Errors carry the problem detail; an
 * answer that is not podyard's (a proxy's error page) says so, with its status and URL.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Problem | undefined,
    message?: string,
  ) {
    super(
      message ??
        (problem?.detail
          ? `${status} ${problem.title ?? ''}: ${problem.detail}`.replace(' :', ':')
          : `request failed with HTTP ${status}`),
    )
    this.name = 'ApiError'
  }
}

/** The media type of an answer (`application/json`), lower case; '' when it has none. */
function mediaTypeOf(response: Response): string {
  return (response.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
}

const isJson = (media: string) => media === 'application/json' || media.endsWith('+json')

/** `502 Bad Gateway`: the status and its reason phrase. */
function statusLine(response: Response): string {
  const reason = response.statusText || STATUS_CODES[response.status] || ''
  return `${response.status} ${reason}`.trim()
}

/**
 * The error of a failed answer. podyard answers every error with problem+json (the job API adds
 * `error`); anything else came from something between (a load balancer's HTML 502, a proxy's
 * 404), so its body is not read as JSON and the message says where the answer came from.
 */
function errorOf(
  response: Response,
  url: string,
  text: string,
  unauthorizedHint: string | undefined,
): ApiError {
  if (isJson(mediaTypeOf(response))) {
    try {
      const body = JSON.parse(text) as unknown
      if (typeof body === 'object' && body !== null && 'detail' in body) {
        const error = new ApiError(response.status, body as Problem)
        // The problem stays as the server sent it (--json shows it); the message adds the hint.
        if (response.status === 401 && unauthorizedHint !== undefined) {
          error.message = `${error.message}; ${unauthorizedHint}`
        }
        return error
      }
    } catch {
      // Not JSON after all: not podyard's answer either.
    }
  }
  return new ApiError(
    response.status,
    undefined,
    `${statusLine(response)} from ${url} (not podyard's answer: check the proxy)`,
  )
}

/** The server gave no answer at all (refused, DNS, TLS, reset): the CLI's "unreachable". */
export class ServerUnreachableError extends Error {
  override name = 'ServerUnreachableError'
}

export class ApiClient {
  constructor(
    private readonly baseUrl: string,
    private readonly apiKey: string | undefined,
    /** Added to the message of a 401 (the CLI says where to give a key). */
    private readonly unauthorizedHint?: string,
  ) {}

  async get<T>(path: string): Promise<T> {
    return this.request<T>('GET', path)
  }

  /** The raw response of a GET, for streams; non-2xx still throws ApiError. */
  async open(
    path: string,
    init: { signal?: AbortSignal; headers?: Record<string, string> } = {},
  ): Promise<Response> {
    const response = await this.fetch('GET', path, undefined, init.signal, init.headers)
    const url = this.urlOf(path)
    if (!response.ok) throw errorOf(response, url, await response.text(), this.unauthorizedHint)
    const media = mediaTypeOf(response)
    if (media !== 'text/event-stream') {
      await response.body?.cancel()
      throw new ApiError(
        response.status,
        undefined,
        `${statusLine(response)} from ${url} is ${media || 'without a content type'}, not an event stream (not podyard's answer: check the URL and the proxy)`,
      )
    }
    return response
  }

  private urlOf(path: string): string {
    return `${this.baseUrl.replace(/\/+$/, '')}${path}`
  }

  private async fetch(
    method: string,
    path: string,
    body?: unknown,
    signal?: AbortSignal,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    const url = this.urlOf(path)
    try {
      return await fetch(url, {
        method,
        headers: {
          ...headers,
          ...(this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        ...(signal ? { signal } : {}),
      })
    } catch (error) {
      if (signal?.aborted) throw error
      const cause = (error as Error & { cause?: { message?: string } }).cause?.message
      throw new ServerUnreachableError(
        `cannot reach podyard at ${this.baseUrl}: ${(error as Error).message}${cause ? ` (${cause})` : ''}`,
      )
    }
  }

  /** `GET /v2/billing[/<report>]` (docs/billing.md, "Reports"): only the query fields given. */
  async billing<T = BillingReportJson>(
    report: BillingReport,
    query: Record<string, string | number | undefined>,
  ): Promise<T> {
    const params = new URLSearchParams()
    for (const [name, value] of Object.entries(query)) {
      if (value !== undefined) params.set(name, String(value))
    }
    const search = params.toString()
    return this.get<T>(`/v2/billing${report ? `/${report}` : ''}${search ? `?${search}` : ''}`)
  }

  /** `GET /v2/catalog/models` (docs/public-endpoints.md). */
  async models(): Promise<ModelJson[]> {
    return this.get<ModelJson[]>('/v2/catalog/models')
  }

  /** `POST /v2/<model_id>/runsync[?wait=ms]`: the job, finished unless the wait ran out. */
  async runModel<T = Record<string, unknown>>(
    modelId: string,
    input: unknown,
    waitMs?: number,
  ): Promise<T> {
    const query = waitMs === undefined ? '' : `?wait=${waitMs}`
    return this.request<T>('POST', `/v2/${encodeURIComponent(modelId)}/runsync${query}`, {
      input,
    })
  }

  /**
   * The answer's JSON (undefined when it has no body). A failed answer is an ApiError: the
   * problem, or what the answer was when it is not podyard's. A success whose body is not JSON
   * (a proxy's sign-in page, a URL that is some other web server) is refused the same way,
   * rather than read as an object; one without a content type is read as JSON if it is JSON.
   */
  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await this.fetch(method, path, body)
    const url = this.urlOf(path)
    const text = await response.text()
    if (!response.ok) throw errorOf(response, url, text, this.unauthorizedHint)
    if (text === '') return undefined as T
    const media = mediaTypeOf(response)
    const notPodyard = (what: string) =>
      new ApiError(
        response.status,
        undefined,
        `${statusLine(response)} from ${url} is ${what} (not podyard's answer: check the URL and the proxy)`,
      )
    if (media !== '' && !isJson(media)) throw notPodyard(`${media}, not JSON`)
    try {
      return JSON.parse(text) as T
    } catch {
      throw notPodyard('not valid JSON')
    }
  }
}

/** The per-resource reports under `/v2/billing/`; `''` is the account's totals. */
export type BillingReport =
  '' | 'pods' | 'serverless' | 'endpoints' | 'network-volumes' | 'clusters'

/** A billing report: `records` of USD amounts per bucket (and resource), and `metadata`. */
export interface BillingReportJson {
  records: Array<Record<string, string | number>>
  metadata: {
    query: Record<string, string | number>
    recordCount: number
    totals: Record<string, number>
    [count: string]: unknown
  }
}

/** A model of `GET /v2/catalog/models`. */
export interface ModelJson {
  id: string
  kind: string
  name: string
  description: string
  price: { unit: string; usd: number }
  reference: boolean
  input: { required?: string[]; properties?: Record<string, unknown> } & Record<string, unknown>
}

export interface ServerSentEvent {
  id: string | undefined
  /** The `event:` field; absent for the default type (`message`). */
  event?: string
  data: string
}

/**
 * Reads a text/event-stream response as events, framed as the HTML standard says (LF, CRLF or
 * CR line ends, `data:` with or without its space, comments, multi-line data): by
 * eventsource-parser, the one parser every stream the CLI follows goes through.
 */
export async function* readEvents(response: Response): AsyncIterable<ServerSentEvent> {
  if (!response.body) return
  const decoder = new TextDecoder()
  const ready: ServerSentEvent[] = []
  const parser = createParser({
    onEvent: ({ id, event, data }) =>
      ready.push({ id, ...(event !== undefined ? { event } : {}), data }),
  })
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    parser.feed(decoder.decode(chunk, { stream: true }))
    yield* ready.splice(0)
  }
  // An event not ended by a blank line when the stream closes is dropped, as the standard says.
  parser.feed(decoder.decode())
  yield* ready.splice(0)
}
