import http from 'node:http'
import https from 'node:https'

export interface HttpResponse {
  status: number
  /**
   * node:http's IncomingHttpHeaders, spelled without Node's types: this interface is in the
   * package's declarations, which compile in a project without @types/node.
   */
  headers: Record<string, string | string[] | undefined>
  body: string
}

export interface HttpRequestOptions {
  headers?: Record<string, string>
  body?: string
  signal?: AbortSignal
  /**
   * The whole exchange, headers to last byte; none by default. Checked every
   * TIMEOUT_CHECK_INTERVAL_MS by one timer for all requests, rather than a timer per request.
   */
  timeoutMs?: number
}

export const TIMEOUT_CHECK_INTERVAL_MS = 250

interface TimedRequest {
  deadline: number
  expire(): void
}

/**
 * A small HTTP client over node:http with keep-alive agents. The worker SDK stays free of
 * dependencies, and node:http costs a fraction of the global fetch per request, which matters
 * when one worker reports thousands of jobs a second.
 */
export class HttpClient {
  private readonly httpAgent = new http.Agent({ keepAlive: true })
  private readonly httpsAgent = new https.Agent({ keepAlive: true })
  private readonly timed = new Set<TimedRequest>()
  private watchdog: NodeJS.Timeout | undefined

  request(method: string, url: string, options: HttpRequestOptions = {}): Promise<HttpResponse> {
    return new Promise<HttpResponse>((resolve, reject) => {
      const target = new URL(url)
      const secure = target.protocol === 'https:'
      if (!secure && target.protocol !== 'http:') {
        reject(new Error(`unsupported URL scheme ${target.protocol} in ${url}`))
        return
      }
      const headers: Record<string, string | number> = { ...options.headers }
      if (options.body !== undefined) headers['content-length'] = Buffer.byteLength(options.body)
      const request = (secure ? https : http).request(target, {
        method,
        headers,
        agent: secure ? this.httpsAgent : this.httpAgent,
        ...(options.signal ? { signal: options.signal } : {}),
      })
      let timed: TimedRequest | undefined
      if (options.timeoutMs !== undefined) {
        const timeoutMs = options.timeoutMs
        timed = {
          deadline: Date.now() + timeoutMs,
          expire: () =>
            request.destroy(new Error(`${method} ${url} timed out after ${timeoutMs} ms`)),
        }
        this.watch(timed)
      }
      const settled = () => {
        if (timed !== undefined) this.timed.delete(timed)
      }
      const fail = (error: Error) => {
        settled()
        reject(error)
      }
      request.on('error', fail)
      request.on('response', (response) => {
        const parts: string[] = []
        response.setEncoding('utf8')
        response.on('data', (part: string) => parts.push(part))
        response.on('error', fail)
        response.on('close', () => {
          if (!response.complete) fail(new Error(`${method} ${url}: the response was cut off`))
        })
        response.on('end', () => {
          settled()
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: parts.join(''),
          })
        })
      })
      request.end(options.body)
    })
  }

  private watch(request: TimedRequest): void {
    this.timed.add(request)
    if (this.watchdog !== undefined) return
    this.watchdog = setInterval(() => {
      const now = Date.now()
      for (const timed of this.timed) {
        if (timed.deadline <= now) {
          this.timed.delete(timed)
          timed.expire()
        }
      }
    }, TIMEOUT_CHECK_INTERVAL_MS)
    this.watchdog.unref()
  }

  close(): void {
    clearInterval(this.watchdog)
    this.watchdog = undefined
    this.httpAgent.destroy()
    this.httpsAgent.destroy()
  }
}
