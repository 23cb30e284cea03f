import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import {
  REGISTRY_NAME_MAX,
  REGISTRY_PASSWORD_MAX,
  REGISTRY_USERNAME_MAX,
  type Registry,
} from '../../domain/registries/registry.js'
import type { RegistryService } from '../../domain/registries/registry-service.js'
import { principalOf } from '../http/authentication.js'
import { ProblemSchema } from './problem-schema.js'

/**
 * Only id and name: Fastify serializes responses through this schema, which drops every other
 * property, so neither the username nor anything password-like can reach a response.
 */
export const RegistrySchema = Type.Object(
  {
    id: Type.String({ description: 'cuid-shaped id; give it as `registry` on pods and templates' }),
    name: Type.String(),
  },
  { additionalProperties: false },
)

export const CreateRegistryBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: REGISTRY_NAME_MAX }),
    username: Type.String({ minLength: 1, maxLength: REGISTRY_USERNAME_MAX }),
    password: Type.String({
      minLength: 1,
      maxLength: REGISTRY_PASSWORD_MAX,
      description: 'write-only: stored encrypted, never returned',
    }),
  },
  { additionalProperties: false },
)

const IdParams = Type.Object({ id: Type.String({ minLength: 1 }) })
const errors = { 401: ProblemSchema, 403: ProblemSchema, 404: ProblemSchema, 429: ProblemSchema }

const registryView = (registry: Registry): Static<typeof RegistrySchema> => ({
  id: registry.id,
  name: registry.name,
})

/** Container registry credentials (`/v2/registries`); passwords go in and never come out. */
export async function registryRoutes(
  app: FastifyInstance,
  { registries }: { registries: RegistryService },
): Promise<void> {
  app.get(
    '/registries',
    {
      schema: {
        tags: ['Registries'],
        operationId: 'listRegistries',
        summary: 'The registry credentials of the account',
        response: { 200: Type.Object({ registries: Type.Array(RegistrySchema) }), ...errors },
      },
    },
    async (request) => ({
      registries: (await registries.list(principalOf(request).accountId)).map(registryView),
    }),
  )

  // 201 as RunPod's v2 document declares for createRegistry; runpodctl accepts any 2xx.
  app.post<{ Body: Static<typeof CreateRegistryBody> }>(
    '/registries',
    {
      schema: {
        tags: ['Registries'],
        operationId: 'createRegistry',
        summary: 'Store credentials of a private container registry',
        description:
          'Stores credentials for a private container registry. The password is write-only.',
        body: CreateRegistryBody,
        response: { 201: RegistrySchema, 400: ProblemSchema, 422: ProblemSchema, ...errors },
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(registryView(await registries.create(principalOf(request).accountId, request.body))),
  )

  app.get<{ Params: Static<typeof IdParams> }>(
    '/registries/:id',
    {
      schema: {
        tags: ['Registries'],
        operationId: 'getRegistry',
        summary: 'One registry credential (without its password)',
        params: IdParams,
        response: { 200: RegistrySchema, ...errors },
      },
    },
    async (request) =>
      registryView(await registries.get(principalOf(request).accountId, request.params.id)),
  )

  app.delete<{ Params: Static<typeof IdParams> }>(
    '/registries/:id',
    {
      schema: {
        tags: ['Registries'],
        operationId: 'deleteRegistry',
        summary: 'Delete a registry credential',
        description: 'Refused with 400 while a pod, template or endpoint refers to the registry.',
        params: IdParams,
        response: { 204: Type.Null(), 400: ProblemSchema, ...errors },
      },
    },
    async (request, reply) => {
      await registries.delete(principalOf(request).accountId, request.params.id)
      return reply.code(204).send()
    },
  )
}
