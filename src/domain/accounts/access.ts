import type { ApiKey } from './account.js'

/** Who is calling: resolved from a valid API key. */
export interface Principal {
  accountId: string
  isAdmin: boolean
  key: ApiKey
}

export type AuthFailure =
  'missing' | 'malformed' | 'too-short' | 'not-a-key' | 'unknown' | 'expired' | 'revoked'

export type Authentication = { ok: true; principal: Principal } | { ok: false; reason: AuthFailure }

export const authFailureDetail: Record<AuthFailure, string> = {
  missing: 'no API key: send the header Authorization: Bearer <key>',
  malformed: 'the Authorization header is malformed: expected Bearer <key>',
  // The header is fine, the key in it is not: say so, rather than "the header is malformed".
  'too-short':
    'the API key is too short to be a podyard key (keys are pyd_ and 40 letters or digits)',
  'not-a-key':
    'the API key is not a podyard key: it has characters no key has (keys are pyd_ and 40 letters or digits)',
  unknown: 'the API key is not valid',
  expired: 'the API key has expired',
  revoked: 'the API key has been revoked',
}

/** What a request wants to do, as far as permissions are concerned. */
export interface AccessRequest {
  /** True for anything that changes state (every method but GET and HEAD, GraphQL mutations). */
  write: boolean
  /** Set on job-API and worker routes: the serverless endpoint addressed. */
  endpointId?: string
}

export type AccessDecision = { allowed: true } | { allowed: false; detail: string }

export function decideAccess(principal: Principal, request: AccessRequest): AccessDecision {
  const { key } = principal
  if (key.permission === 'RESTRICTED') {
    if (request.endpointId === undefined) {
      return {
        allowed: false,
        detail: 'this API key is restricted to the job API of specific serverless endpoints',
      }
    }
    if (!key.endpointIds.includes(request.endpointId)) {
      return {
        allowed: false,
        detail: `this API key is not allowed to use endpoint ${request.endpointId}`,
      }
    }
    return { allowed: true }
  }
  if (key.permission === 'READ_ONLY' && request.write) {
    return { allowed: false, detail: 'this API key is read-only' }
  }
  return { allowed: true }
}
