import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { CLUSTER_TYPES, MAX_CLUSTER_PODS, MIN_CLUSTER_PODS } from '../../domain/clusters/cluster.js'
import type { ClusterService } from '../../domain/clusters/cluster-service.js'
import type { Pod } from '../../domain/pods/pod.js'
import type { PodService } from '../../domain/pods/pod-service.js'
import { MAX_NAME_LENGTH } from '../../domain/resource-names.js'
import { principalOf } from '../http/authentication.js'
import { traced } from '../http/trace-context.js'
import { checkContainerFields, containerFields, HostLabels, strict } from './container-schemas.js'
import { podAnswer } from './pod-routes.js'
import { Mounts, PodSchema } from './pod-schemas.js'
import { ProblemSchema } from './problem-schema.js'

const ClusterType = Type.Union(CLUSTER_TYPES.map((t) => Type.Literal(t)))
const Compute = Type.Object(
  {
    gpuTypeId: Type.String({ minLength: 1, description: 'as GET /v2/catalog/gpus lists it' }),
    gpuCountPerPod: Type.Integer({ minimum: 1 }),
    podCount: Type.Integer({ minimum: MIN_CLUSTER_PODS, maximum: MAX_CLUSTER_PODS }),
  },
  strict,
)
const { registry: _noRegistry, ...clusterContainerFields } = containerFields

export const CreateClusterBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: MAX_NAME_LENGTH }),
    type: ClusterType,
    compute: Compute,
    image: Type.Optional(
      Type.String({ minLength: 1, description: 'required unless templateId gives it' }),
    ),
    ...clusterContainerFields,
    dataCenterIds: Type.Optional(
      Type.Array(Type.String({ minLength: 1 }), {
        description: 'allowed data centers, in order of preference; the cluster is in one',
      }),
    ),
    mounts: Type.Optional(Mounts),
    startSsh: Type.Optional(Type.Boolean()),
    startJupyter: Type.Optional(Type.Boolean()),
    templateId: Type.Optional(Type.String({ minLength: 1 })),
    hostLabels: Type.Optional(HostLabels),
  },
  strict,
)
type CreateClusterBody = Static<typeof CreateClusterBody>

export const UpdateClusterBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: MAX_NAME_LENGTH }) },
  { ...strict, description: 'a rename: nothing else of a cluster changes' },
)

const Status = Type.String({ description: 'a pod status' })
export const ClusterSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  type: ClusterType,
  compute: Type.Object({
    gpuTypeId: Type.String(),
    gpuCountPerPod: Type.Integer(),
    podCount: Type.Integer(),
  }),
  template: Type.Optional(Type.String()),
  dataCenterId: Type.String(),
  pods: Type.Object({
    total: Type.Integer(),
    byStatus: Type.Record(Type.String(), Type.Integer()),
  }),
  network: Type.Object({ cidr: Type.String() }),
  primary: Type.Optional(
    Type.Object({
      podId: Type.String(),
      status: Status,
      sshEndpoint: Type.Optional(Type.String({ description: 'host:port of its 22/tcp' })),
    }),
  ),
  createdAt: Type.String({ format: 'date-time' }),
})

const IdParams = Type.Object({ id: Type.String({ minLength: 1 }) })
const errors = { 401: ProblemSchema, 403: ProblemSchema, 404: ProblemSchema, 429: ProblemSchema }
const writeErrors = { ...errors, 400: ProblemSchema, 409: ProblemSchema, 422: ProblemSchema }
const tags = ['Clusters']

/** `/v2/clusters` (docs/clusters.md): instant clusters of GPU pods in one data center. */
export async function clusterRoutes(
  app: FastifyInstance,
  { clusters, pods }: { clusters: ClusterService; pods: PodService },
): Promise<void> {
  const view = (pod: Pod) => podAnswer(pods, pod)

  app.get(
    '/clusters',
    {
      schema: {
        tags,
        operationId: 'listClusters',
        summary: 'The instant clusters of the account',
        response: { 200: Type.Object({ clusters: Type.Array(ClusterSchema) }), ...errors },
      },
    },
    async (request) => ({ clusters: await clusters.list(principalOf(request).accountId) }),
  )

  app.post<{ Body: CreateClusterBody }>(
    '/clusters',
    {
      schema: {
        tags,
        operationId: 'createCluster',
        summary: 'Create an instant cluster',
        body: CreateClusterBody,
        response: { 201: ClusterSchema, 402: ProblemSchema, ...writeErrors },
      },
    },
    async (request, reply) => {
      checkContainerFields(request.body)
      const cluster = await clusters.create(
        principalOf(request).accountId,
        request.body,
        traced(request),
      )
      return reply.code(201).send(cluster)
    },
  )

  app.get<{ Params: Static<typeof IdParams> }>(
    '/clusters/:id',
    {
      schema: {
        tags,
        operationId: 'getCluster',
        summary: 'One instant cluster',
        params: IdParams,
        response: { 200: ClusterSchema, ...errors },
      },
    },
    async (request) => clusters.get(principalOf(request).accountId, request.params.id),
  )

  app.patch<{ Params: Static<typeof IdParams>; Body: Static<typeof UpdateClusterBody> }>(
    '/clusters/:id',
    {
      schema: {
        tags,
        operationId: 'updateCluster',
        summary: 'Rename a cluster',
        params: IdParams,
        body: UpdateClusterBody,
        response: { 200: ClusterSchema, ...writeErrors },
      },
    },
    async (request) =>
      clusters.rename(principalOf(request).accountId, request.params.id, request.body.name),
  )

  app.delete<{ Params: Static<typeof IdParams> }>(
    '/clusters/:id',
    {
      schema: {
        tags,
        operationId: 'deleteCluster',
        summary: 'Delete a cluster and terminate its pods',
        params: IdParams,
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await clusters.delete(principalOf(request).accountId, request.params.id)
      return reply.code(204).send()
    },
  )

  app.get<{ Params: Static<typeof IdParams> }>(
    '/clusters/:id/pods',
    {
      schema: {
        tags,
        operationId: 'listClusterPods',
        summary: "A cluster's pods",
        params: IdParams,
        response: { 200: Type.Object({ pods: Type.Array(PodSchema) }), ...errors },
      },
    },
    async (request) => ({
      pods: await Promise.all(
        (await clusters.pods(principalOf(request).accountId, request.params.id)).map(view),
      ),
    }),
  )
}
