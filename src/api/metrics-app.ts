import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import type { Registry } from 'prom-client'
import { installProblemHandlers } from './http/problem.js'
import { clientErrorHandler, frameworkErrors } from './http/router-errors.js'
import { installServerClosing } from './http/server-closing.js'
import { sendMetrics } from './ops-routes.js'

/**
 * The listener of config `metrics.listen` (docs/production.md, "What to monitor"): `/metrics`
 * without a key, for a Prometheus on a private network, and nothing else (every other path is
 * 404). The operator chooses an address tenants cannot reach; the API's own `/metrics` keeps
 * taking the admin's key.
 */
export function buildMetricsApp(deps: {
  logger: FastifyBaseLogger
  metrics: Registry
}): FastifyInstance {
  const app = Fastify({
    loggerInstance: deps.logger.child({ listener: 'metrics' }),
    // A scrape every few seconds would be most of the log; errors are still logged.
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    frameworkErrors,
    clientErrorHandler,
  })
  // A scraper's keep-alive connection must not hold up the platform's close.
  installServerClosing(app)
  installProblemHandlers(app)
  app.get('/metrics', async (_request, reply) => sendMetrics(reply, deps.metrics))
  return app
}
