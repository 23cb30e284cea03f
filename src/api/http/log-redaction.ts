import type { FastifyRequest } from 'fastify'

/**
 * Query parameters that carry secrets, by their canonical name (canonicalParamName): the API
 * key (GraphQL takes it as `?api_key=`), keys and tokens in general, passwords, and the
 * signature of a public model's result URL (whoever has it may fetch the image).
 */
const SECRET_PARAMS = new Set([
  'apikey',
  'key',
  'token',
  'accesstoken',
  'authorization',
  'password',
  'secret',
  'signature',
])

/**
 * A parameter name as the server could understand it, whatever its spelling: percent-decoded
 * (`api%5Fkey` is `api_key` to the query parser, which authenticates with it), `+` as a space,
 * lower-cased, everything but letters and digits dropped (`API_KEY`, `api-key`, `apiKey`,
 * `api_key[]` all become `apikey`). Redacting a few harmless parameters too is the cheap side
 * of the error.
 */
function canonicalParamName(raw: string): string {
  let name = raw.replace(/\+/g, ' ')
  try {
    name = decodeURIComponent(name)
  } catch {
    // A malformed escape: decode what can be, so that `%61pi_key%` still reads as api_key.
    name = name.replace(/%([0-9a-f]{2})/gi, (_, hex: string) =>
      String.fromCharCode(parseInt(hex, 16)),
    )
  }
  return name.toLowerCase().replace(/[^a-z0-9]/g, '')
}

/**
 * GraphQL over GET carries the operation in the URL: a literal in it (a registry password in
 * a mutation, refused over GET but logged first) or in its variables may be a secret.
 */
const GRAPHQL_PARAMS = new Set(['query', 'variables', 'extensions'])

export function redactUrl(url: string): string {
  const at = url.indexOf('?')
  if (at < 0) return url
  const graphql = /\/graphql\/?$/i.test(url.slice(0, at))
  const hash = url.indexOf('#', at)
  const query = url.slice(at + 1, hash < 0 ? undefined : hash)
  const redacted = query
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=')
      const name = eq < 0 ? pair : pair.slice(0, eq)
      const canonical = canonicalParamName(name)
      if (!SECRET_PARAMS.has(canonical) && !(graphql && GRAPHQL_PARAMS.has(canonical))) return pair
      return `${name}=[redacted]`
    })
    .join('&')
  return `${url.slice(0, at + 1)}${redacted}${hash < 0 ? '' : url.slice(hash)}`
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
