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
  async open(path: string): Promise<Response> {
    const response = await this.fetch('GET', path)
    if (!response.ok) {
      const text = await response.text()
      throw new ApiError(
        response.status,
        text ? (JSON.parse(text) as ApiError['problem']) : undefined,
      )
    }
    return response
  }

  private async fetch(method: string, path: string, body?: unknown): Promise<Response> {
    const url = `${this.baseUrl.replace(/\/+$/, '')}${path}`
    try {
      return await fetch(url, {
        method,
        headers: {
          ...(this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
    } catch (error) {
      throw new Error(`cannot reach podyard at ${this.baseUrl}: ${(error as Error).message}`)
    }
  }

  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await this.fetch(method, path, body)
    const text = await response.text()
    const parsed: unknown = text ? JSON.parse(text) : undefined
    if (!response.ok) throw new ApiError(response.status, parsed as ApiError['problem'])
    return parsed as T
  }
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
