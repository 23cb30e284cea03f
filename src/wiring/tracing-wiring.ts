import type { Config } from '../config/schema.js'
import { StartupRefusal } from '../shared/startup-refusal.js'
import type { Tracing } from '../shared/tracing.js'

const TRACES_PATH = '/v1/traces'

/**
 * Where spans go (docs/production.md, "Tracing"): config `telemetry.otlpEndpoint`, else
 * OpenTelemetry's own variables, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the traces URL as is) and
 * OTEL_EXPORTER_OTLP_ENDPOINT (a base URL, `/v1/traces` added); undefined: tracing is off.
 * OTEL_SDK_DISABLED=true turns it off whatever is set.
 */
export function tracesUrlOf(
  config: Pick<Config, 'telemetry'>,
  env: NodeJS.ProcessEnv,
): string | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined
  const [url, base] = config.telemetry.otlpEndpoint
    ? [config.telemetry.otlpEndpoint, true]
    : env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
      ? [env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, false]
      : env.OTEL_EXPORTER_OTLP_ENDPOINT
        ? [env.OTEL_EXPORTER_OTLP_ENDPOINT, true]
        : [undefined, false]
  if (url === undefined) return undefined
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
    throw new StartupRefusal(
      `the OTLP endpoint "${url}" is not an http(s) URL, e.g. http://127.0.0.1:4318 (telemetry.otlpEndpoint, OTEL_EXPORTER_OTLP_ENDPOINT)`,
    )
  }
  if (!base || url.replace(/\/+$/, '').endsWith(TRACES_PATH)) return url
  return `${url.replace(/\/+$/, '')}${TRACES_PATH}`
}

/**
 * The tracer when an OTLP endpoint is configured; undefined otherwise. OpenTelemetry's SDK is
 * imported here, lazily, so a server without tracing never loads it.
 */
export async function wireTracing(
  config: Pick<Config, 'telemetry'>,
  options: { version: string; env?: NodeJS.ProcessEnv },
): Promise<Tracing | undefined> {
  const env = options.env ?? process.env
  const url = tracesUrlOf(config, env)
  if (url === undefined) return undefined
  const { startOtelTracing } = await import('./otel-tracing.js')
  return startOtelTracing({
    url,
    serviceName: env.OTEL_SERVICE_NAME?.trim() || 'podyard',
    serviceVersion: options.version,
  })
}
