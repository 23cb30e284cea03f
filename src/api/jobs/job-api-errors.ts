import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify'
import { PROBLEM_CONTENT_TYPE, problemOf, toAppError } from '../http/problem.js'

/**
 * Errors of the job API and the public models' routes: problem+json as everywhere, plus
 * `error`, the detail as a string. RunPod's clients read `error` (and some `message`) from a
 * failed call's body; without it a caller sees only "Unknown error" (docs/job-api.md, Errors).
 */
export function installJobApiErrors(
  app: FastifyInstance,
  /** Turns some errors into clearer ones first (a route's own wording). */
  translate: (error: FastifyError, request: FastifyRequest) => Error = (error) => error,
): void {
  app.setErrorHandler((raw: FastifyError, request, reply) => {
    const { appError, unexpected } = toAppError(translate(raw, request))
    if (unexpected) request.log.error({ err: raw }, 'unhandled error')
    const problem = problemOf(appError)
    if (appError.retryAfterSeconds !== undefined) {
      reply.header('retry-after', String(appError.retryAfterSeconds))
    }
    return reply
      .code(problem.status)
      .type(PROBLEM_CONTENT_TYPE)
      .send({ ...problem, error: problem.detail })
  })
}
