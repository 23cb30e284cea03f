import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { FastifyInstance } from 'fastify'

/**
 * The longest `X-Request-Id` taken from a caller. Proxies' ids (a UUID, nginx's 32 hex digits,
 * AWS's `Root=1-...` trace ids) fit well within it; a longer one is replaced, so a log line
 * cannot be made arbitrarily large by a header.
 */
export const MAX_REQUEST_ID_LENGTH = 128

/** Letters, digits and `-_.:=/+@`: nothing a log viewer or a header could take for syntax. */
const SAFE_REQUEST_ID = /^[A-Za-z0-9\-_.:=/+@]+$/

/** The caller's `X-Request-Id` when it is short and plain, else a new UUID. */
export function requestIdOf(request: IncomingMessage): string {
  const given = request.headers['x-request-id']
  if (
    typeof given === 'string' &&
    given.length > 0 &&
    given.length <= MAX_REQUEST_ID_LENGTH &&
    SAFE_REQUEST_ID.test(given)
  ) {
    return given
  }
  return randomUUID()
}

/**
 * Every answer carries its request id as `X-Request-Id` (the id in the request's log lines).
 * The OpenAI routes answer their job's id there instead, as RunPod's do (docs/job-api.md): they
 * set the header later, which wins.
 */
export function installRequestIdHeader(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    done()
  })
}
