import type { FastifyInstance } from 'fastify'
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client'

/** Prometheus metrics of one app instance (a registry per app, so tests can build many). */
export function installMetrics(app: FastifyInstance): Registry {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, prefix: 'podyard_' })
  const requests = new Counter({
    name: 'podyard_http_requests_total',
    help: 'HTTP requests served, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  })
  const duration = new Histogram({
    name: 'podyard_http_request_duration_seconds',
    help: 'HTTP request duration, by method and route pattern',
    labelNames: ['method', 'route'] as const,
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
    registers: [registry],
  })
  app.addHook('onResponse', async (request, reply) => {
    // The route pattern, not the URL, keeps label cardinality bounded.
    const route = request.routeOptions.url ?? 'unmatched'
    requests.inc({ method: request.method, route, status: String(reply.statusCode) })
    duration.observe({ method: request.method, route }, reply.elapsedTime / 1000)
  })
  return registry
}
