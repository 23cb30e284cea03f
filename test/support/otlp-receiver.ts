import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  startTimeUnixNano: string
  endTimeUnixNano: string
  attributes: Array<{ key: string; value: Record<string, unknown> }>
  status?: { code?: number; message?: string }
  links?: Array<{ traceId: string; spanId: string }>
}

/** An OTLP/HTTP receiver on 127.0.0.1: what a collector would get, as JSON. */
export async function otlpReceiver() {
  const spans: OtlpSpan[] = []
  const resources: Array<Record<string, unknown>> = []
  const contentTypes: string[] = []
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      contentTypes.push(String(request.headers['content-type']))
      if (request.method === 'POST' && request.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as {
          resourceSpans: Array<{
            resource: Record<string, unknown>
            scopeSpans: Array<{ spans: OtlpSpan[] }>
          }>
        }
        for (const resourceSpans of body.resourceSpans) {
          resources.push(resourceSpans.resource)
          for (const scope of resourceSpans.scopeSpans) spans.push(...scope.spans)
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    resources,
    contentTypes,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

/** A span attribute's value, whatever its OTLP type. */
export const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value
  return value === undefined ? undefined : Object.values(value)[0]
}
