import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ErrorObject } from 'ajv'
import { AppError, isAppError } from '../../shared/app-error.js'
import type { ErrorCode } from '../../shared/error-codes.js'
import { httpStatusOf } from './error-status.js'
import { baseUrlHint } from './reserved-paths.js'
import { describeValidationErrors } from './validation.js'

const urlPathOf = (request: FastifyRequest) => request.url.split('?')[0] ?? '/'

export const PROBLEM_CONTENT_TYPE = 'application/problem+json'

export interface ProblemBody {
  title: string
  status: number
  detail: string
  errors?: string[]
}

export function problemOf(error: AppError): ProblemBody {
  const { status, title } = httpStatusOf[error.code]
  return {
    title,
    status,
    detail: error.detail,
    ...(error.errors && error.errors.length > 0 ? { errors: error.errors } : {}),
  }
}

export function sendProblem(reply: FastifyReply, error: AppError): FastifyReply {
  const body = problemOf(error)
  if (error.retryAfterSeconds !== undefined)
    reply.header('retry-after', String(error.retryAfterSeconds))
  return reply.code(body.status).type(PROBLEM_CONTENT_TYPE).send(body)
}

const fastifyCodes: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'MALFORMED_REQUEST',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'MALFORMED_REQUEST',
  FST_ERR_CTP_BODY_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'MALFORMED_REQUEST',
}

/** Turns anything thrown by a route or by Fastify into an AppError; unknown faults become INTERNAL. */
export function toAppError(error: FastifyError | Error): {
  appError: AppError
  unexpected: boolean
} {
  if (isAppError(error)) return { appError: error, unexpected: false }
  const fastifyError = error as FastifyError & {
    validation?: ErrorObject[]
    validationContext?: string
  }
  if (fastifyError.validation) {
    const errors = describeValidationErrors(
      fastifyError.validationContext ?? 'body',
      fastifyError.validation,
    )
    return {
      appError: new AppError(
        'VALIDATION_FAILED',
        `the request failed validation: ${errors.join('; ')}`,
        {
          errors,
        },
      ),
      unexpected: false,
    }
  }
  const mapped = fastifyError.code ? fastifyCodes[fastifyError.code] : undefined
  if (mapped) return { appError: new AppError(mapped, fastifyError.message), unexpected: false }
  if (error instanceof SyntaxError || fastifyError.statusCode === 400) {
    return {
      appError: new AppError('MALFORMED_REQUEST', `malformed request: ${error.message}`),
      unexpected: false,
    }
  }
  return {
    appError: new AppError('INTERNAL', 'an unexpected error occurred; it has been logged'),
    unexpected: true,
  }
}

/**
 * problem+json for every error and unknown route; nothing leaks a stack trace. `page` may
 * answer an unknown route first: the console's client-side routes (src/api/console/).
 */
export function installProblemHandlers(
  app: FastifyInstance,
  options: {
    page?: (request: FastifyRequest, reply: FastifyReply) => FastifyReply | undefined
  } = {},
): void {
  app.setErrorHandler((error, request, reply) => {
    const { appError, unexpected } = toAppError(error as FastifyError)
    if (unexpected) request.log.error({ err: error }, 'unhandled error')
    return sendProblem(reply, appError)
  })
  app.setNotFoundHandler(
    (request, reply) =>
      options.page?.(request, reply) ??
      sendProblem(
        reply,
        new AppError(
          'ROUTE_NOT_FOUND',
          `no route for ${request.method} ${urlPathOf(request)}${baseUrlHint(urlPathOf(request))}`,
        ),
      ),
  )
}
