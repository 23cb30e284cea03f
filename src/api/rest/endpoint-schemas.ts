import { Type, type Static } from '@sinclair/typebox'
import { CUDA_VERSIONS, GPU_POOLS } from '../../domain/catalog/gpu-types.js'
import {
  MAX_ENDPOINT_NAME_LENGTH,
  MAX_ENDPOINT_TIMEOUT_MS,
  MAX_IDLE_TIMEOUT_S,
  MAX_WORKERS_PER_ENDPOINT,
  MIN_ENDPOINT_TIMEOUT_MS,
  MIN_IDLE_TIMEOUT_S,
  MIN_QUEUE_DELAY_S,
  MIN_REQUEST_COUNT,
} from '../../domain/serverless/endpoint-rules.js'
import {
  ENDPOINT_TYPES,
  FLASHBOOT_MODES,
  SCALING_TYPES,
  type EndpointView,
} from '../../domain/serverless/endpoint.js'
import { containerFields, HostLabels, strict } from './container-schemas.js'

const literals = <T extends string>(values: readonly T[]) =>
  Type.Union(values.map((v) => Type.Literal(v)))

const Pool = literals(GPU_POOLS)
const CudaVersion = literals(CUDA_VERSIONS)
const EndpointType = literals(ENDPOINT_TYPES)
const Flashboot = literals(FLASHBOOT_MODES)

const GpuBody = Type.Object(
  {
    pools: Type.Optional(
      Type.Array(Pool, { description: 'serverless GPU pool ids (wire-compat §8.2)' }),
    ),
    excludedTypes: Type.Optional(
      Type.Array(Type.String({ minLength: 1 }), { description: 'GPU type ids never used' }),
    ),
    count: Type.Optional(Type.Integer({ minimum: 1, description: 'GPUs per worker (default 1)' })),
    allowedCudaVersions: Type.Optional(Type.Array(CudaVersion)),
    minCudaVersion: Type.Optional(
      Type.Union([Type.String({ pattern: '^\\d+(\\.\\d+)*$' }), Type.Null()]),
    ),
  },
  strict,
)

const CpuBody = Type.Array(
  Type.Object(
    {
      id: Type.String({ minLength: 1, description: 'cpu3c, cpu3g, cpu5c or cpu5g' }),
      vcpuCount: Type.Integer({ minimum: 2, description: 'a power of two the flavor offers' }),
    },
    strict,
  ),
  { minItems: 1 },
)

const WorkersBody = Type.Object(
  {
    min: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_WORKERS_PER_ENDPOINT })),
    max: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_WORKERS_PER_ENDPOINT })),
    idleTimeout: Type.Optional(
      Type.Integer({
        minimum: MIN_IDLE_TIMEOUT_S,
        maximum: MAX_IDLE_TIMEOUT_S,
        description:
          'seconds (default 10); not with REQUEST_COUNT scaling (400), which leaves it out of responses',
      }),
    ),
  },
  strict,
)

const ScalingBody = Type.Object(
  {
    type: literals(SCALING_TYPES),
    queueDelay: Type.Optional(
      Type.Number({ minimum: MIN_QUEUE_DELAY_S, description: 'seconds; QUEUE_DELAY only' }),
    ),
    requestCount: Type.Optional(
      Type.Integer({ minimum: MIN_REQUEST_COUNT, description: 'REQUEST_COUNT only' }),
    ),
  },
  strict,
)

const endpointFields = {
  type: Type.Optional(EndpointType),
  templateId: Type.Optional(Type.String({ minLength: 1, description: 'xor image' })),
  image: Type.Optional(Type.String({ minLength: 1, description: 'xor templateId' })),
  ...containerFields,
  gpu: Type.Optional(GpuBody),
  cpu: Type.Optional(CpuBody),
  workers: Type.Optional(WorkersBody),
  scaling: Type.Optional(ScalingBody),
  dataCenterIds: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
  hostLabels: Type.Optional(HostLabels),
  networkVolumes: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
  timeout: Type.Optional(
    Type.Integer({
      minimum: MIN_ENDPOINT_TIMEOUT_MS,
      maximum: MAX_ENDPOINT_TIMEOUT_MS,
      description: 'execution timeout of jobs, ms (default 300000)',
    }),
  ),
  flashboot: Type.Optional(Flashboot),
}

const Name = Type.String({ minLength: 1, maxLength: MAX_ENDPOINT_NAME_LENGTH })

export const CreateEndpointBody = Type.Object({ name: Name, ...endpointFields }, strict)
export type CreateEndpointBody = Static<typeof CreateEndpointBody>

export const UpdateEndpointBody = Type.Object(
  { name: Type.Optional(Name), ...endpointFields },
  strict,
)
export type UpdateEndpointBody = Static<typeof UpdateEndpointBody>

const Url = Type.String()

export const EndpointSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  type: Type.Literal('QUEUE'),
  templateId: Type.Union([Type.String(), Type.Null()]),
  image: Type.String(),
  args: Type.String(),
  disk: Type.Integer(),
  env: Type.Record(Type.String(), Type.String()),
  ports: Type.Array(Type.String()),
  registry: Type.Union([Type.String(), Type.Null()]),
  requestUrls: Type.Object({
    run: Url,
    runSync: Url,
    status: Url,
    stream: Url,
    cancel: Url,
    retry: Url,
    purgeQueue: Url,
    health: Url,
  }),
  gpu: Type.Optional(
    Type.Object({
      pools: Type.Array(Type.String()),
      excludedTypes: Type.Array(Type.String()),
      count: Type.Integer(),
      allowedCudaVersions: Type.Array(Type.String()),
      minCudaVersion: Type.Union([Type.String(), Type.Null()]),
    }),
  ),
  cpu: Type.Optional(
    Type.Array(
      Type.Object({ id: Type.String(), vcpuCount: Type.Integer(), memory: Type.Integer() }),
    ),
  ),
  workers: Type.Object({
    min: Type.Integer(),
    max: Type.Integer(),
    idleTimeout: Type.Optional(
      Type.Integer({ description: 'left out with REQUEST_COUNT scaling, where it does not apply' }),
    ),
  }),
  scaling: Type.Union([
    Type.Object({ type: Type.Literal('QUEUE_DELAY'), queueDelay: Type.Number() }),
    Type.Object({ type: Type.Literal('REQUEST_COUNT'), requestCount: Type.Integer() }),
  ]),
  dataCenterIds: Type.Array(Type.String(), { description: 'empty: any data center' }),
  hostLabels: Type.Optional(
    Type.Array(Type.String(), {
      description: "podyard extension: labels its workers' hosts must have",
    }),
  ),
  networkVolumes: Type.Array(Type.String()),
  timeout: Type.Integer({ description: 'ms' }),
  flashboot: Flashboot,
  version: Type.Integer({ description: 'bumps when what workers run changes' }),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
})
export type EndpointJson = Static<typeof EndpointSchema>

/** One host's copy of an image (docs/fleet.md, "Images ahead of time"). */
export const HostImageSchema = Type.Object({
  hostId: Type.String(),
  image: Type.String(),
  state: Type.Union(
    [
      Type.Literal('PULLING'),
      Type.Literal('PRESENT'),
      Type.Literal('FAILED'),
      Type.Literal('ABSENT'),
    ],
    {
      description:
        'PRESENT: a worker starting there does no pull; ABSENT: no pull recorded there yet (the first worker there pulls it)',
    },
  ),
  reason: Type.Union([Type.String(), Type.Null()], { description: 'FAILED: why' }),
  bytesDone: Type.Union([Type.Number(), Type.Null()]),
  bytesTotal: Type.Union([Type.Number(), Type.Null()], {
    description: 'summed over the layers the engine has reported so far; null: none reported',
  }),
  startedAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
})

/** GET of one endpoint: the definition and where its image is ready. */
export const EndpointWithImageSchema = Type.Intersect([
  EndpointSchema,
  Type.Object({
    imageReadiness: Type.Optional(
      Type.Array(HostImageSchema, {
        description:
          "podyard extension, ignored by RunPod's clients: the endpoint's image on each Docker host that may run its workers, pulled ahead of time",
      }),
    ),
  }),
])

/** The wire form: `gpu` or `cpu`, never both and never null; no owner. */
export function endpointView(endpoint: EndpointView): EndpointJson {
  const { accountId: _owner, gpu, cpu, workers, ...rest } = endpoint
  // RunPod's v2 contract omits the idle timeout where it does not apply.
  const { idleTimeout, ...counts } = workers
  return {
    ...rest,
    workers: endpoint.scaling.type === 'REQUEST_COUNT' ? counts : { ...counts, idleTimeout },
    ...(gpu ? { gpu } : {}),
    ...(cpu ? { cpu } : {}),
  }
}
