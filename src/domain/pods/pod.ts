import type { Cloud } from '../catalog/fleet.js'
import type { TraceOrigin } from '../../shared/tracing.js'

export const POD_STATUSES = [
  'PROVISIONING',
  'STARTING',
  'RUNNING',
  'EXITED',
  'ERROR',
  'TERMINATED',
] as const
export type PodStatus = (typeof POD_STATUSES)[number]

/** The spec's PodAction: what `actions` may list. */
export const POD_ACTIONS = ['start', 'stop', 'restart', 'terminate'] as const
export type PodAction = (typeof POD_ACTIONS)[number]
/** What `POST /v2/pods/{id}/action` accepts: the PodActions plus `reset`. */
export type PodActionRequest = PodAction | 'reset'

export type PodCompute =
  | {
      kind: 'gpu'
      gpuTypeId: string
      gpuCount: number
      /** Only hosts with one of these CUDA versions (from the pod's template); empty: any. */
      allowedCudaVersions?: string[]
    }
  | { kind: 'cpu'; flavorId: string; vcpuCount: number; memoryGb: number }

export interface PersistentMount {
  size: number
  path: string
}

export interface NetworkMount {
  volumeId: string
  path: string
}

export interface PodMounts {
  persistent?: PersistentMount
  network?: NetworkMount[]
}

export interface PortMapping {
  private: number
  public: number
  type: string
}

/**
 * What a host must offer beyond the compute itself (GraphQL's minVcpuCount, minMemoryInGb,
 * allowedCudaVersions, minCudaVersion and compliance); kept so every start honours them.
 */
export interface PodRequirements {
  cudaVersions?: string[]
  minCudaVersion?: string
  minVcpus?: number
  minMemoryGb?: number
  compliance?: string[]
  /** Labels its host must have (`ib=true`, `driver>=550`): podyard's hostLabels extension. */
  hostLabels?: string[]
}

/** A cluster member's role (RunPod v2 PodClusterRole): only SLURM and RAY clusters have them. */
export type PodClusterRole = 'SLURM_CONTROLLER' | 'SLURM_COMPUTE' | 'RAY_HEAD' | 'RAY_WORKER'

/** A pod's membership of an instant cluster (RunPod v2 PodCluster). */
export interface PodCluster {
  id: string
  /** NODE_RANK: 0 is the primary node. */
  rank: number
  role?: PodClusterRole
  /** Its address on the cluster's network. */
  ip?: string
}

export interface Pod {
  id: string
  accountId: string
  name: string
  image: string
  args: string
  disk: number
  ports: string[]
  env: Record<string, string>
  registry: string | null
  compute: PodCompute
  mounts: PodMounts
  requirements?: PodRequirements
  /**
   * Created with startSsh: the account's SSH keys go in as PUBLIC_KEY at every start. Never
   * shown (a create-time flag in RunPod's v2 contract); absent on pods made before the flag,
   * which all got the keys.
   */
  startSsh?: boolean
  /** Set on the pods of an instant cluster: they live and go with it (docs/clusters.md). */
  cluster?: PodCluster
  /**
   * A spot (interruptible) pod: billed at its bid, and stopped (EXITED, "preempted") when an
   * on-demand pod needs its GPUs (docs/pods.md, "Spot pods").
   */
  spot?: { bidPerGpu: number }
  cloud: Cloud
  /** The data centers the creator allowed, in order of preference (empty: any). */
  dataCenterIds: string[]
  dataCenterId: string | null
  hostId: string | null
  templateId: string | null
  locked: boolean
  globalNetworking: boolean
  /** The pod's address on its account's private network (GLOBAL_NETWORK_CIDR), when globalNetworking. */
  globalIp: string | null
  status: PodStatus
  /** Why the pod is in ERROR (or what stopped it), for people. */
  statusReason: string | null
  /** USD per hour while the pod holds its host's resources. */
  hourlyPrice: number
  /** Host GPU indices while the pod holds resources. */
  gpuIndices: number[]
  /** Host ports of the declared ports, assigned at each start. */
  portMappings: PortMapping[]
  /** Increments at every (re)start; a workload of an older generation is stale. */
  generation: number
  /** Restarts after a crash since the last start requested by a person. */
  crashRestarts: number
  createdAt: string
  startedAt: string | null
  lastStatusChange: string
  terminatedAt: string | null
  /** Optimistic concurrency: every write increments it. */
  version: number
  /** The request that created it, when the server traces (docs/production.md, "Tracing"). */
  trace?: TraceOrigin
}

/** The live metrics of a RUNNING pod (spec PodRuntime: every field optional). */
export interface PodRuntime {
  uptime: number
  gpus: Array<{ util: number; memoryUtil: number }>
  /** Absent until the pod's usage was first measured (it is measured in the background). */
  cpu?: { util: number }
  memory?: { util: number }
  ports: Array<{ private: number; public: number | null; type: string; ip: string | null }>
}

/** Where the pods' `globalIp` are: each account has this range to itself on its own network. */
export const GLOBAL_NETWORK_CIDR = '10.0.0.0/8'
