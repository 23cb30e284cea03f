import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import { gzipSync } from 'node:zlib'

/** One file of the built console, held in memory: the build is a few hundred KB. */
export interface ConsoleAsset {
  body: Buffer
  /**
   * The same gzipped, sent when the client accepts gzip and it is smaller (else undefined):
   * compressed on the first request that asks, not at start (gzip of the whole build was about
   * 70 ms of every start's CPU).
   */
  gzipped(): Buffer | undefined
  contentType: string
  cacheControl: string
  etag: string
}

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
}

/**
 * `/assets/` holds the bundler's output, whose names carry a hash of their content: they never
 * change, so browsers keep them for a year. index.html names them, so it is revalidated every
 * time (a new build is seen at once); other files (the icon) for an hour.
 */
export function cacheControlOf(urlPath: string): string {
  if (urlPath === '/index.html') return 'no-cache'
  if (urlPath.startsWith('/assets/')) return 'public, max-age=31536000, immutable'
  return 'public, max-age=3600'
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name)
    return statSync(full).isDirectory() ? filesUnder(full) : [full]
  })
}

/**
 * The built console (`dist/console`) by URL path (`/index.html`, `/assets/index-1a2b.js`), or
 * undefined when it was not built. Only these files are ever served: a request path is looked
 * up, never joined to a directory, so no path can reach outside it.
 */
export function loadConsoleAssets(dir: string): Map<string, ConsoleAsset> | undefined {
  if (!existsSync(path.join(dir, 'index.html'))) return undefined
  const assets = new Map<string, ConsoleAsset>()
  for (const file of filesUnder(dir)) {
    const urlPath = '/' + path.relative(dir, file).split(path.sep).join('/')
    const body = readFileSync(file)
    const type = contentTypes[path.extname(file).toLowerCase()] ?? 'application/octet-stream'
    const compressible = /^(text\/|image\/svg|application\/json)/.test(type)
    let gzip: { smaller: Buffer | undefined } | undefined
    assets.set(urlPath, {
      body,
      gzipped: () => {
        if (!compressible) return undefined
        if (gzip === undefined) {
          const compressed = gzipSync(body)
          gzip = { smaller: compressed.length < body.length ? compressed : undefined }
        }
        return gzip.smaller
      },
      contentType: type,
      cacheControl: cacheControlOf(urlPath),
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
    })
  }
  return assets
}
