import { mkdtempSync, rmSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../../src/control/free-port.js'
import { startServe } from '../support/cli.js'
import { createTestEndpoint, json } from '../support/http.js'
import {
  callPlatform,
  otherAccountKey,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type TestPlatform,
} from '../support/platform.js'

interface Problem {
  title: string
  status: number
  detail: string
}

/** The answer as problem+json of the given status. */
async function problem(response: Response, status: number): Promise<Problem> {
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/)
  return json<Problem>(response, status)
}

/** Whether this process can listen on the port now: nothing else holds it. */
function canListen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer()
    server.once('error', () => resolve(false))
    server.listen(port, host, () => server.close(() => resolve(true)))
  })
}

/**
 * `/metrics` counts every account's pods, jobs, workers and endpoints: a tenant's pod that
 * reached it on loopback read platform-wide figures. It is the admin's, or a
 * separate listener's (`metrics.listen`); `/healthz` and `/readyz` stay open and say nothing
 * of tenants.
 */
describe("the platform's endpoints, as a tenant sees them", () => {
  let platform: TestPlatform
  let tenantKey: string

  beforeAll(async () => {
    platform = await startTestPlatform()
    tenantKey = await otherAccountKey(platform, 'tenant@example.com')
    // Something of the tenant's for the figures to count.
    await json(
      await platform.call('/v2/serverless', {
        method: 'POST',
        key: tenantKey,
        json: { name: 'tenant-ep', image: 'worker:1', gpu: { pools: ['ADA_24'] } },
      }),
      201,
    )
  })
  afterAll(() => platform.close())

  it('refuses /metrics without a key (401) and to an account that is not the admin (403)', async () => {
    const anonymous = await problem(await platform.call('/metrics', { key: null }), 401)
    expect(anonymous).toEqual({
      title: 'Unauthorized',
      status: 401,
      detail: 'no API key: send the header Authorization: Bearer <key>',
    })
    const wrongKey = await problem(
      await platform.call('/metrics', { key: 'pyd_not-a-key-of-anyone-0123' }),
      401,
    )
    expect(wrongKey.detail).toBe('the API key is not valid')

    const tenant = await problem(await platform.call('/metrics', { key: tenantKey }), 403)
    expect(tenant.detail).toBe("only the admin account may read the platform's metrics")
    // HEAD is the same route: no figure leaks through it either.
    expect((await platform.call('/metrics', { key: tenantKey, method: 'HEAD' })).status).toBe(403)
  })

  it("serves /metrics with the admin's key, a read-only one too, never a restricted one", async () => {
    const admin = await platform.call('/metrics')
    expect(admin.status).toBe(200)
    expect(admin.headers.get('content-type')).toMatch(/^text\/plain/)
    expect(await admin.text()).toMatch(/^podyard_jobs_submitted_total{endpoint="other"} 0$/m)

    const endpointId = await createTestEndpoint(platform, 'admin-ep')
    const keyOf = async (permission: string, endpoints?: string[]) =>
      (
        await json<{ key: string }>(
          await platform.call('/v2/account/api-keys', {
            method: 'POST',
            json: { name: permission, permission, ...(endpoints ? { endpoints } : {}) },
          }),
          201,
        )
      ).key
    const readOnly = await platform.call('/metrics', { key: await keyOf('READ_ONLY') })
    expect(readOnly.status).toBe(200)
    expect(await readOnly.text()).toMatch(/^# TYPE podyard_pods gauge$/m)

    const restricted = await platform.call('/metrics', {
      key: await keyOf('RESTRICTED', [endpointId]),
    })
    expect((await problem(restricted, 403)).detail).toMatch(/restricted to the job API/)
  })

  it('keeps /healthz and /readyz open, saying nothing of accounts, pods or jobs', async () => {
    for (const key of [null, tenantKey]) {
      const health = await platform.call('/healthz', { key })
      expect(health.status).toBe(200)
      expect(await health.json()).toEqual({ status: 'ok', version: platform.summary.version })
      const ready = await platform.call('/readyz', { key })
      expect(ready.status).toBe(200)
      expect(await ready.json()).toEqual({ status: 'ready' })
    }
  })
})

describe('metrics.listen: a listener of its own for Prometheus', () => {
  it('serves /metrics there without a key, nothing else, and closes with the platform', async () => {
    const port = await freePort('127.0.0.1')
    const platform = await startTestPlatform({
      metrics: { listen: `127.0.0.1:${port}` },
      webhooks: { retryDelayMs: 10_000, timeoutMs: 2_000, allowInternal: ['127.0.0.0/8'] },
    })
    const metricsUrl = `http://127.0.0.1:${port}`
    let closed = false
    try {
      expect(platform.banner).toContain(`  metrics       ${metricsUrl}/metrics   (no key`)
      expect(platform.summary.metrics).toBe(`${metricsUrl}/metrics`)

      const scraped = await fetch(`${metricsUrl}/metrics`)
      expect(scraped.status).toBe(200)
      expect(scraped.headers.get('content-type')).toMatch(/^text\/plain/)
      const text = await scraped.text()
      expect(text).toMatch(/^podyard_jobs_submitted_total{endpoint="other"} 0$/m)
      expect(text).toMatch(/^# TYPE podyard_http_requests_total counter$/m)

      // Only /metrics: the API is on its own port, with its keys.
      for (const other of ['/v2/pods', '/healthz', '/graphql', '/']) {
        const answer = await fetch(`${metricsUrl}${other}`, {
          headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
        })
        expect((await problem(answer, 404)).detail).toBe(`no route for GET ${other}`)
      }
      expect((await fetch(`${metricsUrl}/metrics`, { method: 'POST' })).status).toBe(404)

      // The API's port still serves it, with the admin's key only.
      expect((await platform.call('/metrics', { key: null })).status).toBe(401)
      expect((await platform.call('/metrics')).status).toBe(200)

      // It is this server's own listener: never a webhook's target, whatever the allow-list.
      const endpointId = await createTestEndpoint(platform)
      const submitted = await platform.call(`/v2/${endpointId}/run`, {
        method: 'POST',
        json: { input: {}, webhook: `${metricsUrl}/metrics` },
      })
      expect((await problem(submitted, 400)).detail).toContain(
        `127.0.0.1 is this server's own listener (port ${port})`,
      )

      // A scraper's idle keep-alive connection, and one that sent nothing, do not hold up the
      // close (it would wait for them for ever).
      const silent = net.connect(port, '127.0.0.1')
      await new Promise((resolve, reject) => silent.once('connect', resolve).once('error', reject))
      const silentEnded = new Promise((resolve) => silent.once('close', resolve))
      await platform.close()
      closed = true
      await silentEnded
    } finally {
      if (!closed) await platform.close()
    }
    expect(await canListen(port)).toBe(true)
    await expect(fetch(`${metricsUrl}/metrics`)).rejects.toThrow()
  })

  it('names what is wrong when its port is taken, and leaves nothing listening', async () => {
    const holder = net.createServer()
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
    const taken = (holder.address() as net.AddressInfo).port
    const apiPort = await freePort('127.0.0.1')
    try {
      await expect(
        startTestPlatform({ port: apiPort, metrics: { listen: `127.0.0.1:${taken}` } }),
      ).rejects.toThrow(`metrics.listen: cannot listen on 127.0.0.1:${taken}: address in use`)
      expect(await canListen(apiPort)).toBe(true)
    } finally {
      await new Promise((resolve) => holder.close(resolve))
    }
  })

  it('podyard serve --metrics-listen: named in the banner, closed on SIGTERM', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-metrics-'))
    const port = await freePort('127.0.0.1')
    const server = await startServe(
      [
        ...['--port', '0', '--data-dir', dataDir, '--log-level', 'warn', '--fleet', 'none'],
        ...['--metrics-listen', `127.0.0.1:${port}`],
      ],
      { PODYARD_ADMIN_KEY: TEST_ADMIN_KEY },
    )
    try {
      expect(server.banner).toContain(`  metrics       http://127.0.0.1:${port}/metrics   (no key`)
      const scraped = await fetch(`http://127.0.0.1:${port}/metrics`)
      expect(scraped.status).toBe(200)
      expect(await scraped.text()).toMatch(/^podyard_cluster_leader\{replica="[^"]+"\} 1$/m)
      expect((await callPlatform(server.url, '/metrics', { key: null })).status).toBe(401)
    } finally {
      server.child.kill('SIGTERM')
    }
    expect(await server.exited).toBe(0)
    // Fastify 5.12 deprecated `disableRequestLogging`: the listener printed FSTDEP023 on start.
    expect(server.stderr()).not.toMatch(/Warning|FSTDEP/)
    expect(await canListen(port)).toBe(true)
    rmSync(dataDir, { recursive: true, force: true })
  })
})
