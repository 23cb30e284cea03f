import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { gunzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RESERVED_PREFIXES } from '../../src/api/http/reserved-paths.js'
import { createTestEndpoint } from '../support/http.js'
import { startTestPlatform, type TestPlatform } from '../support/platform.js'

/**
 * The web console is served at `/` from its built directory (docs/console.md): with a CSP that
 * works over plain HTTP, cache headers by kind of file, and client-side routes falling back to
 * index.html, while every server route answers exactly as before.
 */
const INDEX =
  '<!doctype html><html><head><script type="module" src="/assets/index-abc123.js"></script></head><body><div id="root"></div></body></html>'
const SCRIPT = `console.log(${JSON.stringify('podyard '.repeat(200))})`

describe('the web console at /', () => {
  let platform: TestPlatform
  let consoleDir: string

  beforeAll(async () => {
    consoleDir = mkdtempSync(path.join(tmpdir(), 'podyard-console-'))
    mkdirSync(path.join(consoleDir, 'assets'))
    writeFileSync(path.join(consoleDir, 'index.html'), INDEX)
    writeFileSync(path.join(consoleDir, 'assets', 'index-abc123.js'), SCRIPT)
    writeFileSync(path.join(consoleDir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>')
    platform = await startTestPlatform({}, { consoleDir })
  })
  afterAll(async () => {
    await platform.close()
    rmSync(consoleDir, { recursive: true, force: true })
  })

  const get = (urlPath: string, headers: Record<string, string> = {}) =>
    fetch(`${platform.url}${urlPath}`, { headers })

  it('serves index.html at / with a CSP that never upgrades to HTTPS, revalidated every time', async () => {
    const response = await get('/')
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(await response.text()).toBe(INDEX)
    expect(response.headers.get('cache-control')).toBe('no-cache')
    const csp = response.headers.get('content-security-policy') ?? ''
    expect(csp).toContain("script-src 'self'")
    expect(csp).toContain("connect-src 'self'")
    expect(csp).toContain("frame-ancestors 'none'")
    expect(csp).not.toContain('upgrade-insecure-requests')
    expect(csp).not.toContain('unsafe-inline')
    expect(csp).not.toContain('unsafe-eval')
    expect(response.headers.get('strict-transport-security')).toBeNull()
    expect(response.headers.get('x-content-type-options')).toBe('nosniff')
  })

  it('names its address in the banner', () => {
    expect(platform.banner).toContain(`console       ${platform.url}/   (sign in with an API key)`)
  })

  it('answers a repeated request with 304 when the page has not changed', async () => {
    const first = await get('/')
    const etag = first.headers.get('etag')!
    expect(etag).toMatch(/^"/)
    const again = await get('/', { 'if-none-match': etag })
    expect(again.status).toBe(304)
  })

  it('keeps hashed assets for a year and gzips what compresses', async () => {
    const plain = await get('/assets/index-abc123.js', { 'accept-encoding': 'identity' })
    expect(plain.status).toBe(200)
    expect(plain.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
    expect(plain.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    expect(await plain.text()).toBe(SCRIPT)
    // Node's fetch decodes gzip by itself; ask without it to see the bytes on the wire.
    const { request } = await import('node:http')
    const raw = await new Promise<{ encoding?: string; body: Buffer }>((resolve, reject) => {
      request(
        `${platform.url}/assets/index-abc123.js`,
        { headers: { 'accept-encoding': 'gzip' } },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (chunk: Buffer) => chunks.push(chunk))
          res.on('end', () =>
            resolve({ encoding: res.headers['content-encoding'], body: Buffer.concat(chunks) }),
          )
        },
      )
        .on('error', reject)
        .end()
    })
    expect(raw.encoding).toBe('gzip')
    expect(gunzipSync(raw.body).toString()).toBe(SCRIPT)
    const icon = await get('/favicon.svg')
    expect(icon.headers.get('content-type')).toBe('image/svg+xml')
    expect(icon.headers.get('cache-control')).toBe('public, max-age=3600')
  })

  it('answers the console routes with index.html, for GET and HEAD only', async () => {
    for (const page of ['/pods', '/pods/abc123/logs', '/serverless/new', '/admin/accounts?x=1']) {
      const response = await get(page)
      expect(response.status, page).toBe(200)
      expect(await response.text()).toBe(INDEX)
      expect(response.headers.get('content-security-policy')).toContain("default-src 'self'")
    }
    const head = await fetch(`${platform.url}/pods`, { method: 'HEAD' })
    expect(head.status).toBe(200)
    const post = await fetch(`${platform.url}/pods`, { method: 'POST' })
    expect(post.status).toBe(404)
    expect(post.headers.get('content-type')).toMatch(/^application\/problem\+json/)
  })

  it('answers a missing file with a 404, never with the page', async () => {
    for (const missing of ['/assets/index-old999.js', '/robots.txt', '/pods/logo.png']) {
      const response = await get(missing)
      expect(response.status, missing).toBe(404)
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    }
  })

  it('answers an unknown path under a reserved prefix with a 404 problem+json, even to a browser', async () => {
    // Where API clients with a wrong base URL land (RunPod's REST v1, OpenAI's /v1), and a
    // path under each prefix the server serves (docs/api.md, "Reserved paths").
    const paths = [
      '/v1',
      '/v1/pods',
      '/v1/chat/completions',
      '/openai/v1/models',
      '/V1/Pods',
      ...RESERVED_PREFIXES.map((prefix) => `${prefix}/no/such/route`),
    ]
    for (const urlPath of paths) {
      for (const accept of ['application/json', 'text/html', '*/*']) {
        for (const method of ['GET', 'HEAD']) {
          const where = `${method} ${urlPath} (Accept: ${accept})`
          const response = await fetch(`${platform.url}${urlPath}?x=1`, {
            method,
            headers: { accept },
          })
          expect(response.status, where).toBe(404)
          expect(response.headers.get('content-type'), where).toBe(
            'application/problem+json; charset=utf-8',
          )
          expect(response.headers.get('content-security-policy'), where).toBeNull()
          if (method === 'HEAD') continue
          // The spec's error body: title, status, detail (and errors, absent here).
          const body = (await response.json()) as Record<string, unknown>
          expect(Object.keys(body).sort(), where).toEqual(['detail', 'status', 'title'])
          expect(body, where).toMatchObject({ title: 'Not Found', status: 404 })
          expect(body.detail, where).toMatch(new RegExp(`^no route for GET ${urlPath}\\b`))
        }
      }
    }
    const wrongBase = (await (await get('/v1/pods')).json()) as { detail: string }
    expect(wrongBase.detail).toBe(
      "no route for GET /v1/pods: podyard serves RunPod's REST API v2 under /v2, and the OpenAI-compatible API of an endpoint or a text model under /v2/<endpoint_id>/openai/v1",
    )
    // Next to them, the console's pages are still the page.
    for (const page of ['/v1x', '/openapi', '/graphqlish/page']) {
      expect((await get(page, { accept: 'text/html' })).status, page).toBe(200)
    }
  })

  it('leaves every server route as it was: the API, GraphQL, the job API and operations', async () => {
    const unknownApi = await get('/v2/nothing/here/at/all')
    expect(unknownApi.status).toBe(404)
    expect(unknownApi.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    expect(await unknownApi.json()).toMatchObject({
      detail: 'no route for GET /v2/nothing/here/at/all',
    })
    expect((await get('/v2')).status).toBe(404)
    expect((await get('/v2/pods')).status).toBe(401)
    expect((await platform.call('/v2/pods')).status).toBe(200)
    expect((await get('/healthz')).status).toBe(200)
    expect((await get('/readyz')).status).toBe(200)
    expect((await get('/metrics')).status).toBe(401)
    expect((await platform.call('/metrics')).headers.get('content-type')).toMatch(/^text\/plain/)
    expect((await get('/metrics/nothing')).status).toBe(404)
    expect((await get('/graphql/nothing')).status).toBe(404)
    expect((await get('/healthz/nothing')).status).toBe(404)
    const openapi = await get('/v2/openapi.json')
    expect(openapi.status).toBe(200)
    const document = (await openapi.json()) as { paths: Record<string, unknown> }
    expect(
      Object.keys(document.paths).filter((p) => !p.startsWith('/v2') && !p.startsWith('/graphql')),
    ).toEqual([])
    const graphql = await platform.call('/graphql', {
      method: 'POST',
      json: { query: '{ myself { id } }' },
    })
    expect(graphql.status).toBe(200)
    const endpointId = await createTestEndpoint(platform)
    const health = await platform.call(`/v2/${endpointId}/health`)
    expect(health.status).toBe(200)
    expect(await health.json()).toMatchObject({ jobs: { inQueue: 0 } })
    const unknownJob = await platform.call(`/v2/${endpointId}/status/nope`)
    expect(unknownJob.status).toBe(404)
    expect(unknownJob.headers.get('content-type')).toMatch(/^application\/problem\+json/)
  })
})

describe('a server without a built console', () => {
  let platform: TestPlatform
  let emptyDir: string

  beforeAll(async () => {
    emptyDir = mkdtempSync(path.join(tmpdir(), 'podyard-no-console-'))
    platform = await startTestPlatform({}, { consoleDir: emptyDir })
  })
  afterAll(async () => {
    await platform.close()
    rmSync(emptyDir, { recursive: true, force: true })
  })

  it('says at / how to build it, and serves no page elsewhere', async () => {
    const root = await fetch(`${platform.url}/`)
    expect(root.status).toBe(404)
    expect(await root.json()).toMatchObject({
      detail: 'the web console is not built: run npm run build:console (npm install does it)',
    })
    expect((await fetch(`${platform.url}/pods`)).status).toBe(404)
    expect(platform.banner).toContain('console       not built: npm run build:console')
  })
})
