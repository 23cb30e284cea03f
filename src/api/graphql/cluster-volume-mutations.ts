import { GraphQLError } from 'graphql'
import type { MercuriusContext } from 'mercurius'
import type { CatalogService } from '../../domain/catalog/catalog-service.js'
import type { NetworkVolumeType } from '../../domain/catalog/fleet.js'
import {
  CLUSTER_TYPES,
  MAX_CLUSTER_PODS,
  MIN_CLUSTER_PODS,
  type ClusterType,
} from '../../domain/clusters/cluster.js'
import type { ClusterService } from '../../domain/clusters/cluster-service.js'
import type { Pod } from '../../domain/pods/pod.js'
import type { PodService } from '../../domain/pods/pod-service.js'
import type { VolumeService } from '../../domain/volumes/volume-service.js'
import { AppError, isAppError } from '../../shared/app-error.js'
import {
  DEFAULT_VOLUME_MOUNT_PATH,
  envOf,
  parsePorts,
  Problems,
  type Nullable,
} from './pod-input.js'

/**
 * The mutations dstack's RunPod backend sends for network volumes and instant clusters, and
 * podEditJob (it sets a cluster pod's registry credentials after createCluster), mapped onto
 * the volume, cluster and pod services that REST uses.
 */

/** RunPod's words for a volume it does not know; dstack looks for them to treat it as gone. */
export const NONEXISTENT_VOLUME = 'Tried to delete nonexistent network volume'

/** RunPod's extensions.code for a cluster it does not know (dstack matches it). */
export const CLUSTER_NOT_FOUND_CODE = 'Cluster not found'

export type CreateClusterGraphqlInput = Nullable<{
  clusterName: string
  gpuTypeId: string
  podCount: number
  gpuCountPerPod: number
  imageName: string
  type: string
  deployCost: number
  templateId: string
  networkVolumeId: string
  volumeInGb: number
  throughput: number
  allowedCudaVersions: Array<string | null>
  minCudaVersion: string
  volumeKey: string
  dataCenterId: string
  startJupyter: boolean
  startSsh: boolean
  containerDiskInGb: number
  dockerArgs: string
  env: Array<{ key: string; value?: string | null } | null>
  volumeMountPath: string
  ports: string
  hostLabels: Array<string | null>
}>

interface Deps {
  pods: PodService
  volumes: VolumeService
  catalog: CatalogService
  clusters: () => ClusterService
  view: (pod: Pod) => unknown
  dataCenterRef: (id: string) => { id: string; name: string }
}

type Resolver = (root: unknown, args: never, context: MercuriusContext) => unknown

function need<T>(input: T | null | undefined): T {
  if (input !== null && input !== undefined) return input
  throw new AppError('VALIDATION_FAILED', 'the request failed validation: input: is required', {
    errors: ['input: is required'],
  })
}

/** createCluster's input -> the cluster service's, 422 naming the GraphQL fields. */
function clusterRequest(input: CreateClusterGraphqlInput) {
  const problems = new Problems()
  if (!input.clusterName) problems.add('clusterName', 'is required')
  if (!input.gpuTypeId) problems.add('gpuTypeId', 'is required: list GPU types with gpuTypes')
  const podCount = input.podCount ?? 0
  if (podCount < MIN_CLUSTER_PODS || podCount > MAX_CLUSTER_PODS) {
    problems.add('podCount', `must be from ${MIN_CLUSTER_PODS} to ${MAX_CLUSTER_PODS}`)
  }
  if ((input.gpuCountPerPod ?? 0) < 1) problems.add('gpuCountPerPod', 'must be >= 1')
  const deployCost = input.deployCost ?? undefined
  if (deployCost !== undefined && !(deployCost > 0)) {
    problems.add('deployCost', 'must be > 0 (USD per hour, for the whole cluster)')
  }
  if (!input.imageName && !input.templateId) {
    problems.add('imageName', 'is required unless templateId gives it')
  }
  const type = (input.type ?? 'TRAINING') as ClusterType
  if (!CLUSTER_TYPES.includes(type))
    problems.add('type', `must be one of ${CLUSTER_TYPES.join(', ')}`)
  // Refused rather than ignored: a cluster placed without them could land on hosts its owner
  // excluded, or lack the volume it expects.
  if ((input.volumeInGb ?? 0) > 0) {
    problems.add('volumeInGb', "a cluster's pods have no persistent volume: use networkVolumeId")
  }
  if ((input.allowedCudaVersions ?? []).some((v) => !!v) || input.minCudaVersion) {
    problems.add(
      input.minCudaVersion ? 'minCudaVersion' : 'allowedCudaVersions',
      'is not offered for clusters: choose a GPU type whose hosts have the CUDA version',
    )
  }
  problems.throwIfAny()
  const ports = parsePorts(input.ports)
  const path = input.volumeMountPath || DEFAULT_VOLUME_MOUNT_PATH
  return {
    name: input.clusterName!,
    type,
    compute: {
      gpuTypeId: input.gpuTypeId!,
      gpuCountPerPod: input.gpuCountPerPod!,
      podCount,
    },
    ...(input.imageName ? { image: input.imageName } : {}),
    ...(input.dockerArgs ? { args: input.dockerArgs } : {}),
    ...(input.containerDiskInGb ? { disk: input.containerDiskInGb } : {}),
    ...(input.env ? { env: envOf(input.env) } : {}),
    ...(ports.length > 0 ? { ports } : {}),
    ...(input.dataCenterId ? { dataCenterIds: [input.dataCenterId] } : {}),
    ...(input.networkVolumeId
      ? { mounts: { network: [{ volumeId: input.networkVolumeId, path }] } }
      : {}),
    ...(input.templateId ? { templateId: input.templateId } : {}),
    ...(deployCost !== undefined ? { maxHourlyCost: deployCost } : {}),
    ...(input.startSsh !== null && input.startSsh !== undefined
      ? { startSsh: input.startSsh }
      : {}),
    ...(input.startJupyter !== null && input.startJupyter !== undefined
      ? { startJupyter: input.startJupyter }
      : {}),
    ...(input.hostLabels ? { hostLabels: input.hostLabels.filter((l): l is string => !!l) } : {}),
  }
}

export function clusterAndVolumeMutations(deps: Deps): Record<string, Resolver> {
  const { pods, volumes, view } = deps
  const volumeView = (v: { id: string; name: string; sizeGb: number; dataCenterId: string }) => ({
    id: v.id,
    name: v.name,
    size: v.sizeGb,
    dataCenterId: v.dataCenterId,
    dataCenter: deps.dataCenterRef(v.dataCenterId),
  })
  const clusterView = async (accountId: string, id: string, name: string) => ({
    id,
    name,
    pods: (await deps.clusters().pods(accountId, id)).map(view),
  })

  return {
    podEditJob: async (
      _root,
      { input }: { input?: { podId: string; containerRegistryAuthId?: string | null } | null },
      { principal },
    ) => {
      const { podId, containerRegistryAuthId } = need(input)
      const patch =
        containerRegistryAuthId === undefined ? {} : { registry: containerRegistryAuthId || null }
      return view(await pods.update(principal.accountId, podId, patch))
    },

    createNetworkVolume: async (
      _root,
      {
        input,
      }: {
        input?: { name: string; size: number; dataCenterId: string; type?: string | null } | null
      },
      { principal },
    ) => {
      const { name, size, dataCenterId, type } = need(input)
      const volume = await volumes.create(principal.accountId, {
        name,
        size,
        dataCenterId,
        ...(type ? { type: type as NetworkVolumeType } : {}),
      })
      return volumeView(volume)
    },

    deleteNetworkVolume: async (
      _root,
      { input }: { input?: { id: string } | null },
      { principal },
    ) => {
      const { id } = need(input)
      try {
        await volumes.delete(principal.accountId, id)
      } catch (error) {
        if (isAppError(error) && error.code === 'NOT_FOUND') {
          throw new AppError('NOT_FOUND', `${NONEXISTENT_VOLUME} ${id}`)
        }
        throw error
      }
      return true
    },

    createCluster: async (
      _root,
      { input }: { input?: CreateClusterGraphqlInput | null },
      { principal, trace },
    ) => {
      const request = clusterRequest(need(input))
      if (!deps.catalog.offersGpuType(request.compute.gpuTypeId)) {
        throw new AppError(
          'RULE_CONFLICT',
          `unknown GPU type "${request.compute.gpuTypeId}": list the GPU types with the gpuTypes query`,
        )
      }
      const cluster = await deps
        .clusters()
        .create(principal.accountId, request, trace ? { trace } : {})
      return clusterView(principal.accountId, cluster.id, cluster.name)
    },

    deleteCluster: async (_root, { input }: { input?: { id: string } | null }, { principal }) => {
      const { id } = need(input)
      try {
        await deps.clusters().delete(principal.accountId, id)
      } catch (error) {
        if (isAppError(error) && error.code === 'NOT_FOUND') {
          // RunPod answers this code, which dstack matches to treat the cluster as gone.
          throw new GraphQLError(error.detail, { extensions: { code: CLUSTER_NOT_FOUND_CODE } })
        }
        throw error
      }
      return true
    },
  }
}
