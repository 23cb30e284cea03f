import { AppError } from '../../shared/app-error.js'
import type { Clock } from '../../shared/clock.js'
import { newId } from '../../shared/ids.js'
import type { TraceOrigin } from '../../shared/tracing.js'
import { findGpuType } from '../catalog/gpu-types.js'
import type { Pod, PodMounts, PodRuntime, PodStatus } from '../pods/pod.js'
import type { PodService } from '../pods/pod-service.js'
import {
  CLUSTER_NETWORK_CIDR,
  clusterEnvOf,
  clusterRoleOf,
  type Cluster,
  type ClusterCompute,
  type ClusterRepo,
  type ClusterType,
} from './cluster.js'

/** RunPod's v2 CreateClusterRequest after schema validation. */
export interface CreateClusterInput {
  name: string
  type: ClusterType
  compute: ClusterCompute
  image?: string
  args?: string
  disk?: number
  env?: Record<string, string>
  ports?: string[]
  dataCenterIds?: string[]
  mounts?: PodMounts
  startSsh?: boolean
  startJupyter?: boolean
  templateId?: string
  /** Labels the hosts of its pods must have (podyard's hostLabels extension). */
  hostLabels?: string[]
  /**
   * The most USD per hour the whole cluster may cost (GraphQL's deployCost), compared in whole
   * cents: dstack sends the cluster's price with two decimals, which may round the catalog's
   * four-decimal price down by under half a cent.
   */
  maxHourlyCost?: number
}

/** RunPod's v2 Cluster. */
export interface ClusterView {
  id: string
  name: string
  type: ClusterType
  compute: ClusterCompute
  template?: string
  dataCenterId: string
  pods: { total: number; byStatus: Partial<Record<PodStatus, number>> }
  network: { cidr: string }
  primary?: { podId: string; status: PodStatus; sshEndpoint?: string }
  createdAt: string
}

export interface ClusterServiceDeps {
  repo: ClusterRepo
  pods: Pick<PodService, 'draft' | 'createTogether' | 'get' | 'terminate' | 'runtimeOf'>
  clock: Clock
}

const notFound = (id: string) => new AppError('NOT_FOUND', `cluster ${id} not found`)

/** 409 when `podCount` pods of `podPrice` USD per hour cost more cents than `cap`. */
function refuseDearerThan(cap: number | undefined, podPrice: number, podCount: number): void {
  if (cap === undefined) return
  const cents = Math.round(podPrice * podCount * 100)
  if (cents <= Math.round(cap * 100)) return
  throw new AppError(
    'RULE_CONFLICT',
    `the cluster would cost ${(cents / 100).toFixed(2)} USD per hour (${podCount} pods of ${podPrice}), more than the deployCost of ${cap} it was given`,
  )
}

/** Instant clusters of an account (docs/clusters.md). */
export class ClusterService {
  constructor(private readonly deps: ClusterServiceDeps) {}

  /**
   * Places `podCount` pods of `gpuCountPerPod` GPUs together in one data center, or none of them
   * (409 naming what each data center lacks), on the account's private network, each told its
   * rank, the node count and the primary node's address.
   */
  async create(
    accountId: string,
    input: CreateClusterInput,
    options: { trace?: TraceOrigin } = {},
  ): Promise<ClusterView> {
    if (findGpuType(input.compute.gpuTypeId)?.manufacturer === 'AMD') {
      throw new AppError(
        'RULE_CONFLICT',
        'instant clusters need NVIDIA GPUs: their private network is global networking, which needs them',
      )
    }
    const id = newId.cluster()
    const base = await this.deps.pods.draft(accountId, {
      name: `${input.name}-0`,
      ...(input.image !== undefined ? { image: input.image } : {}),
      ...(input.args !== undefined ? { args: input.args } : {}),
      ...(input.disk !== undefined ? { disk: input.disk } : {}),
      ...(input.env !== undefined ? { env: input.env } : {}),
      ...(input.ports !== undefined ? { ports: input.ports } : {}),
      ...(input.mounts !== undefined ? { mounts: input.mounts } : {}),
      ...(input.dataCenterIds !== undefined ? { dataCenterIds: input.dataCenterIds } : {}),
      ...(input.templateId !== undefined ? { templateId: input.templateId } : {}),
      ...(input.startSsh !== undefined ? { startSsh: input.startSsh } : {}),
      ...(input.startJupyter !== undefined ? { startJupyter: input.startJupyter } : {}),
      ...(input.hostLabels !== undefined ? { hostLabels: input.hostLabels } : {}),
      gpu: { id: input.compute.gpuTypeId, count: input.compute.gpuCountPerPod },
      globalNetworking: true,
    })
    refuseDearerThan(input.maxHourlyCost, base.hourlyPrice, input.compute.podCount)
    const drafts: Pod[] = Array.from({ length: input.compute.podCount }, (_, rank) => ({
      ...base,
      // Every node's spans join the trace of the request that made the cluster.
      ...(options.trace ? { trace: options.trace } : {}),
      id: rank === 0 ? base.id : newId.pod(),
      name: `${input.name}-${rank}`,
    }))
    const pods = await this.deps.pods.createTogether(accountId, drafts, (pod, rank, earlier) => {
      const nodeAddr = pod.globalIp ?? ''
      const primaryAddr = rank === 0 ? nodeAddr : (earlier[0]?.globalIp ?? '')
      const role = clusterRoleOf(input.type, rank)
      return {
        ...pod,
        // The cluster's variables win over the body's: a node must not be told a wrong rank.
        env: {
          ...pod.env,
          ...clusterEnvOf({ rank, compute: input.compute, nodeAddr, primaryAddr }),
        },
        cluster: { id, rank, ...(role ? { role } : {}), ip: nodeAddr },
      }
    })
    const cluster: Cluster = {
      id,
      accountId,
      name: input.name,
      type: input.type,
      compute: { ...input.compute },
      templateId: input.templateId ?? null,
      dataCenterId: pods[0]!.dataCenterId!,
      podIds: pods.map((p) => p.id),
      createdAt: this.deps.clock.now().toISOString(),
      deletedAt: null,
    }
    await this.deps.repo.insert(cluster)
    return this.view(cluster, pods)
  }

  /** The account's cluster; another account's, a deleted one or an unknown id is 404. */
  private async own(accountId: string, id: string): Promise<Cluster> {
    const cluster = await this.deps.repo.findById(id)
    if (!cluster || cluster.accountId !== accountId || cluster.deletedAt !== null) {
      throw notFound(id)
    }
    return cluster
  }

  async list(accountId: string): Promise<ClusterView[]> {
    const clusters = await this.deps.repo.listByAccount(accountId)
    return Promise.all(clusters.map(async (c) => this.view(c, await this.podsOf(accountId, c))))
  }

  async get(accountId: string, id: string): Promise<ClusterView> {
    const cluster = await this.own(accountId, id)
    return this.view(cluster, await this.podsOf(accountId, cluster))
  }

  /** The cluster's pods by rank. */
  async pods(accountId: string, id: string): Promise<Pod[]> {
    return this.podsOf(accountId, await this.own(accountId, id))
  }

  async rename(accountId: string, id: string, name: string): Promise<ClusterView> {
    const cluster = { ...(await this.own(accountId, id)), name }
    await this.deps.repo.update(cluster)
    return this.view(cluster, await this.podsOf(accountId, cluster))
  }

  /** Terminates every pod of the cluster, then the cluster (RunPod: "and all of its pods"). */
  async delete(accountId: string, id: string): Promise<void> {
    const cluster = await this.own(accountId, id)
    for (const podId of cluster.podIds) {
      await this.deps.pods.terminate(accountId, podId, { asClusterNode: true })
    }
    await this.deps.repo.update({ ...cluster, deletedAt: this.deps.clock.now().toISOString() })
  }

  /** Which cluster each pod of the account belonged to, deleted clusters included (billing). */
  async clusterOfPods(accountId: string): Promise<Map<string, string>> {
    const clusters = await this.deps.repo.listByAccount(accountId, { includeDeleted: true })
    return new Map(clusters.flatMap((c) => c.podIds.map((podId) => [podId, c.id] as const)))
  }

  private async podsOf(accountId: string, cluster: Cluster): Promise<Pod[]> {
    return Promise.all(cluster.podIds.map((podId) => this.deps.pods.get(accountId, podId)))
  }

  private async view(cluster: Cluster, pods: Pod[]): Promise<ClusterView> {
    const byStatus: Partial<Record<PodStatus, number>> = {}
    for (const pod of pods) byStatus[pod.status] = (byStatus[pod.status] ?? 0) + 1
    const primary = pods[0]
    const runtime: PodRuntime | null = primary ? await this.deps.pods.runtimeOf(primary) : null
    const ssh = runtime?.ports.find((p) => p.private === 22 && p.type === 'tcp')
    return {
      id: cluster.id,
      name: cluster.name,
      type: cluster.type,
      compute: cluster.compute,
      ...(cluster.templateId ? { template: cluster.templateId } : {}),
      dataCenterId: cluster.dataCenterId,
      pods: { total: pods.length, byStatus },
      network: { cidr: CLUSTER_NETWORK_CIDR },
      ...(primary
        ? {
            primary: {
              podId: primary.id,
              status: primary.status,
              ...(ssh?.public && ssh.ip ? { sshEndpoint: `${ssh.ip}:${ssh.public}` } : {}),
            },
          }
        : {}),
      createdAt: cluster.createdAt,
    }
  }
}
