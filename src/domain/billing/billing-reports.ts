/**
 * The billing reports of `/v2/billing/...` (wire-compat §3.2, §3.3; docs/billing.md): the hourly
 * usage records summed into buckets of an hour, day, week, month or year.
 */
import { AppError } from '../../shared/app-error.js'
import type { Clock } from '../../shared/clock.js'
import { nanoToUsd } from './credits.js'
import type { UsageRepo } from './ports.js'
import type { UsageCategory, UsageRecord, UsageResourceKind } from './usage.js'

export const BUCKET_SIZES = ['hour', 'day', 'week', 'month', 'year'] as const
export type BucketSize = (typeof BUCKET_SIZES)[number]
export const DEFAULT_BUCKET_SIZE: BucketSize = 'day'
/** Buckets a report covers when neither startTime nor lastN is given. */
export const DEFAULT_BUCKETS: Readonly<Record<BucketSize, number>> = {
  hour: 24,
  day: 30,
  week: 12,
  month: 12,
  year: 5,
}
/** The most buckets one report may span (a year of days; 41 days of hours). */
export const MAX_BUCKETS = 1000

/** The start of the bucket holding `ms`, UTC; weeks start on Monday (ISO 8601). */
export function bucketStart(ms: number, size: BucketSize): number {
  const d = new Date(ms)
  switch (size) {
    case 'hour':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours())
    case 'day':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate())
    case 'week': {
      const day = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate())
      return day - ((d.getUTCDay() + 6) % 7) * 86_400_000
    }
    case 'month':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
    case 'year':
      return Date.UTC(d.getUTCFullYear(), 0, 1)
  }
}

/** `ms` (a bucket start) moved by `n` buckets. */
export function addBuckets(ms: number, size: BucketSize, n: number): number {
  const d = new Date(ms)
  switch (size) {
    case 'hour':
      return ms + n * 3_600_000
    case 'day':
      return ms + n * 86_400_000
    case 'week':
      return ms + n * 7 * 86_400_000
    case 'month':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + n, 1)
    case 'year':
      return Date.UTC(d.getUTCFullYear() + n, 0, 1)
  }
}

/** The end of the bucket holding `ms`, or `ms` itself when it is a bucket boundary. */
export function bucketCeil(ms: number, size: BucketSize): number {
  const start = bucketStart(ms, size)
  return start === ms ? ms : addBuckets(start, size, 1)
}

export interface ReportQuery {
  startTime?: string
  endTime?: string
  bucketSize?: BucketSize
  lastN?: number
}

export interface ReportWindow {
  startMs: number
  endMs: number
  bucketSize: BucketSize
  /** The bucket starts, oldest first. */
  buckets: number[]
}

const invalid = (problem: string) =>
  new AppError('VALIDATION_FAILED', `the request failed validation: ${problem}`, {
    errors: [problem],
  })

/**
 * The window of a report: startTime snapped down and endTime snapped up to the bucket; endTime
 * defaults to the end of the current bucket, startTime to lastN (or DEFAULT_BUCKETS) buckets
 * before endTime. 422 for startTime with lastN, an empty window or one of more than MAX_BUCKETS.
 */
export function reportWindow(query: ReportQuery, nowMs: number): ReportWindow {
  const bucketSize = query.bucketSize ?? DEFAULT_BUCKET_SIZE
  const parse = (name: string, value: string | undefined) => {
    if (value === undefined) return undefined
    const ms = Date.parse(value)
    if (Number.isNaN(ms)) throw invalid(`querystring.${name}: must be an RFC 3339 date-time`)
    return ms
  }
  const start = parse('startTime', query.startTime)
  const end = parse('endTime', query.endTime)
  if (start !== undefined && query.lastN !== undefined) {
    throw invalid('querystring.lastN: give either startTime or lastN, not both')
  }
  const endMs = bucketCeil(end ?? nowMs, bucketSize)
  const startMs =
    start !== undefined
      ? bucketStart(start, bucketSize)
      : addBuckets(
          bucketStart(endMs, bucketSize),
          bucketSize,
          -(query.lastN ?? DEFAULT_BUCKETS[bucketSize]),
        )
  if (startMs >= endMs) {
    throw invalid('querystring.startTime: must be before endTime')
  }
  const buckets: number[] = []
  for (let at = startMs; at < endMs; at = addBuckets(at, bucketSize, 1)) {
    buckets.push(at)
    if (buckets.length > MAX_BUCKETS) {
      throw invalid(
        `querystring: the report would have more than ${MAX_BUCKETS} ${bucketSize} buckets; narrow startTime/endTime or use a larger bucketSize`,
      )
    }
  }
  return { startMs, endMs, bucketSize, buckets }
}

type Amounts = Record<string, number>

interface ResourceLayout {
  idField: string
  amounts: Record<string, UsageCategory[]>
  extra: Amounts
  unique: string
}

/**
 * `/billing/clusters`: the usage of a cluster's pods, grouped by cluster (wire-compat §3.3
 * ClusterBillingAmounts). Networking between nodes is not charged, so it is always 0.
 */
const CLUSTER_AMOUNTS: ResourceLayout = {
  idField: 'clusterId',
  amounts: { gpuAmount: ['podGpu'], diskAmount: ['podDisk'], networkingAmount: [] },
  extra: {},
  unique: 'uniqueClusterCount',
}

/** Which categories make which amount of a per-resource record. */
const RESOURCE_AMOUNTS: Record<UsageResourceKind, ResourceLayout> = {
  pod: {
    idField: 'podId',
    amounts: { gpuAmount: ['podGpu'], cpuAmount: ['podCpu'], diskAmount: ['podDisk'] },
    extra: {},
    unique: 'uniquePodCount',
  },
  serverless: {
    idField: 'serverlessId',
    amounts: {
      gpuAmount: ['serverlessGpu'],
      cpuAmount: ['serverlessCpu'],
      diskAmount: ['serverlessDisk'],
    },
    extra: { feeAmount: 0 },
    unique: 'uniqueServerlessCount',
  },
  networkVolume: {
    idField: 'networkVolumeId',
    amounts: {
      standardAmount: ['storageStandard'],
      highPerformanceAmount: ['storageHighPerformance'],
    },
    extra: {},
    unique: 'uniqueNetworkVolumeCount',
  },
  endpoint: {
    idField: 'endpointId',
    amounts: {},
    extra: {},
    unique: 'uniqueEndpointCount',
  },
}

/** The aggregated record's amounts (wire-compat §3.3), with the categories behind them. */
const TOTAL_AMOUNTS: Record<string, UsageCategory[]> = {
  podGpuAmount: ['podGpu'],
  podCpuAmount: ['podCpu'],
  podDiskAmount: ['podDisk'],
  serverlessGpuAmount: ['serverlessGpu'],
  serverlessCpuAmount: ['serverlessCpu'],
  serverlessDiskAmount: ['serverlessDisk'],
  serverlessFeeAmount: [],
  storageStandardAmount: ['storageStandard'],
  storageHighPerformanceAmount: ['storageHighPerformance'],
  endpointAmount: ['endpoint'],
  clusterGpuAmount: [],
  clusterDiskAmount: [],
  clusterNetworkingAmount: [],
}

function amountsOf(records: UsageRecord[], layout: Record<string, UsageCategory[]>): Amounts {
  const nano: Amounts = { totalAmount: 0 }
  for (const field of Object.keys(layout)) nano[field] = 0
  for (const record of records) {
    nano.totalAmount! += record.amountNano
    for (const [field, categories] of Object.entries(layout)) {
      if (categories.includes(record.category)) nano[field]! += record.amountNano
    }
  }
  const usd: Amounts = {}
  for (const [field, value] of Object.entries(nano)) usd[field] = nanoToUsd(value)
  return usd
}

export interface BillingReport {
  records: Array<Record<string, unknown>>
  metadata: Record<string, unknown>
}

/** The reports of one account; another account's resources never appear (docs/billing.md). */
export class BillingReportService {
  constructor(private readonly deps: { usage: Pick<UsageRepo, 'records'>; clock: Clock }) {}

  private async load(
    accountId: string,
    window: ReportWindow,
    kinds: UsageResourceKind[],
    resourceId: string | undefined,
  ): Promise<UsageRecord[]> {
    return this.deps.usage.records({
      accountId,
      fromIso: new Date(window.startMs).toISOString(),
      toIso: new Date(window.endMs).toISOString(),
      resourceKinds: kinds,
      ...(resourceId !== undefined ? { resourceId } : {}),
    })
  }

  private queryOf(window: ReportWindow, query: ReportQuery, extra: Record<string, string>) {
    return {
      startTime: new Date(window.startMs).toISOString(),
      endTime: new Date(window.endMs).toISOString(),
      bucketSize: window.bucketSize,
      ...(query.lastN !== undefined ? { lastN: query.lastN } : {}),
      ...extra,
    }
  }

  /** `/v2/billing`: every bucket of the window (zeros included), all kinds of usage. */
  async totals(accountId: string, query: ReportQuery): Promise<BillingReport> {
    const window = reportWindow(query, this.deps.clock.now().getTime())
    const all = await this.load(
      accountId,
      window,
      ['pod', 'serverless', 'networkVolume', 'endpoint'],
      undefined,
    )
    const byBucket = groupByBucket(all, window)
    const records = window.buckets.map((start, i) => ({
      startTime: new Date(start).toISOString(),
      endTime: new Date(window.buckets[i + 1] ?? window.endMs).toISOString(),
      ...amountsOf(byBucket.get(start) ?? [], TOTAL_AMOUNTS),
    }))
    return {
      records,
      metadata: {
        query: this.queryOf(window, query, {}),
        recordCount: records.length,
        totals: amountsOf(all, TOTAL_AMOUNTS),
      },
    }
  }

  /**
   * A per-resource report: one record per bucket and resource that had usage in it (buckets
   * without usage are left out), oldest bucket first, then by id.
   */
  async byResource(
    accountId: string,
    kind: UsageResourceKind,
    query: ReportQuery & { resourceId?: string },
  ): Promise<BillingReport> {
    const window = reportWindow(query, this.deps.clock.now().getTime())
    const all = await this.load(accountId, window, [kind], query.resourceId)
    return this.report(all, window, query, RESOURCE_AMOUNTS[kind])
  }

  /**
   * `/billing/clusters`: the usage of pods that belong (or belonged) to a cluster, one record
   * per bucket and cluster. `clusterOf` maps the account's cluster pods to their cluster.
   */
  async byCluster(
    accountId: string,
    query: ReportQuery & { resourceId?: string },
    clusterOf: ReadonlyMap<string, string>,
  ): Promise<BillingReport> {
    const window = reportWindow(query, this.deps.clock.now().getTime())
    const podUsage = await this.load(accountId, window, ['pod'], undefined)
    const all = podUsage.flatMap((record) => {
      const clusterId = clusterOf.get(record.resourceId)
      if (clusterId === undefined) return []
      if (query.resourceId !== undefined && clusterId !== query.resourceId) return []
      return [{ ...record, resourceId: clusterId }]
    })
    return this.report(all, window, query, CLUSTER_AMOUNTS)
  }

  private report(
    all: UsageRecord[],
    window: ReportWindow,
    query: ReportQuery & { resourceId?: string },
    layout: ResourceLayout,
  ): BillingReport {
    const records: Array<Record<string, unknown>> = []
    for (const [start, inBucket] of groupByBucket(all, window)) {
      const ids = [...new Set(inBucket.map((r) => r.resourceId))].sort()
      const end = addBuckets(start, window.bucketSize, 1)
      for (const id of ids) {
        records.push({
          startTime: new Date(start).toISOString(),
          endTime: new Date(Math.min(end, window.endMs)).toISOString(),
          [layout.idField]: id,
          ...amountsOf(
            inBucket.filter((r) => r.resourceId === id),
            layout.amounts,
          ),
          ...layout.extra,
        })
      }
    }
    return {
      records,
      metadata: {
        query: this.queryOf(
          window,
          query,
          query.resourceId !== undefined ? { [layout.idField]: query.resourceId } : {},
        ),
        recordCount: records.length,
        [layout.unique]: new Set(all.map((r) => r.resourceId)).size,
        totals: { ...amountsOf(all, layout.amounts), ...layout.extra },
      },
    }
  }
}

/** Records by the start of their report bucket, in bucket order. */
function groupByBucket(records: UsageRecord[], window: ReportWindow): Map<number, UsageRecord[]> {
  const out = new Map<number, UsageRecord[]>()
  for (const record of records) {
    const start = bucketStart(Date.parse(record.bucketStart), window.bucketSize)
    const group = out.get(start)
    if (group) group.push(record)
    else out.set(start, [record])
  }
  return new Map([...out.entries()].sort((a, b) => a[0] - b[0]))
}
