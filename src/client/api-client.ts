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

  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const url = `${this.baseUrl.replace(/\/+$/, '')}${path}`
    let response: Response
    try {
      response = await fetch(url, {
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
    const text = await response.text()
    const parsed: unknown = text ? JSON.parse(text) : undefined
    if (!response.ok) throw new ApiError(response.status, parsed as ApiError['problem'])
    return parsed as T
  }
}
