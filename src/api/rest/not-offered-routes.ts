import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { EndpointService } from '../../domain/serverless/endpoint-service.js'
import { AppError } from '../../shared/app-error.js'
import { principalOf } from '../http/authentication.js'
import { ProblemSchema } from './problem-schema.js'

const responses = { 401: ProblemSchema, 403: ProblemSchema, 404: ProblemSchema, 501: ProblemSchema }
const EndpointParams = Type.Object({ id: Type.String({ minLength: 1 }) })

export const DELEGATIONS_NOT_OFFERED =
  'cloud-registry (ECR) delegations are not offered by this platform: it runs no cloud registry integration; store registry credentials with POST /v2/registries instead'
export const BUILDS_NOT_OFFERED =
  'builds from a Git repository are not offered by this platform: it runs no build service; push the image yourself and PATCH the endpoint with it'

/**
 * Routes of RunPod's v2 contract that need a service this platform does not run (docs/api.md,
 * "Not offered"): they answer 501 saying so, never "no route", and `/registries/delegations`
 * is never taken for a registry id.
 */
export async function notOfferedRoutes(
  app: FastifyInstance,
  { endpoints }: { endpoints: EndpointService },
): Promise<void> {
  const delegations = (operationId: string, method: 'GET' | 'POST' | 'DELETE', url: string) =>
    app.route({
      method,
      url,
      schema: {
        tags: ['Registries'],
        operationId,
        summary: 'Not offered by this platform (501)',
        response: responses,
      },
      handler: async () => {
        throw new AppError('NOT_OFFERED', DELEGATIONS_NOT_OFFERED)
      },
    })
  delegations('listDelegations', 'GET', '/registries/delegations')
  delegations('createDelegation', 'POST', '/registries/delegations')
  delegations('revokeDelegation', 'DELETE', '/registries/delegations/:id')

  const builds = async (request: FastifyRequest) => {
    const { id } = request.params as { id: string }
    // Another account's endpoint, or an unknown one, is 404 as on every endpoint route.
    await endpoints.get(principalOf(request).accountId, id)
    throw new AppError('NOT_OFFERED', BUILDS_NOT_OFFERED)
  }
  for (const [method, url, operationId] of [
    ['GET', '/serverless/:id/builds', 'listEndpointBuilds'],
    ['POST', '/serverless/:id/builds', 'createEndpointBuild'],
    ['GET', '/serverless/:id/builds/:buildId', 'getEndpointBuild'],
  ] as const) {
    app.route({
      method,
      url,
      schema: {
        tags: ['Serverless'],
        operationId,
        params: url.endsWith(':buildId')
          ? Type.Object({ id: Type.String({ minLength: 1 }), buildId: Type.String() })
          : EndpointParams,
        summary: 'Not offered by this platform (501)',
        response: responses,
      },
      handler: builds,
    })
  }
}
