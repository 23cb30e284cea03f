import { describe, expect, it } from 'vitest'
import { StartupRefusal } from '../shared/startup-refusal.js'
import { tracesUrlOf, wireTracing } from './tracing-wiring.js'

const config = (otlpEndpoint = '') => ({
  telemetry: { traceContext: false, endpointLabels: 20, otlpEndpoint },
})

describe('where spans go (telemetry.otlpEndpoint and the OTEL_ variables)', () => {
  it('is off with nothing set, and wires no tracer', async () => {
    expect(tracesUrlOf(config(), {})).toBeUndefined()
    expect(await wireTracing(config(), { version: '0', env: {} })).toBeUndefined()
  })

  it('adds /v1/traces to a base URL; takes the traces URL as is', () => {
    expect(tracesUrlOf(config('http://collector:4318'), {})).toBe('http://collector:4318/v1/traces')
    expect(tracesUrlOf(config('http://collector:4318/'), {})).toBe(
      'http://collector:4318/v1/traces',
    )
    expect(tracesUrlOf(config(), { OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example/' })).toBe(
      'https://otel.example/v1/traces',
    )
    expect(
      tracesUrlOf(config(), { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/custom/path' }),
    ).toBe('http://c:4318/custom/path')
  })

  it('prefers the key, then the traces variable, then the base variable', () => {
    const env = {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:1/t',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://base:2',
    }
    expect(tracesUrlOf(config('http://key:3'), env)).toBe('http://key:3/v1/traces')
    expect(tracesUrlOf(config(), env)).toBe('http://traces:1/t')
    expect(tracesUrlOf(config(), { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://base:2' })).toBe(
      'http://base:2/v1/traces',
    )
  })

  it('is off with OTEL_SDK_DISABLED=true whatever is set', () => {
    expect(tracesUrlOf(config('http://key:3'), { OTEL_SDK_DISABLED: 'true' })).toBeUndefined()
  })

  it('refuses to start with an endpoint that is not an http(s) URL', () => {
    expect(() => tracesUrlOf(config('collector:4318'), {})).toThrow(StartupRefusal)
    expect(() => tracesUrlOf(config(), { OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://c:4317' })).toThrow(
      /is not an http\(s\) URL/,
    )
  })
})
