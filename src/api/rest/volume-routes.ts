import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import {
  MAX_VOLUME_GB,
  MAX_VOLUME_NAME_LENGTH,
  MIN_VOLUME_GB,
  NETWORK_VOLUME_TYPES,
  type NetworkVolume,
  type NetworkVolumeType,
} from '../../domain/volumes/network-volume.js'
import type { VolumeService } from '../../domain/volumes/volume-service.js'
import { AppError } from '../../shared/app-error.js'
import { principalOf } from '../http/authentication.js'
import { ProblemSchema } from './problem-schema.js'

const strict = { additionalProperties: false } as const
const tags = ['Network Volumes']

// An enum rather than a union of literals, so a wrong value is one error naming the choices.
const VolumeType = Type.Unsafe<NetworkVolumeType>({
  type: 'string',
  enum: [...NETWORK_VOLUME_TYPES],
  description: 'STANDARD (default) or HIGH_PERFORMANCE; the data center must offer it',
})
const Name = Type.String({ minLength: 1, maxLength: MAX_VOLUME_NAME_LENGTH })
const Size = Type.Integer({
  minimum: MIN_VOLUME_GB,
  maximum: MAX_VOLUME_GB,
  description: `GB, ${MIN_VOLUME_GB} to ${MAX_VOLUME_GB}; it can grow but never shrink`,
})
const DataCenterId = Type.String({
  minLength: 1,
  description: 'a data center of GET /v2/catalog/datacenters that lists the type',
})

export const NetworkVolumeSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  size: Type.Integer({ description: 'GB' }),
  dataCenter: Type.String({ description: 'the REST v2 name of the data center id' }),
  dataCenterId: Type.String({
    description: 'the same id under its REST v1 name, which runpodctl and v1 clients read',
  }),
  type: VolumeType,
  usedBytes: Type.Integer({
    description:
      'podyard extension: bytes of the files in the volume (a volume of many files is re-measured at most every 10 s); may exceed size, which is billed but not enforced',
  }),
  createdAt: Type.String({ format: 'date-time' }),
})
export type NetworkVolumeView = Static<typeof NetworkVolumeSchema>

export const CreateNetworkVolumeBody = Type.Object(
  {
    name: Name,
    size: Size,
    dataCenterId: Type.Optional(DataCenterId),
    dataCenter: Type.Optional(
      Type.String({ minLength: 1, description: 'the same as dataCenterId, by its REST v2 name' }),
    ),
    type: Type.Optional(VolumeType),
  },
  { ...strict, description: 'exactly one of dataCenterId and dataCenter' },
)
export type CreateNetworkVolumeBody = Static<typeof CreateNetworkVolumeBody>

export const UpdateNetworkVolumeBody = Type.Object(
  { name: Type.Optional(Name), size: Type.Optional(Size) },
  strict,
)
export type UpdateNetworkVolumeBody = Static<typeof UpdateNetworkVolumeBody>

const IdParams = Type.Object({ id: Type.String({ minLength: 1 }) })
const errors = { 401: ProblemSchema, 403: ProblemSchema, 404: ProblemSchema, 429: ProblemSchema }
const writeErrors = { ...errors, 400: ProblemSchema, 409: ProblemSchema, 422: ProblemSchema }

export function networkVolumeView(volume: NetworkVolume, usedBytes: number): NetworkVolumeView {
  return {
    id: volume.id,
    name: volume.name,
    size: volume.sizeGb,
    dataCenter: volume.dataCenterId,
    dataCenterId: volume.dataCenterId,
    type: volume.type,
    usedBytes,
    createdAt: volume.createdAt,
  }
}

/** The data center of a create body, under either of its names (exactly one). */
function dataCenterOf(body: CreateNetworkVolumeBody): string {
  const { dataCenterId, dataCenter } = body
  if (dataCenterId !== undefined && dataCenter !== undefined) {
    throw new AppError(
      'RULE_CONFLICT',
      'give the data center as dataCenterId or as dataCenter, not both',
    )
  }
  const id = dataCenterId ?? dataCenter
  if (id === undefined) {
    // A missing required field, reported as the schema reports one.
    const problem = 'body.dataCenterId: is required (or give it as dataCenter)'
    throw new AppError('VALIDATION_FAILED', `the request failed validation: ${problem}`, {
      errors: [problem],
    })
  }
  return id
}

/**
 * `/network-volumes` (wire-compat §3.2), under the prefix it is registered with (`/v2`).
 * Creates answer 201 like every REST v2 create (RunPod's v1 API answered 200).
 */
export async function volumeRoutes(
  app: FastifyInstance,
  { volumes }: { volumes: VolumeService },
): Promise<void> {
  const view = async (volume: NetworkVolume) =>
    networkVolumeView(volume, (await volumes.usage(volume)).usedBytes)

  app.get(
    '/network-volumes',
    {
      schema: {
        tags,
        operationId: 'listNetworkVolumes',
        summary: 'The network volumes of the account',
        response: {
          200: Type.Object({ networkVolumes: Type.Array(NetworkVolumeSchema) }),
          ...errors,
        },
      },
    },
    async (request) => {
      const list = await volumes.list(principalOf(request).accountId)
      return { networkVolumes: await Promise.all(list.map(view)) }
    },
  )

  app.post<{ Body: CreateNetworkVolumeBody }>(
    '/network-volumes',
    {
      schema: {
        tags,
        operationId: 'createNetworkVolume',
        summary: 'Create a network volume',
        body: CreateNetworkVolumeBody,
        response: { 201: NetworkVolumeSchema, ...writeErrors },
      },
    },
    async (request, reply) => {
      const { name, size, type } = request.body
      const volume = await volumes.create(principalOf(request).accountId, {
        name,
        size,
        dataCenterId: dataCenterOf(request.body),
        ...(type !== undefined ? { type } : {}),
      })
      return reply.code(201).send(await view(volume))
    },
  )

  app.get<{ Params: Static<typeof IdParams> }>(
    '/network-volumes/:id',
    {
      schema: {
        tags,
        operationId: 'getNetworkVolume',
        summary: 'One network volume',
        params: IdParams,
        response: { 200: NetworkVolumeSchema, ...errors },
      },
    },
    async (request) => view(await volumes.get(principalOf(request).accountId, request.params.id)),
  )

  app.patch<{ Params: Static<typeof IdParams>; Body: UpdateNetworkVolumeBody }>(
    '/network-volumes/:id',
    {
      schema: {
        tags,
        operationId: 'updateNetworkVolume',
        summary: 'Rename or grow a network volume',
        description: 'Renames and grows; a smaller size is 400.',
        params: IdParams,
        body: UpdateNetworkVolumeBody,
        response: { 200: NetworkVolumeSchema, ...writeErrors },
      },
    },
    async (request) =>
      view(await volumes.update(principalOf(request).accountId, request.params.id, request.body)),
  )

  app.delete<{ Params: Static<typeof IdParams> }>(
    '/network-volumes/:id',
    {
      schema: {
        tags,
        operationId: 'deleteNetworkVolume',
        summary: 'Delete a network volume and its files',
        description: 'Deletes the volume and its files; 400 while a pod or endpoint uses it.',
        params: IdParams,
        response: { 204: Type.Null(), ...errors, 400: ProblemSchema },
      },
    },
    async (request, reply) => {
      await volumes.delete(principalOf(request).accountId, request.params.id)
      return reply.code(204).send()
    },
  )
}
