import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { GraphQLError } from 'graphql'
import mercurius from 'mercurius'
import { decideAccess, type Principal } from '../../domain/accounts/access.js'
import { AppError, isAppError } from '../../shared/app-error.js'
import type { ErrorCode } from '../../shared/error-codes.js'
import { jsonDeeperThan } from '../../shared/json-depth.js'
import { authenticate, countRequest, presentedKey } from '../http/authentication.js'
import type { RateLimiter } from '../http/rate-limiter.js'
import { httpStatusOf } from '../http/error-status.js'
import { toAppError } from '../http/problem.js'
import { tooDeepError } from '../http/json-nesting.js'
import { traceOriginOf } from '../http/trace-context.js'
import type { TraceOrigin } from '../../shared/tracing.js'
import { GRAPHIQL_HTML } from './graphiql-page.js'
import { MAX_DOCUMENT_TOKENS } from './document-budget.js'
import { ParsedDocuments } from './document-parse.js'
import {
  budgetContext,
  ExecutionBudget,
  MAX_EXECUTION_COST,
  MAX_KEYLESS_EXECUTION_COST,
  meterResolvers,
  STORE_READ_COST,
} from './execution-budget.js'
import { isPublicDocument } from './public-operations.js'
import { queryLimitErrors } from './query-limits.js'
import { jsonLongerThan, MAX_RESPONSE_BYTES } from './response-size.js'
import { buildResolvers, type GraphqlServices } from './resolvers.js'
import { typeDefs } from './type-defs.js'

declare module 'mercurius' {
  interface MercuriusContext {
    principal: Principal
    /** The request's span, for what it creates (pods join its trace); absent untraced. */
    trace?: TraceOrigin
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
 * The AppError a non-GraphQL error stands for: a resolver's own, or one Fastify raised before
 * the request ran (a body that is not JSON, too large, nested too deep); undefined for a fault.
 */
function appErrorOf(original: unknown): AppError | undefined {
  if (isAppError(original)) return original
  if (
    !(original instanceof Error) ||
    original instanceof GraphQLError ||
    Array.isArray((original as { errors?: unknown }).errors)
  ) {
    return undefined
  }
  const { appError, unexpected } = toAppError(original)
  return unexpected ? undefined : appError
}

/**
 * A resolver's AppError becomes `{message, path, extensions: {code}}` (wire-compat §6.1), and so
 * does an error Fastify raised before the request ran; any other fault is logged and answered
 * as INTERNAL without its message, which may hold internals. A new error without
 * `originalError` also keeps mercurius from reading AppError's `errors` list as a list of
 * GraphQL errors.
 */
function graphqlErrorOf(error: GraphQLError, app: FastifyInstance): GraphQLError {
  const original = error.originalError
  const rebuilt = (message: string, extensions: Record<string, unknown>) =>
    new GraphQLError(message, {
      ...(error.nodes ? { nodes: error.nodes } : {}),
      ...(error.path ? { path: error.path } : {}),
      extensions: { ...error.extensions, ...extensions },
    })
  const appError = appErrorOf(original)
  if (appError) {
    return rebuilt(appError.detail, {
      code: appError.code,
      ...(appError.errors ? { errors: appError.errors } : {}),
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

/**
 * The document, operation name and (GET) JSON parameters of a request, as mercurius reads
 * them: a GET's `variables` and `extensions` are JSON text in the query string.
 */
function requestOf(request: FastifyRequest): {
  query: unknown
  operationName: unknown
  jsonParameters: Array<[string, unknown]>
} {
  const source = (request.method === 'GET' ? request.query : request.body) as unknown
  if (typeof source === 'string') {
    return { query: source, operationName: undefined, jsonParameters: [] }
  }
  if (source === null || typeof source !== 'object') {
    return { query: undefined, operationName: undefined, jsonParameters: [] }
  }
  const { query, operationName, variables, extensions } = source as Record<string, unknown>
  return {
    query,
    operationName,
    jsonParameters:
      request.method === 'GET'
        ? [
            ['variables', variables],
            ['extensions', extensions],
          ]
        : [],
  }
}

/**
 * The largest body `/graphql` reads. The largest documents real clients send are a few KB
 * (runpod-python inlines a template's readme and env); a keyless caller must not make the
 * server parse 20 MB of JSON and then of GraphQL.
 */
export const GRAPHQL_BODY_LIMIT = 1024 * 1024

/** A document refused before it runs: over its budget or its limits, or not GraphQL (HTTP 400). */
function sendDocumentErrors(reply: FastifyReply, errors: readonly GraphQLError[]): FastifyReply {
  return reply
    .code(400)
    .type('application/json')
    .send({ data: null, errors: errors.map((error) => error.toJSON()) })
}

/** The answer that replaces one that went over a limit while it ran (errors[], HTTP 400). */
function refusedAnswer(reply: FastifyReply, code: ErrorCode, message: string) {
  reply.code(httpStatusOf[code].status)
  return { data: null, errors: [{ message, extensions: { code } }] }
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
    const budgets = new WeakMap<FastifyRequest, ExecutionBudget>()
    const documents = new ParsedDocuments(queryLimitErrors)

    api.addHook('preHandler', async (request: FastifyRequest, reply: FastifyReply) => {
      const { query, operationName, jsonParameters } = requestOf(request)
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
      // A posted body went through the JSON body parser's nesting check; a GET's is text.
      for (const [name, text] of jsonParameters) {
        if (typeof text === 'string' && jsonDeeperThan(text)) {
          return sendGraphqlError(reply, tooDeepError(name))
        }
      }
      // The document's budget (document-budget.ts) comes first, key or no key: a document over
      // it is answered at once, with nothing parsed or walked and no key looked up. Then it is
      // parsed here, so that one that does not parse is answered as a syntax error: mercurius
      // would try it as a JSON-encoded syntax tree.
      const parsed = typeof query === 'string' ? documents.parse(query) : undefined
      if (parsed?.ok === false && parsed.overBudget) {
        return sendDocumentErrors(reply, [parsed.error])
      }
      // Without any key, only the public catalog queries run (public-operations.ts); the
      // resolvers of every other field also refuse a request without a principal.
      const keyless = presentedKey(request, 'bearer-or-query') === undefined
      if (!(keyless && parsed?.ok === true && isPublicDocument(parsed.document, operationName))) {
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
      }
      if (parsed?.ok === false) return sendDocumentErrors(reply, [parsed.error])
      // The field and depth limits (query-limits.ts), in one linear pass, before graphql-js's
      // validation: some of its rules are quadratic in the fields of a document.
      const overLimits = parsed ? documents.overLimits(query as string, parsed.document) : []
      if (overLimits.length > 0) return sendDocumentErrors(reply, overLimits)
    })

    // An answer is refused, with errors[], when running it went over the execution budget or
    // when it would be longer than MAX_RESPONSE_BYTES (docs/graphql.md, "Limits").
    api.addHook(
      'preSerialization',
      async (request: FastifyRequest, reply: FastifyReply, payload) => {
        const budget = budgets.get(request)
        if (budget?.exceeded) {
          return refusedAnswer(
            reply,
            'QUERY_TOO_EXPENSIVE',
            `this request costs more than ${budget.limit} to run${budget.limit === MAX_KEYLESS_EXECUTION_COST ? ' without an API key' : ''} (each field value resolved costs 1, each read of the store ${STORE_READ_COST}): select fewer fields or fewer lists, or split it into smaller documents`,
          )
        }
        if (jsonLongerThan(payload, MAX_RESPONSE_BYTES)) {
          return refusedAnswer(
            reply,
            'RESPONSE_TOO_LARGE',
            `the answer would be larger than ${MAX_RESPONSE_BYTES / (1024 * 1024)} MiB, the most one response carries: select fewer fields, or split the request`,
          )
        }
        return payload
      },
    )

    await api.register(mercurius, {
      schema: typeDefs,
      resolvers: buildResolvers(services),
      path: '/graphql',
      graphiql: false,
      // The field and depth limits were checked in the preHandler; the budget's token bound
      // stays on mercurius's own parse of the same text.
      graphql: { parseOptions: { maxTokens: MAX_DOCUMENT_TOKENS } },
      additionalRouteOptions: { bodyLimit: GRAPHQL_BODY_LIMIT },
      // principal is undefined only for the public catalog queries, which never read it.
      context: (request: FastifyRequest) => {
        // A request without a key has a smaller budget: it ran before any key was asked for.
        const budget = new ExecutionBudget(
          request.principal ? MAX_EXECUTION_COST : MAX_KEYLESS_EXECUTION_COST,
        )
        budgets.set(request, budget)
        const trace = traceOriginOf(request)
        return {
          principal: request.principal!,
          ...(trace ? { trace } : {}),
          ...budgetContext(budget),
        }
      },
      errorFormatter: (execution, context) => {
        const formatted = mercurius.defaultErrorFormatter(
          { ...execution, errors: execution.errors?.map((error) => graphqlErrorOf(error, api)) },
          context,
        )
        // A request that failed before it ran (its body) answers with that error's status.
        const [only, ...others] = execution.errors ?? []
        const early = !execution.data && others.length === 0 && appErrorOf(only?.originalError)
        return early ? { ...formatted, statusCode: httpStatusOf[early.code].status } : formatted
      },
    })
    meterResolvers(api.graphql.schema)
  })
}
