import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { isValidVcpuCount } from '../../domain/catalog/cpu-flavors.js'
import type { HostImagePulls } from '../../domain/hosts/host-images.js'
import type { EndpointService } from '../../domain/serverless/endpoint-service.js'
import type { WorkerKeyService } from '../../domain/serverless/worker-keys.js'
import { AppError } from '../../shared/app-error.js'
import { principalOf } from '../http/authentication.js'
import { checkContainerFields } from './container-schemas.js'
import {
  CreateEndpointBody,
  EndpointSchema,
  EndpointWithImageSchema,
  endpointView,
  UpdateEndpointBody,
} from './endpoint-schemas.js'
import { ProblemSchema } from './problem-schema.js'

const IdParams = Type.Object({ id: Type.String({ minLength: 1 }) })
const errors = { 401: ProblemSchema, 403: ProblemSchema, 404: ProblemSchema, 429: ProblemSchema }
const writeErrors = { ...errors, 400: ProblemSchema, 422: ProblemSchema }

export const WorkerKeySchema = Type.Object({
  endpointId: Type.String(),
  workerKey: Type.String({
    description:
      'Sent raw in Authorization by the endpoint workers (RUNPOD_AI_API_KEY); valid only on the worker protocol of this endpoint',
  }),
  generation: Type.Integer({ minimum: 1, description: 'Rotation adds one' }),
})

/**
 * A worker key lets its holder take the endpoint's jobs, read their inputs and post results:
 * more than a read-only key may do, so reading one needs a read-write key too.
 */
function requireReadWrite(request: FastifyRequest): void {
  if (principalOf(request).key.permission !== 'READ_WRITE') {
    throw new AppError(
      'FORBIDDEN',
      'reading or rotating a worker key needs a read-write API key: the worker key lets its holder take and answer the endpoint jobs',
    )
  }
}

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
  {
    endpoints,
    workerKeys,
    hostImages,
  }: { endpoints: EndpointService; workerKeys: WorkerKeyService; hostImages?: HostImagePulls },
): Promise<void> {
  app.get(
    '/serverless',
    {
      schema: {
        tags: ['Serverless'],
        operationId: 'listEndpoints',
        summary: 'The serverless endpoints of the account',
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
        summary: 'Create a serverless endpoint',
        body: CreateEndpointBody,
        response: { 201: EndpointSchema, ...writeErrors },
      },
    },
    async (request, reply) => {
      checkEndpointFields(request.body)
      const endpoint = await endpoints.create(principalOf(request).accountId, request.body, {
        refuseIdleTimeoutWithRequestCount: true,
      })
      return reply.code(201).send(endpointView(endpoint))
    },
  )

  app.get<{ Params: Static<typeof IdParams> }>(
    '/serverless/:id',
    {
      schema: {
        tags: ['Serverless'],
        operationId: 'getEndpoint',
        summary: 'One serverless endpoint',
        params: IdParams,
        response: { 200: EndpointWithImageSchema, ...errors },
      },
    },
    async (request) => {
      const endpoint = await endpoints.get(principalOf(request).accountId, request.params.id)
      return hostImages
        ? { ...endpointView(endpoint), imageReadiness: await hostImages.readiness(endpoint) }
        : endpointView(endpoint)
    },
  )

  app.patch<{ Params: Static<typeof IdParams>; Body: UpdateEndpointBody }>(
    '/serverless/:id',
    {
      schema: {
        tags: ['Serverless'],
        operationId: 'updateEndpoint',
        summary: 'Change a serverless endpoint (workers roll to a new release)',
        params: IdParams,
        body: UpdateEndpointBody,
        response: { 200: EndpointSchema, ...writeErrors },
      },
    },
    async (request) => {
      checkEndpointFields(request.body)
      return endpointView(
        await endpoints.update(principalOf(request).accountId, request.params.id, request.body, {
          refuseIdleTimeoutWithRequestCount: true,
        }),
      )
    },
  )

  app.delete<{ Params: Static<typeof IdParams> }>(
    '/serverless/:id',
    {
      schema: {
        tags: ['Serverless'],
        operationId: 'deleteEndpoint',
        summary: 'Delete a serverless endpoint, its jobs and workers',
        params: IdParams,
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await endpoints.delete(principalOf(request).accountId, request.params.id)
      return reply.code(204).send()
    },
  )

  // Never a field of the endpoint: list and get responses must not carry a secret.
  app.get<{ Params: Static<typeof IdParams> }>(
    '/serverless/:id/worker-key',
    {
      schema: {
        tags: ['Serverless'],
        operationId: 'getEndpointWorkerKey',
        summary: 'The endpoint worker key (read-write keys only)',
        params: IdParams,
        response: { 200: WorkerKeySchema, ...errors },
      },
    },
    async (request) => {
      requireReadWrite(request)
      return workerKeys.read(principalOf(request).accountId, request.params.id)
    },
  )

  app.post<{ Params: Static<typeof IdParams> }>(
    '/serverless/:id/worker-key/rotate',
    {
      schema: {
        tags: ['Serverless'],
        operationId: 'rotateEndpointWorkerKey',
        summary: 'A new worker key; the old one stops working at once',
        params: IdParams,
        response: { 200: WorkerKeySchema, ...errors },
      },
    },
    async (request) => {
      requireReadWrite(request)
      return workerKeys.rotate(principalOf(request).accountId, request.params.id)
    },
  )
}
