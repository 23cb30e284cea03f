import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import mercurius, { type IResolvers } from 'mercurius'
import { decideAccess, type Principal } from '../../domain/accounts/access.js'
import type { AccountService } from '../../domain/accounts/account-service.js'
import { AppError, isAppError } from '../../shared/app-error.js'
import type { ErrorCode } from '../../shared/error-codes.js'
import { authenticate } from '../http/authentication.js'
import { httpStatusOf } from '../http/error-status.js'
import { typeDefs } from './type-defs.js'

declare module 'mercurius' {
  interface MercuriusContext {
    principal: Principal
  }
}

/**
 * Failures before execution answer like a GraphQL server (`errors[]`), with the HTTP status
 * RunPod's clients check: runpod-python raises its AuthenticationError on 401.
 */
function sendGraphqlError(reply: FastifyReply, code: ErrorCode, message: string): FastifyReply {
  return reply
    .code(httpStatusOf[code].status)
    .type('application/json')
    .send({ data: null, errors: [{ message, extensions: { code } }] })
}

export async function graphqlRoutes(
  app: FastifyInstance,
  { accounts }: { accounts: AccountService },
): Promise<void> {
  app.addHook('preHandler', async (request: FastifyRequest, reply: FastifyReply) => {
    try {
      request.principal = await authenticate(accounts, request, 'bearer-or-query')
    } catch (error) {
      if (isAppError(error)) return sendGraphqlError(reply, error.code, error.detail)
      throw error
    }
    const access = decideAccess(request.principal, { write: false })
    if (!access.allowed) return sendGraphqlError(reply, 'FORBIDDEN', access.detail)
  })

  const resolvers: IResolvers = {
    Query: {
      myself: async (_root, _args, { principal }) => {
        const user = await accounts.primaryUser(principal.accountId)
        if (!user) throw new AppError('NOT_FOUND', 'account not found')
        return { id: principal.accountId, email: user.email }
      },
    },
  }

  await app.register(mercurius, {
    schema: typeDefs,
    resolvers,
    path: '/graphql',
    graphiql: false,
    context: (request: FastifyRequest) => ({ principal: request.principal! }),
    errorFormatter: (execution, context) => {
      const formatted = mercurius.defaultErrorFormatter(execution, context)
      const errors = formatted.response.errors?.map((error) => {
        const original = (error as { originalError?: unknown }).originalError
        if (!isAppError(original)) return error
        return {
          ...error,
          message: original.detail,
          extensions: { ...error.extensions, code: original.code },
        }
      })
      return { statusCode: formatted.statusCode, response: { ...formatted.response, errors } }
    },
  })
}
