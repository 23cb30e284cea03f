import type { paths } from './generated/openapi'
import { apiErrorOf } from './problem'

/** A route of the document with its `{params}` filled in, so a raw call names a real route. */
export function routeOf<P extends keyof paths>(template: P, params: Record<string, string> = {}) {
  return template.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const value = params[name]
    if (value === undefined) throw new Error(`routeOf: ${template} needs ${name}`)
    return encodeURIComponent(value)
  })
}

export interface ServerSentEvent {
  id?: string
  data: string
}

/**
 * Calls the openapi-fetch client cannot make: routes the document does not describe yet (the
 * job API's bodies, the admin host routes) and server-sent event streams, which EventSource
 * cannot open with an Authorization header.
 */
export class RawApi {
  constructor(
    private readonly apiKey: string,
    private readonly onUnauthorized?: () => void,
  ) {}

  private async fetch(path: string, init: RequestInit): Promise<Response> {
    const response = await fetch(path, {
      ...init,
      headers: { authorization: `Bearer ${this.apiKey}`, ...init.headers },
    })
    if (response.status === 401) this.onUnauthorized?.()
    return response
  }

  async json<T>(
    path: string,
    init: { method?: string; body?: unknown; signal?: AbortSignal } = {},
  ): Promise<T> {
    const response = await this.fetch(path, {
      method: init.method ?? 'GET',
      ...(init.signal ? { signal: init.signal } : {}),
      ...(init.body !== undefined
        ? { body: JSON.stringify(init.body), headers: { 'content-type': 'application/json' } }
        : {}),
    })
    const text = await response.text()
    let body: unknown = undefined
    try {
      body = text === '' ? undefined : JSON.parse(text)
    } catch {
      body = undefined
    }
    if (!response.ok) throw apiErrorOf(response, body)
    return body as T
  }

  /**
   * The events of a `text/event-stream` answer, as they arrive, until it ends or `signal`;
   * with `lastEventId`, the stream resumes after that event (as EventSource would reconnect).
   */
  async *events(
    path: string,
    signal: AbortSignal,
    lastEventId?: string,
  ): AsyncGenerator<ServerSentEvent> {
    const response = await this.fetch(path, {
      headers: {
        accept: 'text/event-stream',
        ...(lastEventId !== undefined ? { 'last-event-id': lastEventId } : {}),
      },
      signal,
    })
    if (!response.ok || !response.body) {
      const text = await response.text().catch(() => '')
      let body: unknown
      try {
        body = JSON.parse(text)
      } catch {
        body = undefined
      }
      throw apiErrorOf(response, body)
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
    let buffer = ''
    try {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) return
        buffer += value
        let end: number
        while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '')
          const event = parseEvent(block)
          if (event) yield event
        }
      }
    } finally {
      reader.releaseLock()
    }
  }
}

/** One event block (`id:` and `data:` lines); comments (keep-alives) give none. */
export function parseEvent(block: string): ServerSentEvent | undefined {
  let id: string | undefined
  const data: string[] = []
  for (const line of block.split(/\r?\n/)) {
    if (line.startsWith(':') || line === '') continue
    const colon = line.indexOf(':')
    const field = colon < 0 ? line : line.slice(0, colon)
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
    if (field === 'id') id = value
    else if (field === 'data') data.push(value)
  }
  if (data.length === 0) return undefined
  return { ...(id !== undefined ? { id } : {}), data: data.join('\n') }
}
