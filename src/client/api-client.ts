/** A small client of podyard's REST API, used by the CLI. Errors carry the problem detail. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly problem: { title?: string; detail?: string; errors?: string[] } | undefined,
  ) {
    super(
      problem?.detail
        ? `${status} ${problem.title ?? ''}: ${problem.detail}`.replace(' :', ':')
        : `request failed with HTTP ${status}`,
    )
    this.name = 'ApiError'
  }
}

export class ApiClient {
  constructor(
    private readonly baseUrl: string,
    private readonly apiKey: string | undefined,
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
    if (!response.ok) {
      const text = await response.text()
      throw new ApiError(
        response.status,
        text ? (JSON.parse(text) as ApiError['problem']) : undefined,
      )
    }
    return response
  }

  private async fetch(
    method: string,
    path: string,
    body?: unknown,
    signal?: AbortSignal,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    const url = `${this.baseUrl.replace(/\/+$/, '')}${path}`
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
      throw new Error(`cannot reach podyard at ${this.baseUrl}: ${(error as Error).message}`)
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

  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await this.fetch(method, path, body)
    const text = await response.text()
    const parsed: unknown = text ? JSON.parse(text) : undefined
    if (!response.ok) throw new ApiError(response.status, parsed as ApiError['problem'])
    return parsed as T
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
  data: string
}

/** Reads a text/event-stream response as events. */
export async function* readEvents(response: Response): AsyncIterable<ServerSentEvent> {
  if (!response.body) return
  const decoder = new TextDecoder()
  let buffer = ''
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true })
    let boundary: number
    while ((boundary = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, boundary)
      buffer = buffer.slice(boundary + 2)
      let id: string | undefined
      const data: string[] = []
      for (const line of block.split('\n')) {
        if (line.startsWith('id: ')) id = line.slice(4)
        else if (line.startsWith('data: ')) data.push(line.slice(6))
      }
      if (data.length > 0) yield { id, data: data.join('\n') }
    }
  }
}
