import type { FastifyRequest, RouteOptions } from 'fastify'
import type { AccountService } from '../../domain/accounts/account-service.js'
import { AppError } from '../../shared/app-error.js'
import { principalOf } from '../http/authentication.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route is the admin's: anyone else is refused with 403 "only the admin account may
     * <adminOnly>" before the request's body, query or path is read.
     */
    adminOnly?: string
  }
}

/** The `config` of an admin-only route; `what` ends the refusal "only the admin account may …". */
export const adminOnly = (what: string) => ({ adminOnly: what })

/**
 * onRequest, after the REST guard: refuses a member an admin route before Fastify parses and
 * validates the request, so that a validation error (422) never tells a member what an admin
 * route's schema takes; valid or not, a member's request gets the same 403.
 */
export async function refuseAdminRouteToMember(request: FastifyRequest): Promise<void> {
  const what = request.routeOptions.config.adminOnly
  if (what !== undefined && !principalOf(request).isAdmin) {
    throw new AppError('FORBIDDEN', `only the admin account may ${what}`)
  }
}

/** onRoute: a route under `/admin/` that is not marked admin-only is a wiring bug. */
export function requireAdminRoutesMarked(route: RouteOptions): void {
  if (/\/admin(\/|$)/.test(route.url) && route.config?.adminOnly === undefined) {
    throw new Error(`route ${route.method} ${route.url} is under /admin/ but not adminOnly`)
  }
}

/** The id of the account that `idOrEmail` names (an admin route's `:accountId`); 404 if none. */
export async function accountIdNamed(accounts: AccountService, idOrEmail: string): Promise<string> {
  const account = await accounts.findAccount(idOrEmail)
  if (!account) throw new AppError('NOT_FOUND', `account ${idOrEmail} not found`)
  return account.id
}
