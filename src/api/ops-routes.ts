import type { FastifyInstance, FastifyReply } from 'fastify'
import type { Registry } from 'prom-client'
import { decideAccess } from '../domain/accounts/access.js'
import type { AccountService } from '../domain/accounts/account-service.js'
import { AppError } from '../shared/app-error.js'
import { authenticate } from './http/authentication.js'

export interface OpsDeps {
  /** Resolves when the service can serve requests (store reachable and migrated); throws otherwise. */
  readiness: () => Promise<void>
  metrics: Registry
  version: string
  /** Who may read `/metrics` here: the admin's keys. */
  accounts: AccountService
}

/**
 * Liveness, readiness and metrics, outside the OpenAPI document. `/healthz` and `/readyz` are
 * open and say nothing of accounts; `/metrics` counts every account's pods, jobs and workers,
 * so it takes the admin's key (config `metrics.listen` serves it without one on an address of
 * its own, metrics-app.ts).
 */
export async function opsRoutes(app: FastifyInstance, deps: OpsDeps): Promise<void> {
  app.get('/healthz', { schema: { hide: true } }, async () => ({
    status: 'ok',
    version: deps.version,
  }))

  app.get('/readyz', { schema: { hide: true } }, async (request) => {
    try {
      await deps.readiness()
    } catch (error) {
      request.log.warn({ err: (error as Error).cause ?? error }, 'not ready')
      throw new AppError('NOT_READY', `not ready: ${(error as Error).message}`)
    }
    return { status: 'ready' }
  })

  // Not counted against the admin's rate limit: a scrape must not fail because scripts used
  // the quota up, nor use it up itself.
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    const principal = await authenticate(deps.accounts, request, 'bearer')
    // A read: a READ_ONLY key of the admin's will do (the one to give Prometheus), a
    // RESTRICTED one (the job API of some endpoints) will not.
    const access = decideAccess(principal, { write: false })
    if (!access.allowed) throw new AppError('FORBIDDEN', access.detail)
    if (!principal.isAdmin) {
      throw new AppError('FORBIDDEN', "only the admin account may read the platform's metrics")
    }
    return sendMetrics(reply, deps.metrics)
  })
}

/** The Prometheus text of `registry`. */
export async function sendMetrics(reply: FastifyReply, registry: Registry): Promise<string> {
  reply.type(registry.contentType)
  return registry.metrics()
}
