import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { isValidVcpuCount } from '../../domain/catalog/cpu-flavors.js'
import type { EndpointService } from '../../domain/serverless/endpoint-service.js'
import { AppError } from '../../shared/app-error.js'
import { principalOf } from '../http/authentication.js'
import { checkContainerFields } from './container-schemas.js'
import {
  CreateEndpointBody,
  EndpointSchema,
  endpointView,
  UpdateEndpointBody,
} from './endpoint-schemas.js'
import { ProblemSchema } from './problem-schema.js'

const IdParams = Type.Object({ id: Type.String({ minLength: 1 }) })
const errors = { 401: ProblemSchema, 403: ProblemSchema, 404: ProblemSchema, 429: ProblemSchema }
const writeErrors = { ...errors, 400: ProblemSchema, 422: ProblemSchema }

/** Ports, env names and vCPU powers of two: JSON Schema cannot say them (422 like the schema). */
function checkEndpointFields(body: UpdateEndpointBody): void {
  checkContainerFields({
    ...(body.ports ? { ports: body.ports } : {}),
    ...(body.env ? { env: body.env } : {}),
  })
  const problems = (body.cpu ?? []).flatMap((cpu, i) =>
    isValidVcpuCount(cpu.vcpuCount)
      ? []
      : [`body.cpu[${i}].vcpuCount: must be a power of two >= 2`],
  )
  if (problems.length > 0) {
    throw new AppError(
      'VALIDATION_FAILED',
      `the request failed validation: ${problems.join('; ')}`,
      {
        errors: problems,
      },
    )
  }
}

/** Serverless endpoint definitions: `/v2/serverless` (wire-compat §3.2). */
export async function endpointRoutes(
  app: FastifyInstance,
  { endpoints }: { endpoints: EndpointService },
): Promise<void> {
  app.get(
    '/serverless',
    {
      schema: {
        tags: ['Serverless'],
        operationId: 'listEndpoints',
        response: { 200: Type.Object({ endpoints: Type.Array(EndpointSchema) }), ...errors },
      },
    },
    async (request) => ({
      endpoints: (await endpoints.list(principalOf(request).accountId)).map(endpointView),
    }),
  )

  app.post<{ Body: CreateEndpointBody }>(
    '/serverless',
    {
      schema: {
        tags: ['Serverless'],
        operationId: 'createEndpoint',
        body: CreateEndpointBody,
        response: { 201: EndpointSchema, ...writeErrors },
      },
    },
    async (request, reply) => {
      checkEndpointFields(request.body)
      const endpoint = await endpoints.create(principalOf(request).accountId, request.body)
      return reply.code(201).send(endpointView(endpoint))
    },
  )

  app.get<{ Params: Static<typeof IdParams> }>(
    '/serverless/:id',
    {
      schema: {
        tags: ['Serverless'],
        operationId: 'getEndpoint',
        params: IdParams,
        response: { 200: EndpointSchema, ...errors },
      },
    },
    async (request) =>
      endpointView(await endpoints.get(principalOf(request).accountId, request.params.id)),
  )

  app.patch<{ Params: Static<typeof IdParams>; Body: UpdateEndpointBody }>(
    '/serverless/:id',
    {
      schema: {
        tags: ['Serverless'],
        operationId: 'updateEndpoint',
        params: IdParams,
        body: UpdateEndpointBody,
        response: { 200: EndpointSchema, ...writeErrors },
      },
    },
    async (request) => {
      checkEndpointFields(request.body)
      return endpointView(
        await endpoints.update(principalOf(request).accountId, request.params.id, request.body),
      )
    },
  )

  app.delete<{ Params: Static<typeof IdParams> }>(
    '/serverless/:id',
    {
      schema: {
        tags: ['Serverless'],
        operationId: 'deleteEndpoint',
        params: IdParams,
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await endpoints.delete(principalOf(request).accountId, request.params.id)
      return reply.code(204).send()
    },
  )
}
