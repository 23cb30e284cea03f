import type { FastifyReply, FastifyRequest } from 'fastify'
import { authFailureDetail, decideAccess, type Principal } from '../../domain/accounts/access.js'
import type { AccountService } from '../../domain/accounts/account-service.js'
import { isWorkerKey, WORKER_KEY_ELSEWHERE_DETAIL } from '../../domain/serverless/worker-keys.js'
import { AppError } from '../../shared/app-error.js'
import { rateLimitHeader, type RateLimiter } from './rate-limiter.js'

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal
  }
}

export type KeySource =
  /** REST: only `Authorization: Bearer <key>`. */
  | 'bearer'
  /** Job API: Bearer, or the raw key as RunPod's docs' curl examples send it. */
  | 'bearer-or-raw'
  /** GraphQL: Bearer, or `?api_key=<key>`. */
  | 'bearer-or-query'

/** The key a request presents, `null` when the header is there but unusable. */
export function presentedKey(
  request: FastifyRequest,
  source: KeySource,
): string | undefined | null {
  const header = request.headers.authorization
  if (header !== undefined && header !== '') {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header)
    if (match) return match[1]
    if (source === 'bearer-or-raw' && /^\S+$/.test(header) && !/^bearer$/i.test(header))
      return header
    return null
  }
  if (source === 'bearer-or-query') {
    const query = request.query as Record<string, unknown> | undefined
    const apiKey = query?.api_key
    if (typeof apiKey === 'string') return apiKey === '' ? null : apiKey
  }
  return undefined
}

export async function authenticate(
  accounts: AccountService,
  request: FastifyRequest,
  source: KeySource,
): Promise<Principal> {
  const key = presentedKey(request, source)
  // `?api_key=` is no header: an empty one is named as the parameter, never "the header".
  const fromQuery =
    source === 'bearer-or-query' &&
    (request.headers.authorization === undefined || request.headers.authorization === '')
  if (key === null) {
    throw new AppError(
      'UNAUTHENTICATED',
      fromQuery
        ? 'the api_key parameter is empty: send ?api_key=<key>'
        : authFailureDetail.malformed,
    )
  }
  // Worker keys are checked by the worker routes alone; anywhere else they are no API key.
  if (key !== undefined && isWorkerKey(key)) {
    throw new AppError('UNAUTHENTICATED', WORKER_KEY_ELSEWHERE_DETAIL)
  }
  const result = await accounts.authenticate(key)
  if (!result.ok) {
    throw new AppError('UNAUTHENTICATED', authFailureDetail[result.reason])
  }
  return result.principal
}

export interface GuardOptions {
  accounts: AccountService
  rateLimiter: RateLimiter
}

/**
 * The REST guard, in the order the spec's statuses imply: an unauthenticated caller gets 401
 * (and no rate-limit headers); an authenticated one is counted and always sees RateLimit
 * headers, then gets 429 if over quota, then 403 if the key lacks the permission.
 */
/**
 * Counts one request of the account: sets the RateLimit headers and throws RATE_LIMITED (with
 * its Retry-After) when a window is exhausted. REST and GraphQL share the account's windows.
 */
export function countRequest(rateLimiter: RateLimiter, accountId: string, reply: FastifyReply) {
  const decision = rateLimiter.consume(accountId)
  reply.header('ratelimit', rateLimitHeader(decision.windows))
  reply.header('ratelimit-policy', rateLimiter.policyHeader)
  if (!decision.allowed && decision.exhausted) {
    const w = decision.exhausted
    throw new AppError(
      'RATE_LIMITED',
      `rate limit exceeded for the ${w.name} window (${w.quota} requests per ${w.windowSeconds} s); retry in ${w.resetSeconds} s`,
      { retryAfterSeconds: w.resetSeconds },
    )
  }
}

export function restGuard({ accounts, rateLimiter }: GuardOptions) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const principal = await authenticate(accounts, request, 'bearer')
    request.principal = principal
    countRequest(rateLimiter, principal.accountId, reply)
    const access = decideAccess(principal, { write: !['GET', 'HEAD'].includes(request.method) })
    if (!access.allowed) throw new AppError('FORBIDDEN', access.detail)
  }
}

/** The principal of a guarded route; a route reached without one is a wiring bug. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal)
    throw new Error(`route ${request.url} is not behind an authentication guard`)
  return request.principal
}
