import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { CatalogService, StockViewer } from '../../domain/catalog/catalog-service.js'
import { isValidVcpuCount } from '../../domain/catalog/cpu-flavors.js'
import { AppError } from '../../shared/app-error.js'
import { principalOf } from '../http/authentication.js'
import { ProblemSchema } from './problem-schema.js'
import {
  CpuQuery,
  CpuType,
  DataCenter,
  DataCenterQuery,
  GpuQuery,
  GpuType,
  IdParams,
} from './catalog-schemas.js'
import { commaValues, enumValues } from './query-lists.js'

const errorResponses = {
  401: ProblemSchema,
  403: ProblemSchema,
  422: ProblemSchema,
  429: ProblemSchema,
}

/** `countryCodes=RO,US`: each an ISO 3166-1 alpha-2 code in capitals, else 422. */
function countryCodes(raw: string | readonly string[] | undefined): string[] | undefined {
  const codes = commaValues(raw)
  const bad = (codes ?? []).filter((code) => !/^[A-Z]{2}$/.test(code))
  if (bad.length > 0) {
    const errors = bad.map(
      (code) => `querystring.countryCodes: "${code}" is not a country code like RO or US`,
    )
    throw new AppError('VALIDATION_FAILED', errors.join('; '), { errors })
  }
  return codes
}

function gpuQuery(query: Static<typeof GpuQuery>) {
  const include = enumValues('include', query.include, ['AVAILABILITY'] as const)
  enumValues('product', query.product, ['POD', 'CLUSTER', 'SERVERLESS'] as const)
  const cudaVersions = commaValues(query.cudaVersions)
  if (cudaVersions && query.minCudaVersion !== undefined) {
    throw new AppError('RULE_CONFLICT', 'give cudaVersions or minCudaVersion, not both')
  }
  const badCuda = [
    ...(cudaVersions ?? []),
    ...(query.minCudaVersion ? [query.minCudaVersion] : []),
  ].filter((v) => !/^\d+(\.\d+)?$/.test(v))
  if (badCuda.length > 0) {
    const errors = badCuda.map((v) => `querystring: "${v}" is not a CUDA version like 12.8`)
    throw new AppError('VALIDATION_FAILED', errors.join('; '), { errors })
  }
  return {
    count: query.count ?? 1,
    cloud: query.cloud,
    cudaVersions,
    minCudaVersion: query.minCudaVersion,
    countryCodes: countryCodes(query.countryCodes),
    detail: include?.includes('AVAILABILITY') ?? false,
  }
}

function cpuQuery(query: Static<typeof CpuQuery>) {
  const include = enumValues('include', query.include, ['AVAILABILITY'] as const)
  enumValues('product', query.product, ['POD', 'SERVERLESS'] as const)
  if (query.vcpuCount !== undefined && !isValidVcpuCount(query.vcpuCount)) {
    const errors = ['querystring.vcpuCount: must be a power of two >= 2']
    throw new AppError('VALIDATION_FAILED', errors[0]!, { errors })
  }
  return { vcpuCount: query.vcpuCount, detail: include?.includes('AVAILABILITY') ?? false }
}

function dataCenterQuery(query: Static<typeof DataCenterQuery>) {
  const include = enumValues('include', query.include, [
    'GPU_AVAILABILITY',
    'CPU_AVAILABILITY',
  ] as const)
  return {
    globalNetwork: query.globalNetwork,
    regions: commaValues(query.regions),
    networkVolumeTypes: commaValues(query.networkVolumeTypes),
    compliance: commaValues(query.compliance),
    countryCodes: countryCodes(query.countryCodes),
    gpuDetail: include?.includes('GPU_AVAILABILITY') ?? false,
    cpuDetail: include?.includes('CPU_AVAILABILITY') ?? false,
  }
}

/** Stock is what the caller's account can take: hosts of pools it is not bound to count none. */
function viewerOf(request: FastifyRequest): StockViewer {
  return { accountId: principalOf(request).accountId }
}

function found<T>(value: T | undefined, what: string, id: string): T {
  if (value === undefined) throw new AppError('NOT_FOUND', `${what} ${id} not found`)
  return value
}

/** GET /v2/catalog/{gpus,cpus,datacenters}[/{id}]: what can be rented, at what price, how much is left. */
export async function catalogRoutes(
  app: FastifyInstance,
  { catalog }: { catalog: CatalogService },
): Promise<void> {
  app.get<{ Querystring: Static<typeof GpuQuery> }>(
    '/catalog/gpus',
    {
      schema: {
        tags: ['Catalog'],
        operationId: 'listGpuTypes',
        summary: 'GPU types, their prices and stock',
        querystring: GpuQuery,
        response: { 200: Type.Object({ gpus: Type.Array(GpuType) }), ...errorResponses },
      },
    },
    async (request) => ({
      gpus: await catalog.listGpuTypes(gpuQuery(request.query), viewerOf(request)),
    }),
  )

  app.get<{ Params: Static<typeof IdParams>; Querystring: Static<typeof GpuQuery> }>(
    '/catalog/gpus/:id',
    {
      schema: {
        tags: ['Catalog'],
        operationId: 'getGpuType',
        summary: 'One GPU type',
        params: IdParams,
        querystring: GpuQuery,
        response: { 200: GpuType, 404: ProblemSchema, ...errorResponses },
      },
    },
    async (request) =>
      found(
        await catalog.getGpuType(request.params.id, gpuQuery(request.query), viewerOf(request)),
        'GPU type',
        request.params.id,
      ),
  )

  app.get<{ Querystring: Static<typeof CpuQuery> }>(
    '/catalog/cpus',
    {
      schema: {
        tags: ['Catalog'],
        operationId: 'listCpuTypes',
        summary: 'CPU flavors, their prices and stock',
        querystring: CpuQuery,
        response: { 200: Type.Object({ cpus: Type.Array(CpuType) }), ...errorResponses },
      },
    },
    async (request) => ({
      cpus: await catalog.listCpuTypes(cpuQuery(request.query), viewerOf(request)),
    }),
  )

  app.get<{ Params: Static<typeof IdParams>; Querystring: Static<typeof CpuQuery> }>(
    '/catalog/cpus/:id',
    {
      schema: {
        tags: ['Catalog'],
        operationId: 'getCpuType',
        summary: 'One CPU flavor',
        params: IdParams,
        querystring: CpuQuery,
        response: { 200: CpuType, 404: ProblemSchema, ...errorResponses },
      },
    },
    async (request) =>
      found(
        await catalog.getCpuType(request.params.id, cpuQuery(request.query), viewerOf(request)),
        'CPU flavor',
        request.params.id,
      ),
  )

  app.get<{ Querystring: Static<typeof DataCenterQuery> }>(
    '/catalog/datacenters',
    {
      schema: {
        tags: ['Catalog'],
        operationId: 'listDataCenters',
        summary: 'Data centers and what they have in stock',
        querystring: DataCenterQuery,
        response: { 200: Type.Object({ dataCenters: Type.Array(DataCenter) }), ...errorResponses },
      },
    },
    async (request) => ({
      dataCenters: await catalog.listDataCenters(dataCenterQuery(request.query), viewerOf(request)),
    }),
  )

  app.get<{ Params: Static<typeof IdParams>; Querystring: Static<typeof DataCenterQuery> }>(
    '/catalog/datacenters/:id',
    {
      schema: {
        tags: ['Catalog'],
        operationId: 'getDataCenter',
        summary: 'One data center',
        params: IdParams,
        querystring: DataCenterQuery,
        response: { 200: DataCenter, 404: ProblemSchema, ...errorResponses },
      },
    },
    async (request) =>
      found(
        await catalog.getDataCenter(
          request.params.id,
          dataCenterQuery(request.query),
          viewerOf(request),
        ),
        'data center',
        request.params.id,
      ),
  )
}
