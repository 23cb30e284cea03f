/**
 * The server's own path prefixes (docs/api.md, "Reserved paths"): a path under one of them that
 * no route serves is a 404 problem+json, whatever its method and Accept header, and never the
 * web console's page (which answers the other unknown GET paths: src/api/console/). They are the
 * first segments of every route the server serves (buildApp checks each route against them),
 * and two where API clients with a wrong base URL land: `/v1` (RunPod's REST v1, OpenAI's
 * `/v1/...`) and `/openai`. `/v2` also holds the API docs (`/v2/docs`) and the document
 * (`/v2/openapi.json`). Which first segments under `/v2` are the management API's rather than an
 * endpoint id is another list: RESERVED_FIRST_SEGMENTS (src/api/jobs/http-support.ts).
 */
export const RESERVED_PREFIXES: readonly string[] = [
  '/v1',
  '/v2',
  '/graphql',
  '/graphiql',
  '/openai',
  '/healthz',
  '/readyz',
  '/metrics',
]

/** Whether `urlPath` (no query string) is a reserved prefix or under one; case does not matter. */
export function isReservedPath(urlPath: string): boolean {
  const path = urlPath.toLowerCase()
  return RESERVED_PREFIXES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`))
}

/**
 * What a 404 under `/v1` or `/openai` adds to "no route for ...": a client that lands there has
 * the wrong base URL (RunPod's REST v1 client, an OpenAI client given the server's root).
 */
export function baseUrlHint(urlPath: string): string {
  const path = urlPath.toLowerCase()
  const wrongBase = ['/v1', '/openai'].some(
    (prefix) => path === prefix || path.startsWith(`${prefix}/`),
  )
  return wrongBase
    ? ": podyard serves RunPod's REST API v2 under /v2, and the OpenAI-compatible API of an endpoint or a text model under /v2/<endpoint_id>/openai/v1"
    : ''
}
