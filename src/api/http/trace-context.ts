import { randomBytes } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import {
  TRACE_ATTRIBUTES,
  type TraceOrigin,
  type TracedSpan,
  type Tracing,
} from '../../shared/tracing.js'

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

const origins = new WeakMap<FastifyRequest, TraceOrigin>()
const requestSpans = new WeakMap<FastifyRequest, TracedSpan>()

/**
 * Links the request's span to a span in another trace (a job's queuing request): a worker's
 * take is its own request, so it links to each job it hands out rather than joining its trace.
 */
export function linkRequestSpan(request: FastifyRequest, traceparent: string): void {
  requestSpans.get(request)?.link(traceparent)
}

/**
 * The request's span and id, for what it starts that outlives it (a job keeps them, so that
 * its spans join this request's trace); undefined when the server does not trace.
 */
export function traceOriginOf(request: FastifyRequest): TraceOrigin | undefined {
  return origins.get(request)
}

/**
 * `{ trace }` for what the request starts (a job, a pod), or `{}` when nothing is traced: the
 * options every create that joins the request's trace takes.
 */
export function traced(request: FastifyRequest): { trace?: TraceOrigin } {
  const trace = origins.get(request)
  return trace ? { trace } : {}
}

/** The path without its query: `?api_key=` must not reach a span. */
const pathOf = (url: string) => {
  const query = url.indexOf('?')
  return query === -1 ? url : url.slice(0, query)
}

/**
 * Config `telemetry.traceContext` (docs/production.md, "Tracing"): each request continues the
 * caller's trace or starts one, its log lines carry `traceId` and `spanId`, and the answer's
 * `traceparent` names this request's span so that a caller can link to it. With `tracing`
 * (an OTLP endpoint is configured) that span is exported: its name is the method and route,
 * it ends when the answer is sent (or the caller hangs up), and a 5xx marks it failed.
 */
export function installTraceContext(app: FastifyInstance, tracing?: Tracing): void {
  const spans = requestSpans
  app.addHook('onRequest', (request, reply, done) => {
    const header = request.headers.traceparent
    const incoming = typeof header === 'string' ? header : undefined
    let span: TraceContext
    if (tracing) {
      const route = request.routeOptions.url
      const parent = parseTraceparent(incoming)
      const traced = tracing.startSpan(route ? `${request.method} ${route}` : request.method, {
        kind: 'server',
        ...(parent ? { parent: formatTraceparent(parent) } : {}),
        attributes: {
          'http.request.method': request.method,
          'url.path': pathOf(request.url),
          'http.route': route,
          [TRACE_ATTRIBUTES.requestId]: request.id,
        },
      })
      spans.set(request, traced)
      span = { traceId: traced.traceId, spanId: traced.spanId, flags: parent?.flags ?? '01' }
    } else {
      span = requestSpan(incoming)
    }
    origins.set(request, { traceparent: formatTraceparent(span), requestId: request.id })
    // Fastify logs the request's end through the reply's logger: both get the ids.
    const log = request.log.child({ traceId: span.traceId, spanId: span.spanId })
    request.log = log
    reply.log = log
    reply.header('traceparent', formatTraceparent(span))
    done()
  })
  if (!tracing) return
  const end = (request: FastifyRequest, status: number | undefined) => {
    const span = spans.get(request)
    if (span === undefined) return
    spans.delete(request)
    if (status !== undefined) {
      span.setAttributes({ 'http.response.status_code': status })
      if (status >= 500) span.fail(`answered ${status}`)
    } else {
      span.fail('the caller hung up before the answer')
    }
    span.end()
  }
  app.addHook('onResponse', (request, reply, done) => {
    end(request, reply.statusCode)
    done()
  })
  app.addHook('onRequestAbort', (request, done) => {
    end(request, undefined)
    done()
  })
}
