import http from 'node:http'
import type { AddressInfo } from 'node:net'

/** What the proxy does with one request. */
export type ProxyAction =
  /** Relay the request and its answer. */
  | 'forward'
  /**
   * Relay the request, let the server answer it, then cut the client's connection instead of
   * relaying the answer: the server applied the request, the client never learns it.
   */
  | 'drop-answer'
  /** Neither relay nor answer: the request waits until the client gives up (a black hole). */
  | 'hang'
  /** Answer this instead, without asking the server. */
  | { status: number; headers?: Record<string, string>; body?: string }
  /** Relay the request, and its answer this long after it came. */
  | { delayAnswerMs: number }

export interface AnswerProxy {
  /** The proxy's base URL: use it in place of the platform's. */
  readonly url: string
  /** Decides each request from now on; `forward` by default. */
  rule: (request: { method: string; url: string }) => ProxyAction
  close(): Promise<void>
}

/**
 * An HTTP proxy in front of a platform that can lose or replace answers, to show what a worker
 * does when a request was applied but its answer never came, or when the server refuses it.
 * `target()` is read per request, so the platform behind it may restart.
 */
export async function startAnswerProxy(target: () => string): Promise<AnswerProxy> {
  const agent = new http.Agent({ keepAlive: true })
  const proxy: AnswerProxy = {
    url: '',
    rule: () => 'forward',
    close: async () => {},
  }
  const server = http.createServer((request, response) => {
    const parts: Buffer[] = []
    request.on('data', (part: Buffer) => parts.push(part))
    request.on('end', () => {
      const action = proxy.rule({ method: request.method ?? 'GET', url: request.url ?? '/' })
      if (action === 'hang') return
      if (typeof action === 'object' && 'status' in action) {
        response.writeHead(action.status, action.headers)
        response.end(action.body ?? '')
        return
      }
      const upstream = http.request(
        new URL(request.url ?? '/', target()),
        { method: request.method, headers: withoutHost(request.headers), agent },
        (answer) => {
          const body: Buffer[] = []
          answer.on('data', (part: Buffer) => body.push(part))
          answer.on('end', () => {
            if (action === 'drop-answer') {
              request.socket.destroy()
              return
            }
            const relay = () => {
              response.writeHead(answer.statusCode ?? 502, answer.headers)
              response.end(Buffer.concat(body))
            }
            if (typeof action === 'object') setTimeout(relay, action.delayAnswerMs)
            else relay()
          })
        },
      )
      upstream.on('error', () => request.socket.destroy())
      // A client that hangs up (a worker aborting its long poll) hangs up upstream too.
      response.on('close', () => {
        if (!response.writableFinished) upstream.destroy()
      })
      upstream.end(Buffer.concat(parts))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  Object.assign(proxy, {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
      agent.destroy()
    },
  })
  return proxy
}

function withoutHost(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const { host: _host, ...rest } = headers
  return rest
}
