import { MAX_NAME_LENGTH } from '../../domain/resource-names.js'
import { Type, type Static } from '@sinclair/typebox'
import {
  containerFields,
  HostLabels,
  MountPath,
  PersistentMount,
  strict,
} from './container-schemas.js'
import { QueryList, QueryWithLists } from './query-lists.js'

/** RunPod's v2 pod create takes CUDA versions as major.minor (`12.8`). */
const CUDA_VERSION_PATTERN = '^\\d+\\.\\d+$'

const SshEndpoint = Type.Object({
  host: Type.String(),
  port: Type.Integer(),
  username: Type.String(),
  command: Type.String({ description: 'the ssh invocation, ready to run' }),
})

const Cloud = Type.Union([Type.Literal('SECURE'), Type.Literal('COMMUNITY')])
const Status = Type.Union(
  ['PROVISIONING', 'STARTING', 'RUNNING', 'EXITED', 'ERROR', 'TERMINATED'].map((s) =>
    Type.Literal(s),
  ),
)
const ActionName = Type.Union(['start', 'stop', 'restart', 'terminate'].map((a) => Type.Literal(a)))
const NetworkMount = Type.Object(
  { volumeId: Type.String({ minLength: 1 }), path: MountPath },
  strict,
)
export const Mounts = Type.Object(
  {
    persistent: Type.Optional(PersistentMount),
    network: Type.Optional(Type.Array(NetworkMount, { maxItems: 1 })),
  },
  strict,
)

export const CreatePodBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: MAX_NAME_LENGTH }),
    image: Type.Optional(
      Type.String({ minLength: 1, description: 'required unless templateId gives it' }),
    ),
    ...containerFields,
    gpu: Type.Optional(
      Type.Object(
        {
          id: Type.String({ minLength: 1 }),
          count: Type.Optional(Type.Integer({ minimum: 1, default: 1 })),
          allowedCudaVersions: Type.Optional(
            Type.Array(Type.String({ pattern: CUDA_VERSION_PATTERN }), {
              description:
                'only hosts with exactly one of these CUDA versions (major.minor); a non-empty set excludes minCudaVersion',
            }),
          ),
          minCudaVersion: Type.Optional(
            Type.String({
              pattern: CUDA_VERSION_PATTERN,
              description: 'only hosts with at least this CUDA version (major.minor)',
            }),
          ),
          minRamPerGpu: Type.Optional(
            Type.Integer({ minimum: 1, description: 'GB of host memory per GPU, at least' }),
          ),
          minVcpuCountPerGpu: Type.Optional(
            Type.Integer({ minimum: 1, description: 'vCPUs per GPU, at least' }),
          ),
        },
        strict,
      ),
    ),
    cpu: Type.Optional(
      Type.Object(
        {
          id: Type.String({ minLength: 1 }),
          vcpuCount: Type.Integer({ minimum: 2, description: 'a power of two the flavor offers' }),
        },
        strict,
      ),
    ),
    mounts: Type.Optional(Mounts),
    cloud: Type.Optional(Cloud),
    dataCenterIds: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    globalNetworking: Type.Optional(Type.Boolean()),
    hostLabels: Type.Optional(HostLabels),
    templateId: Type.Optional(Type.String({ minLength: 1 })),
    startSsh: Type.Optional(
      Type.Boolean({
        description:
          "create-time flag: the account's SSH keys go in as PUBLIC_KEY at each start (unless env sets one); never returned",
      }),
    ),
    startJupyter: Type.Optional(
      Type.Boolean({
        description:
          'create-time flag: a generated JUPYTER_PASSWORD goes into env (unless env sets one); never returned',
      }),
    ),
  },
  strict,
)
export type CreatePodBody = Static<typeof CreatePodBody>

export const UpdatePodBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_NAME_LENGTH })),
    locked: Type.Optional(Type.Boolean()),
    image: Type.Optional(Type.String({ minLength: 1 })),
    ...containerFields,
    mounts: Type.Optional(Mounts),
    globalNetworking: Type.Optional(Type.Boolean()),
    templateId: Type.Optional(Type.String({ minLength: 1 })),
  },
  strict,
)
export type UpdatePodBody = Static<typeof UpdatePodBody>

export const PodActionBody = Type.Object(
  {
    action: Type.Union(
      ['start', 'stop', 'restart', 'terminate', 'reset'].map((a) => Type.Literal(a)),
    ),
  },
  strict,
)

export const PodSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  status: Status,
  actions: Type.Array(ActionName),
  image: Type.String(),
  imageName: Type.String({ description: 'same as image, for clients that read imageName' }),
  args: Type.String(),
  disk: Type.Integer(),
  ports: Type.Array(Type.String()),
  env: Type.Record(Type.String(), Type.String()),
  registry: Type.Union([Type.String(), Type.Null()]),
  mounts: Type.Object({
    persistent: Type.Optional(Type.Object({ size: Type.Integer(), path: Type.String() })),
    network: Type.Optional(
      Type.Array(Type.Object({ volumeId: Type.String(), path: Type.String() })),
    ),
  }),
  gpu: Type.Optional(Type.Object({ id: Type.String(), count: Type.Integer() })),
  cpu: Type.Optional(
    Type.Object({ id: Type.String(), vcpuCount: Type.Integer(), memory: Type.Integer() }),
  ),
  cloud: Cloud,
  dataCenterId: Type.Union([Type.String(), Type.Null()]),
  template: Type.Union([Type.String(), Type.Null()]),
  cluster: Type.Optional(
    Type.Object(
      {
        id: Type.String(),
        rank: Type.Integer({ description: 'NODE_RANK; 0 is the primary node' }),
        role: Type.Optional(Type.String({ description: 'SLURM and RAY clusters only' })),
        ip: Type.Optional(
          Type.String({ description: "the node's address on the cluster network" }),
        ),
      },
      { description: 'present on the pods of an instant cluster' },
    ),
  ),
  cudaVersion: Type.Union([Type.String(), Type.Null()], {
    description:
      'CUDA version of the host a GPU pod is placed on (kept while it is stopped); null for CPU pods, pods not placed and hosts without one',
  }),
  ssh: Type.Object({
    proxy: Type.Union([SshEndpoint, Type.Null()], {
      description: 'always null: podyard runs no SSH proxy',
    }),
    direct: Type.Union([SshEndpoint, Type.Null()], {
      description: "to the pod's 22/tcp port; null unless the pod exposes it and is RUNNING",
    }),
  }),
  cost: Type.Number({ description: 'USD per hour; 0 when EXITED, ERROR or TERMINATED' }),
  locked: Type.Boolean(),
  hostLabels: Type.Optional(
    Type.Array(Type.String(), {
      description: 'podyard extension: the labels its host must have, when it asked for any',
    }),
  ),
  globalNetworking: Type.Object({
    enabled: Type.Boolean(),
    ip: Type.Optional(Type.String()),
    internalDns: Type.Optional(Type.String()),
  }),
  runtime: Type.Union([
    Type.Object({
      uptime: Type.Optional(Type.Integer()),
      gpus: Type.Optional(
        Type.Array(Type.Object({ util: Type.Integer(), memoryUtil: Type.Integer() })),
      ),
      cpu: Type.Optional(Type.Object({ util: Type.Integer() })),
      memory: Type.Optional(Type.Object({ util: Type.Integer() })),
      ports: Type.Optional(
        Type.Array(
          Type.Object({
            private: Type.Integer(),
            public: Type.Union([Type.Integer(), Type.Null()]),
            type: Type.String(),
            ip: Type.Union([Type.String(), Type.Null()]),
          }),
        ),
      ),
    }),
    Type.Null(),
  ]),
  statusReason: Type.Union([Type.String(), Type.Null()], {
    description: 'why the pod is EXITED or in ERROR (our extension)',
  }),
  createdAt: Type.String({ format: 'date-time' }),
  startedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
})

export const PodListQuery = QueryWithLists({
  status: QueryList('statuses; TERMINATED pods only when named'),
  name: Type.Optional(Type.String({ description: 'exact pod name' })),
  includeClusterPods: Type.Optional(
    Type.Boolean({ default: false, description: 'also the pods of instant clusters' }),
  ),
})

export const PodLogsQuery = Type.Object({
  source: Type.Optional(
    Type.Union([Type.Literal('container'), Type.Literal('system')], {
      description: 'one source; leave it out for both',
    }),
  ),
  tail: Type.Optional(Type.Integer({ minimum: 0, maximum: 5000, default: 100 })),
  since: Type.Optional(Type.String({ format: 'date-time' })),
  follow: Type.Optional(
    Type.Boolean({ default: true, description: 'keep the stream open for new lines' }),
  ),
})
