/**
 * The platform's view of tracing (docs/production.md, "Tracing"): spans with an explicit parent
 * given as a W3C `traceparent`, so that a job's spans can join the request that queued it on
 * whichever replica takes or finishes the job. The OpenTelemetry SDK behind it is loaded only
 * when an OTLP endpoint is configured (src/wiring/otel-tracing.ts); otherwise every layer holds
 * `undefined` and does no tracing work at all.
 */
export interface Tracing {
  /** Starts a span; end it with `end()`. Times are ms since the epoch (a past start is fine). */
  startSpan(name: string, options?: SpanOptions): TracedSpan
  /** Sends what is buffered (tests, shutdown). */
  flush(): Promise<void>
  /** Flushes and stops exporting. */
  shutdown(): Promise<void>
}

export type SpanAttributes = Record<string, string | number | boolean | undefined>

export interface SpanOptions {
  /** The parent as a `traceparent` header value; none (or an invalid one): a new trace. */
  parent?: string
  kind?: 'server' | 'internal'
  startTime?: number
  attributes?: SpanAttributes
  /** Spans this one relates to without being their child (`traceparent` values). */
  links?: string[]
}

export interface TracedSpan {
  /** This span as a `traceparent` value, for its children and for whoever it hands work to. */
  readonly traceparent: string
  readonly traceId: string
  readonly spanId: string
  setAttributes(attributes: SpanAttributes): void
  /** Links this span to another (a `traceparent` value) it relates to without being its child. */
  link(traceparent: string): void
  /** Marks the span failed with the reason. */
  fail(message: string): void
  end(endTime?: number): void
}

/** Attribute keys of podyard's own spans (OpenTelemetry's are from its conventions). */
export const TRACE_ATTRIBUTES = {
  requestId: 'podyard.request_id',
  endpointId: 'podyard.endpoint.id',
  jobId: 'podyard.job.id',
  jobStatus: 'podyard.job.status',
  jobAttempt: 'podyard.job.attempt',
  workerId: 'podyard.worker.id',
  podId: 'podyard.pod.id',
  podStatus: 'podyard.pod.status',
  podNextStatus: 'podyard.pod.next_status',
  hostId: 'podyard.host.id',
  reason: 'podyard.reason',
} as const

/**
 * The trace context a job or pod carries from the request that made it: the request's span
 * (`traceparent`) and its request id.
 */
export interface TraceOrigin {
  traceparent: string
  requestId: string
}
