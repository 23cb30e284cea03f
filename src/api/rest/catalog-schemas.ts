import { Type } from '@sinclair/typebox'
import { QueryList, QueryWithLists } from './query-lists.js'

const Availability = Type.Union(['NONE', 'LOW', 'MEDIUM', 'HIGH'].map((v) => Type.Literal(v)))
const NamedAvailability = Type.Object({
  id: Type.String(),
  name: Type.String(),
  availability: Availability,
})

export const GpuType = Type.Object({
  id: Type.String(),
  name: Type.String(),
  pool: Type.Union([Type.String(), Type.Null()]),
  manufacturer: Type.Union(['NVIDIA', 'AMD', 'UNKNOWN'].map((v) => Type.Literal(v))),
  memory: Type.Integer({ description: 'GB of GPU memory' }),
  secure: Type.Boolean(),
  community: Type.Boolean(),
  price: Type.Object(
    {
      secure: Type.Number({ description: 'USD/hour per GPU in the secure cloud (list price)' }),
      community: Type.Number({
        description: 'USD/hour per GPU in the community cloud (list price)',
      }),
      serverless: Type.Optional(
        Type.Number({ description: 'USD/hour per GPU of its serverless pool; absent without one' }),
      ),
    },
    {
      description:
        'List prices per GPU; given for both clouds even where one has no host of the type (see secure, community)',
    },
  ),
  maxCount: Type.Object({ secure: Type.Integer(), community: Type.Integer() }),
  availability: Availability,
  dataCenters: Type.Optional(Type.Array(NamedAvailability)),
  cudaVersions: Type.Optional(
    Type.Array(Type.Object({ version: Type.String(), available: Type.Boolean() })),
  ),
})

export const CpuType = Type.Object({
  id: Type.String({ description: 'CPU flavor id, as used in the cpu.id of a create-pod body' }),
  name: Type.String(),
  group: Type.String(),
  vcpu: Type.Object({ min: Type.Integer(), max: Type.Integer() }),
  vcpuCounts: Type.Array(Type.Integer(), { description: 'valid vcpuCount values (powers of two)' }),
  ramGbPerVcpu: Type.Number(),
  price: Type.Object({ securePerVcpu: Type.Number(), serverlessPerVcpu: Type.Number() }),
  availability: Availability,
  dataCenters: Type.Optional(Type.Array(NamedAvailability)),
})

export const DataCenter = Type.Object({
  id: Type.String(),
  name: Type.String(),
  region: Type.String(),
  countryCode: Type.Optional(
    Type.String({ description: 'ISO 3166-1 alpha-2 (ours; filter with countryCodes)' }),
  ),
  globalNetwork: Type.Boolean(),
  networkVolumeTypes: Type.Array(Type.String()),
  compliance: Type.Array(Type.String()),
  gpuAvailability: Type.Optional(Type.Array(NamedAvailability)),
  cpuAvailability: Type.Optional(Type.Array(NamedAvailability)),
})

const commaList = QueryList

export const GpuQuery = QueryWithLists({
  include: commaList('AVAILABILITY adds per-data-center and per-CUDA-version detail'),
  product: commaList('POD, CLUSTER, SERVERLESS'),
  count: Type.Optional(
    Type.Integer({ minimum: 1, default: 1, description: 'GPUs wanted in one pod' }),
  ),
  cloud: Type.Optional(Type.Union([Type.Literal('SECURE'), Type.Literal('COMMUNITY')])),
  cudaVersions: commaList('only hosts with one of these CUDA versions, e.g. 12.8'),
  minCudaVersion: Type.Optional(
    Type.String({ description: 'only hosts with at least this CUDA version' }),
  ),
  countryCodes: commaList(
    'only data centers in these countries (ISO 3166-1 alpha-2, e.g. RO,US) count for availability, dataCenters and cudaVersions; a type with none there is left out of the list',
  ),
})

export const CpuQuery = QueryWithLists({
  include: commaList('AVAILABILITY adds per-data-center detail'),
  product: commaList('POD, SERVERLESS'),
  vcpuCount: Type.Optional(Type.Integer({ minimum: 2, description: 'a power of two >= 2' })),
})

export const DataCenterQuery = QueryWithLists({
  include: commaList('GPU_AVAILABILITY, CPU_AVAILABILITY'),
  regions: commaList('region names, e.g. EUROPE'),
  networkVolumeTypes: commaList('STANDARD, HIGH_PERFORMANCE'),
  compliance: commaList('compliance names, e.g. GDPR'),
  countryCodes: commaList('ISO 3166-1 alpha-2 country codes, e.g. RO,US'),
  globalNetwork: Type.Optional(Type.Boolean()),
})

export const IdParams = Type.Object({ id: Type.String({ minLength: 1 }) })
