import http from 'node:http'
import https from 'node:https'
import type { LookupFunction } from 'node:net'

/** An address the caller has checked (src/domain/egress/egress-guard.ts). */
export interface CheckedAddress {
  address: string
  family: 4 | 6
}

export interface PinnedRequest {
  url: URL
  /** The URL's host without brackets. */
  host: string
  port: number
  /** The only addresses the connection may go to; a name in `url` is never resolved again. */
  addresses: readonly CheckedAddress[]
  method: string
  headers: Record<string, string>
  body?: string
  /** Ends the request (a timeout, a stop); the result is then `aborted`. */
  signal: AbortSignal
}

export type PinnedResponse = { status: number } | { error: 'aborted' | 'failed'; detail: string }

/**
 * A `lookup` for node:net that answers with the checked addresses, so that the name is not
 * resolved a second time between the check and the connection (a DNS rebinding in between
 * would otherwise reach whatever the second answer names).
 */
export function pinnedLookup(addresses: readonly CheckedAddress[]): LookupFunction {
  return (hostname, options, callback) => {
    const family =
      options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : (options.family ?? 0)
    const usable = addresses.filter((a) => family === 0 || a.family === family)
    const first = usable[0]
    if (first === undefined) {
      const error: NodeJS.ErrnoException = new Error(
        `no checked IPv${family} address for ${hostname}`,
      )
      error.code = 'ENOTFOUND'
      callback(error, '', 0)
      return
    }
    if (options.all)
      callback(
        null,
        usable.map((a) => ({ ...a })),
      )
    else callback(null, first.address, first.family)
  }
}

/**
 * One HTTP(S) request to exactly the checked addresses, redirects not followed and the answer's
 * body not read: the result is the status, or why there was none. Each request has its own
 * connection (no pooled socket outlives the check it was made for).
 */
export function pinnedRequest(request: PinnedRequest): Promise<PinnedResponse> {
  const { url } = request
  const client = url.protocol === 'https:' ? https : http
  return new Promise((resolve) => {
    let settled = false
    const settle = (result: PinnedResponse) => {
      if (settled) return
      settled = true
      resolve(result)
    }
    const outgoing = client.request({
      protocol: url.protocol,
      host: request.host,
      port: request.port,
      path: `${url.pathname}${url.search}`,
      method: request.method,
      headers: {
        ...request.headers,
        ...(request.body !== undefined
          ? { 'content-length': String(Buffer.byteLength(request.body)) }
          : {}),
      },
      ...(url.username || url.password
        ? {
            auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`,
          }
        : {}),
      lookup: pinnedLookup(request.addresses),
      agent: false,
      signal: request.signal,
    })
    outgoing.on('response', (response) => {
      settle({ status: response.statusCode ?? 0 })
      response.destroy()
    })
    outgoing.on('error', (error: NodeJS.ErrnoException) => {
      if (request.signal.aborted) settle({ error: 'aborted', detail: 'aborted' })
      else settle({ error: 'failed', detail: `${error.code ?? error.name}: ${error.message}` })
    })
    outgoing.end(request.body)
  })
}
