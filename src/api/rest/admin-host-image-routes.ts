import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { HostImagePulls } from '../../domain/hosts/host-images.js'
import { principalOf } from '../http/authentication.js'
import { adminOnly } from './admin-access.js'
import { MANAGE_HOSTS } from './admin-host-routes.js'
import { HostImageSchema } from './endpoint-schemas.js'
import { ProblemSchema } from './problem-schema.js'

const errors = { 401: ProblemSchema, 403: ProblemSchema, 404: ProblemSchema, 429: ProblemSchema }
const tags = ['Admin']

const ImagesQuery = Type.Object({
  hostId: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  image: Type.Optional(Type.String({ minLength: 1, maxLength: 1000 })),
})

const PullBody = Type.Object({
  image: Type.String({
    minLength: 1,
    maxLength: 1000,
    pattern: '^[A-Za-z0-9][A-Za-z0-9._/:@-]*$',
    description:
      'an image reference: name[:tag] or name@digest, with its registry host if not Docker Hub',
  }),
  hostIds: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
      maxItems: 1000,
      description: 'only these hosts; absent or empty: every Docker host taking placements',
    }),
  ),
  containerRegistryAuthId: Type.Optional(
    Type.String({
      minLength: 1,
      description: "one of the admin account's registry auths (/v2/registries) for a private image",
    }),
  ),
})

/**
 * Images on the hosts (docs/fleet.md, "Images ahead of time"): which image is on which host,
 * and pulls the admin starts ahead of time (pods' images). Admin only; a podyard extension.
 */
export async function adminHostImageRoutes(
  app: FastifyInstance,
  { images }: { images: HostImagePulls },
): Promise<void> {
  app.get<{ Querystring: Static<typeof ImagesQuery> }>(
    '/admin/hosts/images',
    {
      config: adminOnly(MANAGE_HOSTS),
      schema: {
        tags,
        operationId: 'listHostImages',
        summary: 'The images pulled ahead of time on each host, with their state',
        querystring: ImagesQuery,
        response: {
          200: Type.Object({ images: Type.Array(HostImageSchema) }),
          422: ProblemSchema,
          ...errors,
        },
      },
    },
    async (request) => {
      return { images: await images.list(request.query) }
    },
  )

  app.post<{ Body: Static<typeof PullBody> }>(
    '/admin/hosts/images/pull',
    {
      config: adminOnly(MANAGE_HOSTS),
      schema: {
        tags,
        operationId: 'pullHostImage',
        summary:
          "Pull an image on hosts ahead of time; answers at once with each host's row (PULLING while it runs)",
        body: PullBody,
        response: {
          202: Type.Object({ images: Type.Array(HostImageSchema) }),
          400: ProblemSchema,
          422: ProblemSchema,
          ...errors,
        },
      },
    },
    async (request, reply) => {
      const { image, hostIds, containerRegistryAuthId } = request.body
      const rows = await images.pull({
        image,
        ...(hostIds ? { hostIds } : {}),
        ...(containerRegistryAuthId !== undefined
          ? { registryAuthId: containerRegistryAuthId, accountId: principalOf(request).accountId }
          : {}),
      })
      return reply.code(202).send({ images: rows })
    },
  )
}
