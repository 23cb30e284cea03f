import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import {
  SECRET_DESCRIPTION_MAX,
  SECRET_VALUE_MAX,
  type Secret,
} from '../../domain/secrets/secret.js'
import type { SecretService } from '../../domain/secrets/secret-service.js'
import { principalOf } from '../http/authentication.js'
import { ProblemSchema } from './problem-schema.js'

/**
 * No value: Fastify serializes responses through this schema, which drops every other
 * property, so a secret's value cannot reach a response.
 */
export const SecretSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String({ description: 'refer to it from env values as {{ RUNPOD_SECRET_<name> }}' }),
    description: Type.Union([Type.String(), Type.Null()]),
    createdAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
)

export const CreateSecretBody = Type.Object(
  {
    name: Type.String({
      pattern: '^[A-Za-z0-9_]{1,64}$',
      description: '1 to 64 letters, digits or underscores; unique in the account',
    }),
    value: Type.String({
      minLength: 1,
      maxLength: SECRET_VALUE_MAX,
      description: 'write-only: stored encrypted, never returned',
    }),
    description: Type.Optional(Type.String({ maxLength: SECRET_DESCRIPTION_MAX })),
  },
  { additionalProperties: false },
)

const IdParams = Type.Object({ id: Type.String({ minLength: 1 }) })
const errors = { 401: ProblemSchema, 403: ProblemSchema, 404: ProblemSchema, 429: ProblemSchema }

const secretView = (secret: Secret): Static<typeof SecretSchema> => ({
  id: secret.id,
  name: secret.name,
  description: secret.description,
  createdAt: secret.createdAt,
})

/** Account secrets (`/v2/account/secrets`): values go in and never come out. */
export async function secretRoutes(
  app: FastifyInstance,
  { secrets }: { secrets: SecretService },
): Promise<void> {
  app.get(
    '/account/secrets',
    {
      schema: {
        tags: ['Secrets'],
        operationId: 'listSecrets',
        summary: 'The secrets of the account (names, never values)',
        response: { 200: Type.Array(SecretSchema), ...errors },
      },
    },
    async (request) => (await secrets.list(principalOf(request).accountId)).map(secretView),
  )

  app.post<{ Body: Static<typeof CreateSecretBody> }>(
    '/account/secrets',
    {
      schema: {
        tags: ['Secrets'],
        operationId: 'createSecret',
        summary: 'Store a secret for env values to refer to',
        description:
          'Stores a secret, sealed with the platform key. Pod and endpoint env values refer to it as `{{ RUNPOD_SECRET_<name> }}`; it is resolved only into the workload at launch. The value is write-only. 409 when the account already has a secret of that name.',
        body: CreateSecretBody,
        response: {
          201: SecretSchema,
          400: ProblemSchema,
          409: ProblemSchema,
          422: ProblemSchema,
          ...errors,
        },
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(secretView(await secrets.create(principalOf(request).accountId, request.body))),
  )

  app.delete<{ Params: Static<typeof IdParams> }>(
    '/account/secrets/:id',
    {
      schema: {
        tags: ['Secrets'],
        operationId: 'deleteSecret',
        summary: 'Delete a secret',
        description:
          'Pods and workers started later whose env still refers to it fail to start, naming it.',
        params: IdParams,
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await secrets.delete(principalOf(request).accountId, request.params.id)
      return reply.code(204).send()
    },
  )
}
