import { Type, type Static } from '@sinclair/typebox'

const Cloud = Type.Union([Type.Literal('SECURE'), Type.Literal('COMMUNITY')])
const Status = Type.Union(
  ['PROVISIONING', 'STARTING', 'RUNNING', 'EXITED', 'ERROR', 'TERMINATED'].map((s) =>
    Type.Literal(s),
  ),
)
const ActionName = Type.Union(['start', 'stop', 'restart', 'terminate'].map((a) => Type.Literal(a)))
const MountPath = Type.String({
  minLength: 1,
  pattern: '^/',
  description: 'absolute path inside the container',
})
const strict = { additionalProperties: false } as const

const PersistentMount = Type.Object(
  { size: Type.Integer({ minimum: 10, description: 'GB of host-local storage' }), path: MountPath },
  strict,
)
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

/** Container configuration shared by templates, pods and endpoints (create form). */
const containerFields = {
  args: Type.Optional(
    Type.String({ description: 'run through /bin/sh -c; empty: the image default' }),
  ),
  disk: Type.Optional(Type.Integer({ minimum: 1, description: 'container disk, GB (default 50)' })),
  ports: Type.Optional(
    Type.Array(Type.String({ description: '<port>/<protocol>, e.g. 8888/http' })),
  ),
  env: Type.Optional(Type.Record(Type.String(), Type.String())),
  registry: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Null()])),
}

export const CreatePodBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 191 }),
    image: Type.String({ minLength: 1 }),
    ...containerFields,
    gpu: Type.Optional(
      Type.Object(
        {
          id: Type.String({ minLength: 1 }),
          count: Type.Optional(Type.Integer({ minimum: 1, default: 1 })),
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
    templateId: Type.Optional(Type.String({ minLength: 1 })),
  },
  strict,
)
export type CreatePodBody = Static<typeof CreatePodBody>

export const UpdatePodBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 191 })),
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
  cost: Type.Number({ description: 'USD per hour; 0 when EXITED, ERROR or TERMINATED' }),
  locked: Type.Boolean(),
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

export const PodListQuery = Type.Object({
  status: Type.Optional(
    Type.String({ description: 'statuses, comma-separated; TERMINATED pods only when named' }),
  ),
  name: Type.Optional(Type.String({ description: 'exact pod name' })),
})

export const PodLogsQuery = Type.Object({
  source: Type.Optional(
    Type.Union([Type.Literal('container'), Type.Literal('system')], { default: 'container' }),
  ),
  tail: Type.Optional(Type.Integer({ minimum: 0, maximum: 5000, default: 100 })),
  since: Type.Optional(Type.String({ format: 'date-time' })),
  follow: Type.Optional(
    Type.Boolean({ default: true, description: 'keep the stream open for new lines' }),
  ),
})
