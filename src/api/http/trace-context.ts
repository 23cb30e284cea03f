import { randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'

/** One W3C Trace Context position: the trace, this span, and the sampled flag. */
export interface TraceContext {
  traceId: string
  spanId: string
  flags: string
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/
const ALL_ZERO = /^0+$/

/**
 * The caller's position in a trace, from its `traceparent` header (W3C Trace Context, level 1):
 * undefined when absent or malformed, for version ff, or for all-zero ids, which the
 * recommendation says to treat as absent. A version above 00 may append fields; they are
 * ignored, as it says.
 */
export function parseTraceparent(header: string | undefined): TraceContext | undefined {
  if (header === undefined) return undefined
  const match = TRACEPARENT.exec(header.trim())
  if (match === null) return undefined
  const [, version, traceId, spanId, flags, rest] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
    string | undefined,
  ]
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined
  if (ALL_ZERO.test(traceId) || ALL_ZERO.test(spanId)) return undefined
  return { traceId, spanId, flags }
}

export function formatTraceparent(context: TraceContext): string {
  return `00-${context.traceId}-${context.spanId}-${context.flags}`
}

/**
 * This request's span: a child of the caller's when it sent a valid `traceparent`, else the
 * root of a new, sampled trace.
 */
export function requestSpan(incoming: string | undefined): TraceContext {
  const parent = parseTraceparent(incoming)
  const spanId = randomBytes(8).toString('hex')
  if (parent) return { traceId: parent.traceId, spanId, flags: parent.flags }
  return { traceId: randomBytes(16).toString('hex'), spanId, flags: '01' }
}

/**
 * Config `telemetry.traceContext` (docs/production.md, "Tracing"): each request continues the
 * caller's trace or starts one, its log lines carry `traceId` and `spanId`, and the answer's
 * `traceparent` names this request's span so that a caller can link to it. Spans are not
 * exported anywhere: podyard propagates the context, it has no OpenTelemetry exporter.
 */
export function installTraceContext(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => {
    const header = request.headers.traceparent
    const span = requestSpan(typeof header === 'string' ? header : undefined)
    // Fastify logs the request's end through the reply's logger: both get the ids.
    const log = request.log.child({ traceId: span.traceId, spanId: span.spanId })
    request.log = log
    reply.log = log
    reply.header('traceparent', formatTraceparent(span))
    done()
  })
}
