import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
  type Attributes,
  type Link,
  type SpanContext,
} from '@opentelemetry/api'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions'
import type { SpanAttributes, SpanOptions, TracedSpan, Tracing } from '../shared/tracing.js'

/**
 * This module is the only one that imports OpenTelemetry, and it is imported (dynamically, by
 * tracing-wiring.ts) only when an OTLP endpoint is configured: with tracing off, the SDK is
 * never loaded.
 */
export interface OtelTracingOptions {
  /** The full OTLP/HTTP traces URL (…/v1/traces). */
  url: string
  serviceName: string
  serviceVersion: string
  /** This replica's id (`service.instance.id`). */
  instanceId?: string
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

function spanContextOf(traceparent: string | undefined): SpanContext | undefined {
  const match = traceparent === undefined ? null : TRACEPARENT.exec(traceparent)
  if (match === null) return undefined
  const [, traceId, spanId, flags] = match as unknown as [string, string, string, string]
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined
  return { traceId, spanId, traceFlags: parseInt(flags, 16), isRemote: true }
}

function attributesOf(attributes: SpanAttributes | undefined): Attributes {
  const out: Attributes = {}
  for (const [key, value] of Object.entries(attributes ?? {})) {
    if (value !== undefined) out[key] = value
  }
  return out
}

export function startOtelTracing(options: OtelTracingOptions): Tracing {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: options.serviceName,
      [ATTR_SERVICE_VERSION]: options.serviceVersion,
      ...(options.instanceId ? { 'service.instance.id': options.instanceId } : {}),
    }),
    // OTLP/HTTP with JSON bodies; OTEL_EXPORTER_OTLP_HEADERS and OTEL_EXPORTER_OTLP_TIMEOUT are
    // read by the exporter itself.
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: options.url }))],
  })
  const tracer = provider.getTracer('podyard', options.serviceVersion)
  return {
    startSpan(name: string, span: SpanOptions = {}): TracedSpan {
      const parent = spanContextOf(span.parent)
      const links: Link[] = []
      for (const link of span.links ?? []) {
        const context = spanContextOf(link)
        if (context) links.push({ context })
      }
      const started = tracer.startSpan(
        name,
        {
          kind: span.kind === 'server' ? SpanKind.SERVER : SpanKind.INTERNAL,
          attributes: attributesOf(span.attributes),
          links,
          ...(span.startTime !== undefined ? { startTime: span.startTime } : {}),
        },
        parent ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT,
      )
      const context = started.spanContext()
      const sampled = (context.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED
      return {
        traceparent: `00-${context.traceId}-${context.spanId}-${sampled ? '01' : '00'}`,
        traceId: context.traceId,
        spanId: context.spanId,
        setAttributes: (attributes) => void started.setAttributes(attributesOf(attributes)),
        link: (traceparent) => {
          const linked = spanContextOf(traceparent)
          if (linked) started.addLink({ context: linked })
        },
        fail: (message) => void started.setStatus({ code: SpanStatusCode.ERROR, message }),
        end: (endTime) => started.end(endTime),
      }
    },
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  }
}
