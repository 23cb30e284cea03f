import Fastify from 'fastify'
import { describe, expect, it } from 'vitest'
import { installMetrics } from './metrics.js'

describe('installMetrics', () => {
  it('counts requests by method, route pattern and status across reads of /metrics', async () => {
    const app = Fastify()
    const registry = installMetrics(app)
    app.get('/things/:id', async (request, reply) =>
      (request.params as { id: string }).id === 'missing' ? reply.code(404).send() : { ok: true },
    )
    await app.ready()
    const count = async (status: number) => {
      const text = await registry.metrics()
      const line = new RegExp(
        `^podyard_http_requests_total\\{method="GET",route="/things/:id",status="${status}"\\} (\\d+)$`,
        'm',
      ).exec(text)
      return line ? Number(line[1]) : 0
    }
    for (let i = 0; i < 3; i++) await app.inject({ method: 'GET', url: `/things/${i}` })
    await app.inject({ method: 'GET', url: '/things/missing' })
    expect(await count(200)).toBe(3)
    expect(await count(404)).toBe(1)
    await app.inject({ method: 'GET', url: '/things/4' })
    expect(await count(200)).toBe(4)
    expect(await count(200)).toBe(4)
    const text = await registry.metrics()
    expect(text).toMatch(
      /^podyard_http_request_duration_seconds_count\{method="GET",route="\/things\/:id"\} 5$/m,
    )
    await app.close()
  })
})
