import { once } from 'node:events'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { LogSource, PodLogLine, PodLogQuery } from '../../domain/pods/ports.js'

const KEEPALIVE_MS = 15_000

/**
 * The most lines of history one request gets (wire-compat §3.2: `tail` <= 5000, the schemas'
 * maximum), resumed with Last-Event-ID too: then the newest this many after that event.
 */
export const MAX_LOG_HISTORY = 5000

export interface LogStreamSource {
  /** `source` of each event (`container`, `system`). */
  source: LogSource
  read(query: PodLogQuery): Promise<PodLogLine[]>
  follow(afterSeq: number, signal: AbortSignal): AsyncIterable<PodLogLine>
}

/** `?source=`: one source, or both (RunPod's default when it is left out). */
export function logSourcesOf(source: LogSource | undefined): LogSource[] {
  return source ? [source] : ['container', 'system']
}

/**
 * Where a stream is: per source, the seq of the last line sent. The event id says it: with one
 * source `<ts>/<seq>`, with both `<ts>/<containerSeq>.<systemSeq>`, so that a client resuming
 * with Last-Event-ID misses nothing of either.
 */
type Cursor = number[]

function eventId(ts: string, cursor: Cursor): string {
  return `${ts}/${cursor.join('.')}`
}

function sseEvent(line: PodLogLine, source: string, cursor: Cursor): string {
  return `id: ${eventId(line.ts, cursor)}\ndata: ${JSON.stringify({ ts: line.ts, source, line: line.line })}\n\n`
}

/**
 * `Last-Event-ID` -> the cursor it names: `<ts>/<seq>` for one source, `<ts>/<a>.<b>` for two. An
 * id of the other form (a client that switched sources) resumes every source from its time.
 */
function resumeOf(request: FastifyRequest, sources: number): { cursor?: Cursor; since?: string } {
  const header = request.headers['last-event-id']
  if (typeof header !== 'string' || header === '') return {}
  const slash = header.lastIndexOf('/')
  const seqs = header
    .slice(slash + 1)
    .split('.')
    .map(Number)
  if (seqs.length === sources && seqs.every((n) => Number.isInteger(n) && n >= 0)) {
    return { cursor: seqs }
  }
  const ts = slash > 0 ? header.slice(0, slash) : ''
  return Number.isNaN(Date.parse(ts)) ? {} : { since: new Date(ts).toISOString() }
}

/** Lines of several sources in time order (ties keep the sources' order), each with its source. */
function interleave(lists: PodLogLine[][]): Array<{ index: number; line: PodLogLine }> {
  return lists
    .flatMap((lines, index) => lines.map((line) => ({ index, line })))
    .sort((a, b) => (a.line.ts < b.line.ts ? -1 : a.line.ts > b.line.ts ? 1 : a.index - b.index))
}

/** Every source's new lines as they come, tagged with the source's index. */
async function* merged(
  sources: LogStreamSource[],
  cursor: Cursor,
  signal: AbortSignal,
): AsyncIterable<{ index: number; line: PodLogLine }> {
  const iterators = sources.map((s, i) => s.follow(cursor[i]!, signal)[Symbol.asyncIterator]())
  const next = (index: number) => iterators[index]!.next().then((result) => ({ index, result }))
  const pending = new Map(iterators.map((_, index) => [index, next(index)]))
  while (pending.size > 0) {
    const { index, result } = await Promise.race(pending.values())
    if (result.done) {
      pending.delete(index)
      continue
    }
    pending.set(index, next(index))
    yield { index, line: result.value }
  }
}

/**
 * Answers a log request as server-sent events (wire-compat §3.2): `id: <ts>/<seq>` and
 * `data: {"ts","source","line"}`; the last `tail` lines (or the last MAX_LOG_HISTORY after
 * Last-Event-ID), then, unless `follow=false`, new lines as they come with a keep-alive comment
 * every 15 s. With two sources their lines are interleaved by time, and `tail` counts them
 * together. Lines are read on as the client takes them: a slow client is not buffered for.
 */
export async function sendLogStream(
  request: FastifyRequest,
  reply: FastifyReply,
  query: { tail?: number | undefined; since?: string | undefined; follow?: boolean | undefined },
  sources: LogStreamSource[],
): Promise<void> {
  const resume = resumeOf(request, sources.length)
  const tail = Math.min(query.tail ?? 100, MAX_LOG_HISTORY)
  const since = resume.since ?? (query.since ? new Date(query.since).toISOString() : undefined)
  const lists = await Promise.all(
    sources.map((s, i) =>
      s.read({
        ...(resume.cursor ? { afterSeq: resume.cursor[i]!, tail: MAX_LOG_HISTORY } : { tail }),
        ...(since ? { since } : {}),
      }),
    ),
  )
  let history = interleave(lists)
  const kept = resume.cursor ? MAX_LOG_HISTORY : tail
  history = history.slice(Math.max(0, history.length - kept))

  const abort = new AbortController()
  request.raw.on('close', () => abort.abort())
  // A closing server ends its followers at once; the client resumes elsewhere with Last-Event-ID.
  const closing = request.server.closing
  const endOnClose = () => abort.abort()
  closing.addEventListener('abort', endOnClose, { once: true })
  if (closing.aborted) abort.abort()
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
  // The stream is open for the client now (EventSource's `open`), not at its first line.
  out.flushHeaders()
  // Following goes on after the last line read for the history (sent, or cut by `tail`), and
  // never before where a resumed client already is.
  const cursor: Cursor = sources.map((_, i) =>
    lists[i]!.reduce((max, line) => Math.max(max, line.seq), resume.cursor?.[i] ?? 0),
  )
  // What each event id says the client has: before the first line of a source it is sent, the
  // lines the history left out count as had, so a resumed stream does not send them.
  const sent: Cursor = sources.map((_, i) => {
    const first = history.find((h) => h.index === i)
    return first ? first.line.seq - 1 : cursor[i]!
  })
  const send = async (index: number, line: PodLogLine) => {
    sent[index] = line.seq
    // A full socket: wait for the client rather than hold what it has not taken.
    if (!out.write(sseEvent(line, sources[index]!.source, sent)) && !abort.signal.aborted) {
      await once(out, 'drain', { signal: abort.signal }).catch(() => undefined)
    }
  }
  for (const { index, line } of history) await send(index, line)
  if (query.follow === false) {
    closing.removeEventListener('abort', endOnClose)
    return void out.end()
  }
  const keepalive = setInterval(() => out.write(': keepalive\n\n'), KEEPALIVE_MS)
  try {
    for await (const { index, line } of merged(sources, cursor, abort.signal)) {
      await send(index, line)
    }
  } catch (error) {
    if (!abort.signal.aborted) request.log.warn({ err: error }, 'log stream failed')
  } finally {
    clearInterval(keepalive)
    closing.removeEventListener('abort', endOnClose)
    out.end()
  }
}
