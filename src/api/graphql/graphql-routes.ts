import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { GraphQLError } from 'graphql'
import mercurius from 'mercurius'
import { decideAccess, type Principal } from '../../domain/accounts/access.js'
import { AppError, isAppError } from '../../shared/app-error.js'
import { authenticate, countRequest, presentedKey } from '../http/authentication.js'
import type { RateLimiter } from '../http/rate-limiter.js'
import { httpStatusOf } from '../http/error-status.js'
import { GRAPHIQL_HTML } from './graphiql-page.js'
import { isPublicRequest } from './public-operations.js'
import { queryLimitsRule } from './query-limits.js'
import { buildResolvers, type GraphqlServices } from './resolvers.js'
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
function sendGraphqlError(reply: FastifyReply, error: AppError): FastifyReply {
  const { code, detail: message } = error
  if (error.retryAfterSeconds !== undefined) {
    reply.header('retry-after', String(error.retryAfterSeconds))
  }
  return reply
    .code(httpStatusOf[code].status)
    .type('application/json')
    .send({ data: null, errors: [{ message, extensions: { code } }] })
}

/**
 * A resolver's AppError becomes `{message, path, extensions: {code}}` (wire-compat §6.1); any
 * other fault is logged and answered as INTERNAL without its message, which may hold internals.
 * A new error without `originalError` also keeps mercurius from reading AppError's `errors`
 * list as a list of GraphQL errors.
 */
function graphqlErrorOf(error: GraphQLError, app: FastifyInstance): GraphQLError {
  const original = error.originalError
  const rebuilt = (message: string, extensions: Record<string, unknown>) =>
    new GraphQLError(message, {
      ...(error.nodes ? { nodes: error.nodes } : {}),
      ...(error.path ? { path: error.path } : {}),
      extensions: { ...error.extensions, ...extensions },
    })
  if (isAppError(original)) {
    return rebuilt(original.detail, {
      code: original.code,
      ...(original.errors ? { errors: original.errors } : {}),
    })
  }
  if (
    original instanceof Error &&
    !(original instanceof GraphQLError) &&
    !Array.isArray((original as { errors?: unknown }).errors)
  ) {
    app.log.error({ err: original, path: error.path }, 'GraphQL resolver failed')
    return rebuilt('internal error: the server log has the details', { code: 'INTERNAL' })
  }
  return error
}

/** The document and operation name of a request, as mercurius reads them for GET and POST. */
function queryOf(request: FastifyRequest): [unknown, unknown] {
  const source = (request.method === 'GET' ? request.query : request.body) as unknown
  if (typeof source === 'string') return [source, undefined]
  if (source === null || typeof source !== 'object') return [undefined, undefined]
  const { query, operationName } = source as { query?: unknown; operationName?: unknown }
  return [query, operationName]
}

/** `/graphql` (authenticated, but for the public catalog queries) and the `/graphiql` console (a page; its queries need a key). */
export async function graphqlRoutes(
  app: FastifyInstance,
  services: GraphqlServices & { rateLimiter: RateLimiter },
): Promise<void> {
  app.get('/graphiql', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/html; charset=utf-8').send(GRAPHIQL_HTML),
  )
  app.get('/graphiql/schema.graphql', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/plain; charset=utf-8').send(typeDefs),
  )

  await app.register(async (api) => {
    api.addHook('preHandler', async (request: FastifyRequest, reply: FastifyReply) => {
      const [query, operationName] = queryOf(request)
      // Nothing to run: say so, key or not (mercurius would fail on it with an internal error).
      if (
        request.url.split('?')[0] === '/graphql' &&
        (typeof query !== 'string' || query.trim() === '')
      ) {
        return sendGraphqlError(
          reply,
          new AppError(
            'MALFORMED_REQUEST',
            'no GraphQL query: send {"query": "<GraphQL document>"} (POST) or ?query= (GET)',
          ),
        )
      }
      // Without any key, only the public catalog queries run (public-operations.ts); the
      // resolvers of every other field also refuse a request without a principal.
      if (
        presentedKey(request, 'bearer-or-query') === undefined &&
        isPublicRequest(query, operationName)
      ) {
        return
      }
      try {
        request.principal = await authenticate(services.accounts, request, 'bearer-or-query')
        countRequest(services.rateLimiter, request.principal.accountId, reply)
        // Mutations are checked for write permission one by one (resolvers.ts).
        const access = decideAccess(request.principal, { write: false })
        if (!access.allowed) throw new AppError('FORBIDDEN', access.detail)
      } catch (error) {
        if (isAppError(error)) return sendGraphqlError(reply, error)
        throw error
      }
    })

    await api.register(mercurius, {
      schema: typeDefs,
      resolvers: buildResolvers(services),
      path: '/graphql',
      graphiql: false,
      validationRules: [queryLimitsRule],
      // principal is undefined only for the public catalog queries, which never read it.
      context: (request: FastifyRequest) => ({ principal: request.principal! }),
      errorFormatter: (execution, context) =>
        mercurius.defaultErrorFormatter(
          { ...execution, errors: execution.errors?.map((error) => graphqlErrorOf(error, api)) },
          context,
        ),
    })
  })
}
