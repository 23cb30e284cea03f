import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { ReleaseService } from '../../domain/serverless/release-service.js'
import { principalOf } from '../http/authentication.js'
import { ProblemSchema } from './problem-schema.js'

export const ReleaseListSchema = Type.Object({
  endpointVersion: Type.Integer(),
  rollout: Type.Object({
    inProgress: Type.Boolean({ description: 'some worker still runs an older version' }),
    workersOnLatest: Type.Integer(),
    workersTotal: Type.Integer(),
    percentOnLatest: Type.Integer({ description: '0 without workers' }),
  }),
  releases: Type.Array(
    Type.Object({
      id: Type.String(),
      version: Type.Integer(),
      source: Type.Literal('MANUAL', { description: 'podyard builds nothing: always MANUAL' }),
      buildId: Type.Null(),
      createdByUserId: Type.Union([Type.String(), Type.Null()]),
      workerCount: Type.Integer({ description: 'workers running this version now' }),
      createdAt: Type.String({ format: 'date-time' }),
      diff: Type.Array(
        Type.Object({
          field: Type.String(),
          old: Type.Unknown(),
          new: Type.Unknown(),
        }),
      ),
    }),
    { description: 'newest first' },
  ),
})

const Params = Type.Object({ id: Type.String({ minLength: 1 }) })
const errors = { 401: ProblemSchema, 403: ProblemSchema, 404: ProblemSchema, 429: ProblemSchema }

/** `GET /v2/serverless/{id}/releases` (docs/serverless-endpoints.md, "Releases"). */
export async function releaseRoutes(
  app: FastifyInstance,
  { releases }: { releases: ReleaseService },
): Promise<void> {
  app.get<{ Params: Static<typeof Params> }>(
    '/serverless/:id/releases',
    {
      schema: {
        tags: ['Serverless'],
        operationId: 'listEndpointReleases',
        summary: "The endpoint's versions, newest first, and its workers' rollout to the latest",
        params: Params,
        response: { 200: ReleaseListSchema, ...errors },
      },
    },
    async (request) => releases.list(principalOf(request).accountId, request.params.id),
  )
}
