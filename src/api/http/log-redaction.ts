import type { FastifyRequest } from 'fastify'

/** Query parameters that carry secrets (GraphQL takes the API key as `?api_key=`). */
const SECRET_PARAMS = /([?&](?:api_key|apiKey|key|token)=)[^&#]*/gi

export function redactUrl(url: string): string {
  return url.replace(SECRET_PARAMS, '$1[redacted]')
}

/** How a request appears in logs: never a secret of its URL, never a header or a body. */
export function requestLogSerializer(request: FastifyRequest) {
  return {
    method: request.method,
    url: redactUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
  }
}
