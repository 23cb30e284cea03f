import type { PodClusterRole } from '../pods/pod.js'

/**
 * An instant cluster (RunPod's v2 `/clusters`, docs/clusters.md): `podCount` identical GPU pods
 * placed together in one data center on one private network, each told its rank, the node count
 * and the primary node's address. Its pods are ordinary pods that live and go with it.
 */

export const CLUSTER_TYPES = ['APPLICATION', 'TRAINING', 'SLURM', 'RAY'] as const
export type ClusterType = (typeof CLUSTER_TYPES)[number]

/** RunPod's v2 ClusterCompute bounds. */
export const MIN_CLUSTER_PODS = 2
export const MAX_CLUSTER_PODS = 250

/** The port the primary node's processes listen on (PRIMARY_PORT): PyTorch's default. */
export const CLUSTER_PRIMARY_PORT = 29500

/**
 * The cluster network: the account's private network (global networking), whose addresses
 * podyard hands out from 10.0.0.2 onwards (docs/pods.md, "Global networking").
 */
export const CLUSTER_NETWORK_CIDR = '10.0.0.0/8'

export interface ClusterCompute {
  gpuTypeId: string
  gpuCountPerPod: number
  podCount: number
}

export interface Cluster {
  id: string
  accountId: string
  name: string
  type: ClusterType
  compute: ClusterCompute
  /** The template its pods were created from, if any. */
  templateId: string | null
  dataCenterId: string
  /** Its pods by rank: the ids stay after the cluster is deleted, for its bills. */
  podIds: string[]
  createdAt: string
  /** Set when deleted: it is gone for every route but the billing of its past usage. */
  deletedAt: string | null
}

/** The role of a node by rank: SLURM and RAY clusters have a controller or head at rank 0. */
export function clusterRoleOf(type: ClusterType, rank: number): PodClusterRole | undefined {
  if (type === 'SLURM') return rank === 0 ? 'SLURM_CONTROLLER' : 'SLURM_COMPUTE'
  if (type === 'RAY') return rank === 0 ? 'RAY_HEAD' : 'RAY_WORKER'
  return undefined
}

/**
 * The environment of a node, RunPod's instant-cluster variables (docs "Configuration
 * reference"): rank, node count, GPUs per node, world size, its own and the primary's address.
 */
export function clusterEnvOf(input: {
  rank: number
  compute: ClusterCompute
  nodeAddr: string
  primaryAddr: string
}): Record<string, string> {
  const { rank, compute, nodeAddr, primaryAddr } = input
  const port = String(CLUSTER_PRIMARY_PORT)
  return {
    NODE_RANK: String(rank),
    NUM_NODES: String(compute.podCount),
    NUM_TRAINERS: String(compute.gpuCountPerPod),
    WORLD_SIZE: String(compute.podCount * compute.gpuCountPerPod),
    NODE_ADDR: nodeAddr,
    PRIMARY_ADDR: primaryAddr,
    MASTER_ADDR: primaryAddr,
    PRIMARY_PORT: port,
    MASTER_PORT: port,
    HOST_NODE_ADDR: `${primaryAddr}:${port}`,
  }
}

export interface ClusterRepo {
  insert(cluster: Cluster): Promise<void>
  /** A cluster, deleted ones included. */
  findById(id: string): Promise<Cluster | undefined>
  /** The account's clusters, oldest first; deleted ones only when asked. */
  listByAccount(accountId: string, options?: { includeDeleted?: boolean }): Promise<Cluster[]>
  update(cluster: Cluster): Promise<void>
}
