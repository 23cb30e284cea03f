import type { SwaggerOptions } from '@fastify/swagger'
import { Type } from '@sinclair/typebox'
import type { FastifySchema } from 'fastify'
import { PROBLEM_CONTENT_TYPE } from '../http/problem.js'
import { hoistComponentSchemas } from './component-schemas.js'
import { withComponentTitles } from './component-names.js'
import { addExamples } from './examples.js'
import { describeOperations } from './operation-texts.js'
import { nameDocumentShapes } from './schema-names.js'

/** The URL a server with the default settings answers at (config `host` and `port`). */
export const DEFAULT_BASE_URL = 'http://localhost:8080'

/**
 * Generated clients take the first server as their default base URL ('/' is none: Node's fetch
 * refuses it), so the default server's comes first; the second is the one to fill in with the
 * real URL. The docs page adds its own origin in front (docs-page.ts).
 */
export const OPENAPI_SERVERS = [
  { url: DEFAULT_BASE_URL, description: 'a podyard server with the default settings' },
  {
    url: '{baseUrl}',
    description: 'your podyard server',
    variables: {
      baseUrl: {
        default: DEFAULT_BASE_URL,
        description: 'its scheme, host and port, e.g. https://podyard.example.com',
      },
    },
  },
]

/** The document's sections, in the order the docs page shows them. */
export const OPENAPI_TAGS = [
  { name: 'Account', description: 'The caller: account, SSH keys, API keys' },
  { name: 'Catalog', description: 'GPU and CPU types, data centers, templates, public models' },
  { name: 'Pods', description: 'Long-running containers on GPUs or CPUs, their actions and logs' },
  { name: 'Templates', description: 'Reusable pod and endpoint settings' },
  { name: 'Network Volumes', description: 'Storage shared by the pods of a data center' },
  { name: 'Registries', description: 'Credentials of private container registries' },
  { name: 'Secrets', description: 'Account secrets that env values refer to, never returned' },
  { name: 'Serverless', description: 'Queue-based endpoints, their workers and worker keys' },
  { name: 'Clusters', description: 'Groups of pods placed together' },
  { name: 'Billing', description: 'Spend by resource and time window' },
  { name: 'Admin', description: 'Operator routes: credits, billing settings, hosts' },
  {
    name: 'Job API',
    description:
      'Jobs of a serverless endpoint at `/v2/<endpoint_id>/...`: what runpod-python, runpod-sdk (JS) and curl call. Keys as `Authorization: Bearer <key>` or the raw key.',
  },
  {
    name: 'Public models',
    description:
      'Models any account may call: the job API routes with a model id (`GET /v2/catalog/models`) in place of the endpoint id, and the signed URLs of their results.',
  },
  {
    name: 'Worker protocol',
    description:
      "What a worker calls to take jobs and report results (runpod-python's worker loop or podyard/worker), with the endpoint's worker key raw in `Authorization`. Not for API users.",
  },
]

/** Routes served for other readers: GraphQL has its own schema (`/graphiql/schema.graphql`). */
const UNDOCUMENTED = /^\/(graphql|graphiql)(\/|$)/

const ObjectKey = Type.Object({
  key: Type.String({ description: 'the object key of the signed URL (may hold `/`)' }),
})

/** A route's schema as the document shows it (see FastifySchema.documented). */
export function documentedRoute({ schema, url }: { schema?: FastifySchema; url: string }): {
  schema: FastifySchema
  url: string
} {
  if (UNDOCUMENTED.test(url)) return { schema: { ...schema, hide: true }, url }
  if (schema === undefined) return { schema: {}, url }
  const { documented, ...rest } = withComponentTitles(schema)
  const shown: FastifySchema = {
    ...rest,
    ...documented,
    ...(rest.response || documented?.response
      ? { response: { ...(rest.response as object), ...documented?.response } }
      : {}),
  }
  // `*` is no parameter name OpenAPI knows: the signed object URLs name theirs.
  if (url === '/v2/objects/*')
    return { schema: { ...shown, params: ObjectKey }, url: '/v2/objects/:key' }
  return { schema: shown, url }
}

type Operation = Record<string, unknown> & { operationId?: string; summary?: string }
type PathItem = Record<string, Operation>

/**
 * `/v2/<endpoint_id>/openai/v1/*` is one route; the document shows the three OpenAI paths
 * clients call through it, each with its own operation (other paths under it reach the worker
 * as `openai_route` all the same).
 */
function splitOpenAIRoutes(paths: Record<string, PathItem>): void {
  const wildcard = '/v2/{endpointId}/openai/v1/{*}'
  const item = paths[wildcard]
  if (item === undefined) return
  delete paths[wildcard]
  const post = item.post
  const get = item.get
  const withoutStar = (operation: Operation): Operation => ({
    ...operation,
    parameters: ((operation.parameters as Array<{ name: string }> | undefined) ?? []).filter(
      (p) => p.name !== '*',
    ),
  })
  if (post) {
    paths['/v2/{endpointId}/openai/v1/chat/completions'] = {
      post: {
        ...withoutStar(post),
        operationId: 'openaiChatCompletions',
        summary: 'OpenAI chat completion: JSON, or server-sent events with "stream": true',
      },
    }
    paths['/v2/{endpointId}/openai/v1/completions'] = {
      post: {
        ...withoutStar(post),
        operationId: 'openaiCompletions',
        summary: 'OpenAI (legacy) text completion',
      },
    }
  }
  if (get) {
    paths['/v2/{endpointId}/openai/v1/models'] = {
      get: {
        ...withoutStar(get),
        operationId: 'openaiModels',
        summary: "The models the worker serves, in OpenAI's list shape",
      },
    }
  }
}

/**
 * Errors go out as application/problem+json (src/api/http/problem.ts), while @fastify/swagger
 * writes every answer as application/json: each answer whose body is the Problem schema is
 * declared with the media type it is sent with, so that a client choosing its parser by the
 * content type finds it in the document (test/api/openapi-content-types.test.ts).
 */
function declareProblemMediaType(paths: Record<string, PathItem>): void {
  for (const item of Object.values(paths)) {
    for (const operation of Object.values(item)) {
      const responses = (operation.responses ?? {}) as Record<
        string,
        { content?: Record<string, { schema?: { $ref?: string } }> }
      >
      for (const response of Object.values(responses)) {
        const json = response.content?.['application/json']
        if (json?.schema?.$ref === '#/components/schemas/Problem') {
          response.content = { [PROBLEM_CONTENT_TYPE]: json }
        }
      }
    }
  }
}

/** @fastify/swagger's options: the served document at /v2/openapi.json. */
export function openapiOptions(version: string): SwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'podyard API',
        // RunPod's API version, which podyard's routes follow; podyard's own is in the text.
        version: '2.0.0',
        summary: "Self-hosted compute that speaks RunPod's API",
        description: [
          `podyard ${version}: the REST API (\`/v2\`), the serverless job API, public models and the worker protocol.`,
          'Errors are `application/problem+json`: `title`, `status`, `detail`, and `errors` (one line per problem).',
          'GraphQL is served at `/graphql` with its own schema (`/graphiql/schema.graphql`).',
        ].join('\n\n'),
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      servers: OPENAPI_SERVERS,
      tags: OPENAPI_TAGS,
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'an API key (`pyd_...`)' },
          workerKey: {
            type: 'apiKey',
            in: 'header',
            name: 'Authorization',
            description: "the endpoint's worker key, raw (`Bearer <key>` is accepted too)",
          },
        },
      },
      security: [{ bearer: [] }],
    },
    refResolver: {
      buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`),
    },
    transform: documentedRoute as unknown as NonNullable<
      Extract<SwaggerOptions, { transform?: unknown }>['transform']
    >,
    transformObject: (documentObject) => {
      if (!('openapiObject' in documentObject)) return documentObject.swaggerObject
      const { openapiObject } = documentObject
      const document = openapiObject as {
        paths: Record<string, PathItem>
        components?: { schemas?: Record<string, unknown> }
      }
      splitOpenAIRoutes(document.paths)
      hoistComponentSchemas(document)
      declareProblemMediaType(document.paths)
      nameDocumentShapes(document)
      describeOperations(document)
      addExamples(document)
      return openapiObject
    },
  }
}
