import type { FastifyInstance } from 'fastify'
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'

/**
 * The routes that wait for something to happen (long polls, server-sent events): their duration
 * is how long the client chose to wait, not how fast the server answered, so they stay out of
 * the request-duration histogram (they are counted all the same).
 */
export const WAITING_ROUTE =
  /\/(runsync|status-sync|stream|job-take|job-take-batch|job-stop|logs)(\/|$)|\/openai\//

/**
 * HTTP and process metrics of one app, in `registry` (a new one when not given, so that tests
 * can build many apps).
 */
export function installMetrics(app: FastifyInstance, registry = new Registry()): Registry {
  installRuntimeMetrics(registry)
  const series = new RequestSeries()
  new Counter({
    name: 'podyard_http_requests_total',
    help: 'HTTP requests served, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
    // Requests are counted in plain numbers per series and handed to prom-client when /metrics
    // is read: its `inc` builds a label hash on every call (bench/README.md, step 18).
    collect() {
      series.flushCounts((labels, count) => this.inc(labels, count))
    },
  })
  const duration = new Histogram({
    name: 'podyard_http_request_duration_seconds',
    help: 'HTTP request duration, by method and route pattern',
    labelNames: ['method', 'route'] as const,
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
    registers: [registry],
  })
  app.addHook('onResponse', (request, reply, done) => {
    // The route pattern, not the URL, keeps label cardinality bounded.
    const route = series.route(request.routeOptions.url ?? 'unmatched', request.method)
    const status = route.status(reply.statusCode)
    status.pending += 1
    if (!route.waits) duration.observe(route.labels, reply.elapsedTime / 1000)
    done()
  })
  return registry
}

/**
 * prom-client's gauges that end in `_total`, which the exposition format keeps for counters
 * (`promtool check metrics` refuses them): each is the sum of its per-type gauge of the same
 * name without the suffix (`sum(nodejs_active_handles)`).
 */
const TOTAL_GAUGES = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
]

/**
 * The process and Node.js runtime metrics under their standard names (`process_cpu_seconds_total`,
 * `nodejs_eventloop_lag_seconds`, ...), without a prefix, so that stock Node.js dashboards and
 * alerts read them as they read any other service's.
 */
export function installRuntimeMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry })
  for (const name of TOTAL_GAUGES) registry.removeSingleMetric(name)
}

/** A `podyard_http_requests_total` series: its labels, and the requests not yet counted. */
interface StatusSeries {
  readonly labels: { method: string; route: string; status: string }
  pending: number
}

/** The series of one route and method, found without building a string per request. */
class RouteSeries {
  readonly labels: { method: string; route: string }
  readonly statuses = new Map<number, StatusSeries>()
  /** A long poll or an event stream (WAITING_ROUTE): left out of the duration histogram. */
  readonly waits: boolean

  constructor(
    method: string,
    route: string,
    private readonly all: StatusSeries[],
  ) {
    this.labels = { method, route }
    this.waits = WAITING_ROUTE.test(route)
  }

  status(code: number): StatusSeries {
    let found = this.statuses.get(code)
    if (found === undefined) {
      found = { labels: { ...this.labels, status: String(code) }, pending: 0 }
      this.statuses.set(code, found)
      this.all.push(found)
    }
    return found
  }
}

class RequestSeries {
  private readonly routes = new Map<string, Map<string, RouteSeries>>()
  private readonly statuses: StatusSeries[] = []

  route(route: string, method: string): RouteSeries {
    let byMethod = this.routes.get(route)
    if (byMethod === undefined) {
      byMethod = new Map()
      this.routes.set(route, byMethod)
    }
    let found = byMethod.get(method)
    if (found === undefined) {
      found = new RouteSeries(method, route, this.statuses)
      byMethod.set(method, found)
    }
    return found
  }

  flushCounts(add: (labels: StatusSeries['labels'], count: number) => void): void {
    for (const series of this.statuses) {
      if (series.pending === 0) continue
      add(series.labels, series.pending)
      series.pending = 0
    }
  }
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

/**
 * `podyard_hosts{state}`: the fleet's hosts by probed state (UP, DEGRADED, DOWN, UNKNOWN before the first
 * probe), and `podyard_hosts_schedule{schedule}`: by schedule (ACTIVE, CORDONED, DRAINING).
 * Every state is reported, 0 included, so that an alert on DOWN > 0 has a series to read.
 */
export function installHostMetrics(
  registry: Registry,
  hosts: { states(): Array<{ state: string; schedule: string }> },
): void {
  new Gauge({
    name: 'podyard_hosts',
    help: "The fleet's hosts by state: UP, DEGRADED (a GPU withdrawn), DOWN, or UNKNOWN before their first probe",
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const states = hosts.states()
      for (const state of ['UP', 'DEGRADED', 'DOWN', 'UNKNOWN'])
        this.set({ state }, states.filter((h) => h.state === state).length)
    },
  })
  new Gauge({
    name: 'podyard_hosts_schedule',
    help: "The fleet's hosts by schedule: ACTIVE, CORDONED (no new placements), DRAINING",
    labelNames: ['schedule'] as const,
    registers: [registry],
    collect() {
      const states = hosts.states()
      for (const schedule of ['ACTIVE', 'CORDONED', 'DRAINING'])
        this.set({ schedule }, states.filter((h) => h.schedule === schedule).length)
    },
  })
}
