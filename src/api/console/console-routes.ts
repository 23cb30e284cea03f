import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { isReservedPath } from '../http/reserved-paths.js'
import type { ConsoleAsset } from './console-assets.js'

/**
 * The console's Content-Security-Policy. Everything comes from the console's own origin (no
 * CDN, no inline script or style); images may come from elsewhere too, because a public
 * model's `image_url` may be a bucket's signed URL. There is no `upgrade-insecure-requests`
 * and no HSTS: the console must work over plain HTTP on whatever host name the operator gives
 * the server (docs/console.md).
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob: http: https:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ')

/**
 * Whether a request the router did not match is a page of the console (client-side route). A
 * path under the server's own prefixes (RESERVED_PREFIXES: the API, GraphQL, the operations
 * routes, `/v1`, ...) never is, whatever its Accept header: it stays a problem+json 404.
 */
export function isConsolePage(request: FastifyRequest): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return false
  const urlPath = request.url.split('?')[0] ?? '/'
  if (isReservedPath(urlPath)) return false
  // A missing file (`/assets/old-1a2b.js`, `/robots.txt`) is a 404, not the page.
  if (urlPath.startsWith('/assets/')) return false
  const last = urlPath.slice(urlPath.lastIndexOf('/') + 1)
  return !last.includes('.')
}

export function sendAsset(request: FastifyRequest, reply: FastifyReply, asset: ConsoleAsset) {
  reply
    .header('cache-control', asset.cacheControl)
    .header('etag', asset.etag)
    .header('vary', 'accept-encoding')
    .header('x-content-type-options', 'nosniff')
    .type(asset.contentType)
  if (asset.contentType.startsWith('text/html')) {
    reply
      .header('content-security-policy', CONSOLE_CSP)
      .header('referrer-policy', 'no-referrer')
      .header('x-frame-options', 'DENY')
  }
  if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send()
  const acceptsGzip = /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''))
  const gzipped = acceptsGzip ? asset.gzipped() : undefined
  if (gzipped) return reply.header('content-encoding', 'gzip').send(gzipped)
  return reply.send(asset.body)
}

/** `/` and every file of the built console, outside the OpenAPI document. */
export async function consoleRoutes(
  app: FastifyInstance,
  { assets }: { assets: Map<string, ConsoleAsset> },
): Promise<void> {
  const index = assets.get('/index.html')!
  const options = { schema: { hide: true } }
  app.get('/', options, async (request, reply) => sendAsset(request, reply, index))
  for (const [urlPath, asset] of assets) {
    if (urlPath === '/index.html') continue
    app.get(urlPath, options, async (request, reply) => sendAsset(request, reply, asset))
  }
}
