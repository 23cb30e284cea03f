import type { FastifyInstance } from 'fastify'
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'

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

/**
 * `podyard_cluster_leader{replica}`: 1 on the replica that runs the reconcile loops (it holds
 * the leader lease; docs/production.md), 0 on the others. Summed over the replicas it must be 1.
 * With several replicas, `podyard_cluster_listening`: 0 while the connection that hears the
 * other replicas' wake-ups is down (long polls then see their writes up to a second late).
 */
export function installClusterMetrics(
  registry: Registry,
  cluster: { replicaId: string; isLeader(): boolean; listening?: () => boolean },
): void {
  const listening = cluster.listening
  if (listening) {
    new Gauge({
      name: 'podyard_cluster_listening',
      help: "Whether this replica hears the other replicas' wake-ups (PostgreSQL LISTEN): 1 or 0",
      registers: [registry],
      collect() {
        this.set(listening() ? 1 : 0)
      },
    })
  }
  new Gauge({
    name: 'podyard_cluster_leader',
    help: 'Whether this replica leads the cluster (runs the reconcile loops): 1 or 0',
    labelNames: ['replica'] as const,
    registers: [registry],
    collect() {
      this.set({ replica: cluster.replicaId }, cluster.isLeader() ? 1 : 0)
    },
  })
}
