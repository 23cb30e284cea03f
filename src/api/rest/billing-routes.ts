import { Type, type TSchema } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import {
  BUCKET_SIZES,
  MAX_BUCKETS,
  type BillingReportService,
  type BucketSize,
  type ReportQuery,
} from '../../domain/billing/billing-reports.js'
import type { UsageResourceKind } from '../../domain/billing/usage.js'
import { principalOf } from '../http/authentication.js'
import { ProblemSchema } from './problem-schema.js'

const tags = ['Billing']
const errors = { 401: ProblemSchema, 403: ProblemSchema, 422: ProblemSchema, 429: ProblemSchema }

const Usd = (description: string) => Type.Number({ description: `USD: ${description}` })
const Window = {
  startTime: Type.String({ format: 'date-time', description: 'start of the bucket' }),
  endTime: Type.String({ format: 'date-time', description: 'end of the bucket (exclusive)' }),
}

const baseQuery = {
  startTime: Type.Optional(
    Type.String({ format: 'date-time', description: 'RFC 3339; snapped down to its bucket' }),
  ),
  endTime: Type.Optional(
    Type.String({
      format: 'date-time',
      description: 'RFC 3339; snapped up to its bucket (default: the end of the current bucket)',
    }),
  ),
  bucketSize: Type.Optional(
    Type.Unsafe<BucketSize>({ type: 'string', enum: [...BUCKET_SIZES], default: 'day' }),
  ),
  lastN: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_BUCKETS,
      description: 'the last N buckets up to endTime (not with startTime)',
    }),
  ),
}

const TOTAL_FIELDS = [
  'totalAmount',
  'podGpuAmount',
  'podCpuAmount',
  'podDiskAmount',
  'serverlessGpuAmount',
  'serverlessCpuAmount',
  'serverlessDiskAmount',
  'serverlessFeeAmount',
  'storageStandardAmount',
  'storageHighPerformanceAmount',
  'endpointAmount',
  'clusterGpuAmount',
  'clusterDiskAmount',
  'clusterNetworkingAmount',
]

const amountsSchema = (fields: string[]) =>
  Object.fromEntries(fields.map((f) => [f, Usd(f.replace(/Amount$/, ''))]))

interface ResourceReport {
  path: string
  operationId: string
  summary: string
  /** `cluster`: the usage of the pods of instant clusters, by cluster. */
  kind: UsageResourceKind | 'cluster'
  idField: string
  queryId: string
  amounts: string[]
  unique: string
}

const RESOURCE_REPORTS: ResourceReport[] = [
  {
    path: '/billing/pods',
    operationId: 'listPodBilling',
    summary: 'Pod usage per bucket and pod',
    kind: 'pod',
    idField: 'podId',
    queryId: 'podId',
    amounts: ['totalAmount', 'gpuAmount', 'cpuAmount', 'diskAmount'],
    unique: 'uniquePodCount',
  },
  {
    path: '/billing/serverless',
    operationId: 'listServerlessBilling',
    summary: 'Serverless endpoint (worker) usage per bucket and endpoint',
    kind: 'serverless',
    idField: 'serverlessId',
    queryId: 'serverlessId',
    amounts: ['totalAmount', 'gpuAmount', 'cpuAmount', 'diskAmount', 'feeAmount'],
    unique: 'uniqueServerlessCount',
  },
  {
    path: '/billing/endpoints',
    operationId: 'listEndpointBilling',
    summary: 'Public model endpoint usage per bucket and model',
    kind: 'endpoint',
    idField: 'endpointId',
    queryId: 'endpointId',
    amounts: ['totalAmount'],
    unique: 'uniqueEndpointCount',
  },
  {
    path: '/billing/network-volumes',
    operationId: 'listNetworkVolumeBilling',
    summary: 'Network volume usage per bucket and volume',
    kind: 'networkVolume',
    idField: 'networkVolumeId',
    queryId: 'networkVolumeId',
    amounts: ['totalAmount', 'standardAmount', 'highPerformanceAmount'],
    unique: 'uniqueNetworkVolumeCount',
  },
  {
    path: '/billing/clusters',
    operationId: 'listClusterBilling',
    summary: 'Instant cluster usage (its pods) per bucket and cluster',
    kind: 'cluster',
    idField: 'clusterId',
    queryId: 'clusterId',
    amounts: ['totalAmount', 'gpuAmount', 'diskAmount', 'networkingAmount'],
    unique: 'uniqueClusterCount',
  },
]

const Metadata = (extra: Record<string, TSchema>, totals: string[]) =>
  Type.Object({
    query: Type.Object(
      {
        startTime: Type.String({ format: 'date-time' }),
        endTime: Type.String({ format: 'date-time' }),
        bucketSize: Type.String(),
        lastN: Type.Optional(Type.Integer()),
      },
      { additionalProperties: true },
    ),
    recordCount: Type.Integer(),
    ...extra,
    totals: Type.Object(amountsSchema(totals)),
  })

/**
 * `/billing...` (wire-compat §3.2, §3.3; docs/billing.md): the caller's usage in buckets.
 * Amounts are USD. Another account's resource id yields no records (never its usage).
 */
export async function billingRoutes(
  app: FastifyInstance,
  {
    reports,
    clusterOfPods,
  }: {
    reports: BillingReportService
    /** The account's cluster pods and their clusters, deleted clusters included. */
    clusterOfPods: (accountId: string) => Promise<ReadonlyMap<string, string>>
  },
): Promise<void> {
  app.get<{ Querystring: ReportQuery }>(
    '/billing',
    {
      schema: {
        tags,
        operationId: 'listBilling',
        summary: 'All usage of the account per bucket',
        querystring: Type.Object(baseQuery, { additionalProperties: false }),
        response: {
          200: Type.Object({
            records: Type.Array(Type.Object({ ...Window, ...amountsSchema(TOTAL_FIELDS) })),
            metadata: Metadata({}, TOTAL_FIELDS),
          }),
          ...errors,
        },
      },
    },
    async (request) => reports.totals(principalOf(request).accountId, request.query),
  )

  for (const report of RESOURCE_REPORTS) {
    app.get<{ Querystring: ReportQuery & Record<string, string | undefined> }>(
      report.path,
      {
        schema: {
          tags,
          operationId: report.operationId,
          summary: report.summary,
          querystring: Type.Object(
            {
              ...baseQuery,
              [report.queryId]: Type.Optional(
                Type.String({ minLength: 1, description: 'only this one of your resources' }),
              ),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Type.Object({
              records: Type.Array(
                Type.Object({
                  ...Window,
                  [report.idField]: Type.String(),
                  ...amountsSchema(report.amounts),
                }),
              ),
              metadata: Metadata({ [report.unique]: Type.Integer() }, report.amounts),
            }),
            ...errors,
          },
        },
      },
      async (request) => {
        const { accountId } = principalOf(request)
        const resourceId = request.query[report.queryId]
        const query = { ...request.query, ...(resourceId !== undefined ? { resourceId } : {}) }
        return report.kind === 'cluster'
          ? reports.byCluster(accountId, query, await clusterOfPods(accountId))
          : reports.byResource(accountId, report.kind, query)
      },
    )
  }
}
