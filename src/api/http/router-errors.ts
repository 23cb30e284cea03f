import type { Socket } from 'node:net'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../../shared/app-error.js'
import type { ErrorCode } from '../../shared/error-codes.js'
import { PROBLEM_CONTENT_TYPE, problemOf, sendProblem } from './problem.js'
import { toAppError } from './problem.js'

/**
 * Longest path parameter (an id) the router accepts: Fastify's default. Our ids are at most 41
 * characters (a /runsync job id); a longer one is answered 414 before any route runs.
 */
export const MAX_PARAM_LENGTH = 100

const pathOf = (request: FastifyRequest) => request.raw.url?.split('?')[0] ?? ''

/**
 * Fastify's `frameworkErrors`: what its router refuses before any route or hook runs (a path
 * parameter longer than MAX_PARAM_LENGTH, a path that is not valid percent-encoding), as
 * problem+json like every other error (docs/api.md, "Errors before routing").
 */
export function frameworkErrors(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  const path = pathOf(request).slice(0, 200)
  const appError =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? new AppError(
          'URI_TOO_LONG',
          `a path segment of ${path} is longer than ${MAX_PARAM_LENGTH} characters, the longest an id can be`,
        )
      : error.code === 'FST_ERR_BAD_URL'
        ? new AppError(
            'MALFORMED_REQUEST',
            `the path ${path} is not valid percent-encoding (a % must be followed by two hex digits of UTF-8)`,
          )
        : toAppError(error).appError
  void sendProblem(reply, appError)
}

const clientErrorCodes: Record<string, { code: ErrorCode; detail: string }> = {
  HPE_HEADER_OVERFLOW: {
    code: 'HEADERS_TOO_LARGE',
    detail:
      'the request line and headers are larger than the server reads (16 KB): shorten the URL or the headers',
  },
  ERR_HTTP_REQUEST_TIMEOUT: {
    code: 'REQUEST_TIMEOUT',
    detail: 'the request did not arrive in full in time',
  },
}

/** How long a peer that was answered with an error may take to close before it is cut off. */
const CLOSE_GRACE_MS = 2_000

/**
 * Node's `clientError`: a request its HTTP parser cannot read (headers over 16 KB, a broken
 * request line, a request that times out). The answer is problem+json with `Connection: close`:
 * the connection cannot carry another request after a parse failure, and saying so lets the
 * client read the answer instead of seeing the socket drop.
 */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  if (!socket.writable) {
    socket.destroy()
    return
  }
  const known = error.code ? clientErrorCodes[error.code] : undefined
  const appError = new AppError(
    known?.code ?? 'MALFORMED_REQUEST',
    known?.detail ?? `the request could not be read as HTTP/1.1 (${error.code ?? 'parse error'})`,
  )
  const problem = problemOf(appError)
  const body = JSON.stringify(problem)
  socket.end(
    `HTTP/1.1 ${problem.status} ${problem.title}\r\n` +
      `Content-Type: ${PROBLEM_CONTENT_TYPE}\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  )
  setTimeout(() => socket.destroy(), CLOSE_GRACE_MS).unref()
}
