import type { FastifyInstance } from 'fastify'
import type { Registry } from 'prom-client'
import { AppError } from '../shared/app-error.js'

export interface OpsDeps {
  /** Resolves when the service can serve requests (store reachable and migrated); throws otherwise. */
  readiness: () => Promise<void>
  metrics: Registry
  version: string
}

/** Liveness, readiness and metrics: unauthenticated, outside the OpenAPI document. */
export async function opsRoutes(app: FastifyInstance, deps: OpsDeps): Promise<void> {
  app.get('/healthz', { schema: { hide: true } }, async () => ({
    status: 'ok',
    version: deps.version,
  }))

  app.get('/readyz', { schema: { hide: true } }, async (request) => {
    try {
      await deps.readiness()
    } catch (error) {
      request.log.warn({ err: error }, 'not ready')
      throw new AppError('NOT_READY', `not ready: ${(error as Error).message}`)
    }
    return { status: 'ready' }
  })

  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.type(deps.metrics.contentType)
    return deps.metrics.metrics()
  })
}
