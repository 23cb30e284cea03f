import createClient from 'openapi-fetch'
import type { paths } from './generated/openapi'
import { apiErrorOf } from './problem'

/**
 * The typed client of the REST API, generated from the server's own `/v2/openapi.json` at
 * build time (console/scripts/build-console.ts): paths, parameters, bodies and answers are
 * checked by the compiler, so the console cannot drift from the server.
 */
export type ApiClient = ReturnType<typeof createClient<paths>>

export interface ClientOptions {
  apiKey: string
  /** Called when a call answers 401: the key was revoked or expired meanwhile. */
  onUnauthorized?: () => void
}

/** Same origin: the console is served by the server whose API it calls (no CORS). */
export function createApiClient({ apiKey, onUnauthorized }: ClientOptions): ApiClient {
  const client = createClient<paths>({ baseUrl: window.location.origin })
  client.use({
    onRequest({ request }) {
      request.headers.set('authorization', `Bearer ${apiKey}`)
      return request
    },
    onResponse({ response }) {
      if (response.status === 401) onUnauthorized?.()
      return response
    },
  })
  return client
}

/**
 * The data of an openapi-fetch answer, or its problem+json as an ApiError. Every call of the
 * console goes through this: `await ok(api.GET('/v2/pods'))`.
 */
export async function ok<T>(
  call: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  const { data, error, response } = await call
  if (!response.ok) throw apiErrorOf(response, error)
  return data as T
}
