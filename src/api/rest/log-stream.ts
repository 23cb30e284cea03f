import type { FastifyReply, FastifyRequest } from 'fastify'
import type { PodLogLine, PodLogQuery } from '../../domain/pods/ports.js'

const KEEPALIVE_MS = 15_000

function sseEvent(line: PodLogLine, source: string): string {
  return `id: ${line.ts}/${line.seq}\ndata: ${JSON.stringify({ ts: line.ts, source, line: line.line })}\n\n`
}

/** `Last-Event-ID: <ts>/<seq>` (or a bare seq) -> seq. */
function lastSeqOf(request: FastifyRequest): number | undefined {
  const header = request.headers['last-event-id']
  if (typeof header !== 'string' || header === '') return undefined
  const seq = Number(header.split('/').pop())
  return Number.isInteger(seq) && seq >= 0 ? seq : undefined
}

export interface LogStreamSource {
  /** `source` of each event (`container`, `system`). */
  source: string
  read(query: PodLogQuery): Promise<PodLogLine[]>
  follow(afterSeq: number, signal: AbortSignal): AsyncIterable<PodLogLine>
}

/**
 * Answers a log request as server-sent events (wire-compat §3.2): `id: <ts>/<seq>` and
 * `data: {"ts","source","line"}`; the last `tail` lines (or those after Last-Event-ID), then,
 * unless `follow=false`, new lines as they come with a keep-alive comment every 15 s.
 */
export async function sendLogStream(
  request: FastifyRequest,
  reply: FastifyReply,
  query: { tail?: number | undefined; since?: string | undefined; follow?: boolean | undefined },
  logs: LogStreamSource,
): Promise<void> {
  const lastSeq = lastSeqOf(request)
  const history = await logs.read({
    ...(lastSeq !== undefined ? { afterSeq: lastSeq } : { tail: query.tail ?? 100 }),
    ...(query.since ? { since: new Date(query.since).toISOString() } : {}),
  })

  const abort = new AbortController()
  request.raw.on('close', () => abort.abort())
  reply.hijack()
  const out = reply.raw
  out.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    ...Object.fromEntries(
      ['ratelimit', 'ratelimit-policy'].flatMap((h) => {
        const value = reply.getHeader(h)
        return value === undefined ? [] : [[h, String(value)]]
      }),
    ),
  })
  let last = lastSeq ?? 0
  for (const line of history) {
    out.write(sseEvent(line, logs.source))
    last = line.seq
  }
  if (query.follow === false) return void out.end()
  const keepalive = setInterval(() => out.write(': keepalive\n\n'), KEEPALIVE_MS)
  try {
    for await (const line of logs.follow(last, abort.signal)) {
      out.write(sseEvent(line, logs.source))
    }
  } catch (error) {
    if (!abort.signal.aborted) request.log.warn({ err: error }, 'log stream failed')
  } finally {
    clearInterval(keepalive)
    out.end()
  }
}
