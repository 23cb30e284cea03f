import { MAX_NAME_LENGTH } from '../../domain/resource-names.js'
import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { CUDA_VERSIONS } from '../../domain/catalog/gpu-types.js'
import type { Template } from '../../domain/templates/template.js'
import type { TemplateService } from '../../domain/templates/template-service.js'
import { principalOf } from '../http/authentication.js'
import {
  checkContainerFields,
  containerFields,
  PersistentMount,
  strict,
} from './container-schemas.js'
import { ProblemSchema } from './problem-schema.js'

const Category = Type.Union([Type.Literal('NVIDIA'), Type.Literal('AMD'), Type.Literal('CPU')])
const CudaVersions = Type.Array(Type.Union(CUDA_VERSIONS.map((v) => Type.Literal(v))))
const TemplateMounts = Type.Object({ persistent: Type.Optional(PersistentMount) }, strict)

const templateFields = {
  ...containerFields,
  mounts: Type.Optional(TemplateMounts),
  serverless: Type.Optional(
    Type.Boolean({ description: 'for serverless endpoints (default false)' }),
  ),
  public: Type.Optional(
    Type.Boolean({ description: 'readable (not writable) by every account (default false)' }),
  ),
  category: Type.Optional(Category),
  startSsh: Type.Optional(Type.Boolean()),
  startJupyter: Type.Optional(Type.Boolean()),
  allowedCudaVersions: Type.Optional(CudaVersions),
}

export const CreateTemplateBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: MAX_NAME_LENGTH }),
    image: Type.String({ minLength: 1 }),
    ...templateFields,
  },
  strict,
)

export const UpdateTemplateBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_NAME_LENGTH })),
    image: Type.Optional(Type.String({ minLength: 1 })),
    ...templateFields,
  },
  strict,
)

export const TemplateSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  image: Type.String(),
  args: Type.String(),
  disk: Type.Integer(),
  env: Type.Record(Type.String(), Type.String()),
  ports: Type.Array(Type.String()),
  registry: Type.Union([Type.String(), Type.Null()]),
  mounts: Type.Object({
    persistent: Type.Optional(Type.Object({ size: Type.Integer(), path: Type.String() })),
  }),
  serverless: Type.Boolean(),
  public: Type.Boolean(),
  category: Category,
  startSsh: Type.Boolean(),
  startJupyter: Type.Boolean(),
  allowedCudaVersions: Type.Array(Type.String()),
  createdAt: Type.String({ format: 'date-time' }),
})

const IdParams = Type.Object({ id: Type.String({ minLength: 1 }) })
const errors = { 401: ProblemSchema, 403: ProblemSchema, 404: ProblemSchema, 429: ProblemSchema }
const writeErrors = { ...errors, 400: ProblemSchema, 422: ProblemSchema }

export function templateView(template: Template): Static<typeof TemplateSchema> {
  const { accountId: _owner, ...fields } = template
  return fields
}

export async function templateRoutes(
  app: FastifyInstance,
  { templates }: { templates: TemplateService },
): Promise<void> {
  app.get<{ Querystring: { includePublic?: boolean } }>(
    '/templates',
    {
      schema: {
        tags: ['Templates'],
        operationId: 'listTemplates',
        summary: 'The templates of the account',
        querystring: Type.Object({
          includePublic: Type.Optional(
            Type.Boolean({ description: 'add the public templates of other accounts' }),
          ),
        }),
        response: { 200: Type.Object({ templates: Type.Array(TemplateSchema) }), ...errors },
      },
    },
    async (request) => ({
      templates: (
        await templates.list(principalOf(request).accountId, {
          includePublic: request.query.includePublic ?? false,
        })
      ).map(templateView),
    }),
  )

  app.post<{ Body: Static<typeof CreateTemplateBody> }>(
    '/templates',
    {
      schema: {
        tags: ['Templates'],
        operationId: 'createTemplate',
        summary: 'Create a template',
        body: CreateTemplateBody,
        response: { 201: TemplateSchema, ...writeErrors },
      },
    },
    async (request, reply) => {
      checkContainerFields(request.body)
      const template = await templates.create(principalOf(request).accountId, request.body)
      return reply.code(201).send(templateView(template))
    },
  )

  app.get<{ Params: Static<typeof IdParams> }>(
    '/templates/:id',
    {
      schema: {
        tags: ['Templates'],
        operationId: 'getTemplate',
        summary: 'One template',
        params: IdParams,
        response: { 200: TemplateSchema, ...errors },
      },
    },
    async (request) =>
      templateView(await templates.get(principalOf(request).accountId, request.params.id)),
  )

  app.patch<{ Params: Static<typeof IdParams>; Body: Static<typeof UpdateTemplateBody> }>(
    '/templates/:id',
    {
      schema: {
        tags: ['Templates'],
        operationId: 'updateTemplate',
        summary: 'Change a template',
        params: IdParams,
        body: UpdateTemplateBody,
        response: { 200: TemplateSchema, ...writeErrors },
      },
    },
    async (request) => {
      checkContainerFields(request.body)
      return templateView(
        await templates.update(principalOf(request).accountId, request.params.id, request.body),
      )
    },
  )

  app.delete<{ Params: Static<typeof IdParams> }>(
    '/templates/:id',
    {
      schema: {
        tags: ['Templates'],
        operationId: 'deleteTemplate',
        summary: 'Delete a template',
        params: IdParams,
        response: { 204: Type.Null(), ...errors, 400: ProblemSchema },
      },
    },
    async (request, reply) => {
      await templates.delete(principalOf(request).accountId, request.params.id)
      return reply.code(204).send()
    },
  )

  app.get<{ Querystring: { source?: 'official' | 'verified' | 'community' } }>(
    '/catalog/templates',
    {
      schema: {
        tags: ['Catalog'],
        operationId: 'listPublicTemplates',
        summary: 'Public templates anyone may use',
        querystring: Type.Object({
          source: Type.Optional(
            Type.Union(
              [Type.Literal('official'), Type.Literal('verified'), Type.Literal('community')],
              {
                description:
                  'official: shipped with the platform; community: public templates of accounts; verified: none yet',
              },
            ),
          ),
        }),
        response: {
          200: Type.Object({ templates: Type.Array(TemplateSchema) }),
          ...errors,
          422: ProblemSchema,
        },
      },
    },
    async (request) => ({
      templates: (await templates.catalog(request.query.source)).map(templateView),
    }),
  )
}
