import { InvalidArgumentError, Option, type Command } from 'commander'
import type { BillingReport, BillingReportJson } from '../client/api-client.js'
import { clientFrom, withClientOptions, type ClientFlags } from './client-options.js'
import { formatTable } from './format-table.js'

export interface BillingCommandDeps {
  print(text: string): void
}

/** The server's bucket sizes (docs/billing.md, "Reports"). */
export const BUCKET_SIZES = ['hour', 'day', 'week', 'month', 'year'] as const

interface WindowFlags extends ClientFlags {
  start?: string
  end?: string
  bucket?: string
  last?: number
  all?: boolean
}

/**
 * USD with at least 2 decimals and up to 6 (the reports' precision): $0.08, $0.082778, $12.50.
 * Amounts below a cent still show, so an hour of a cheap disk is never printed as $0.00.
 */
export function formatUsd(amount: number): string {
  const digits = Math.abs(amount)
    .toFixed(6)
    .replace(/0{1,4}$/, '')
  return `${amount < 0 ? '-' : ''}$${digits}`
}

function positiveInteger(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) {
    throw new InvalidArgumentError('expected a whole number of buckets, 1 or more')
  }
  return Number(value)
}

/** The columns of one report: the route, its id column and its amounts (docs/billing.md). */
interface ReportShape {
  report: BillingReport
  description: string
  /** The filter flag, its query parameter and the record's id field. */
  filter?: { flag: string; help: string; query: string; idField: string; header: string }
  /** Amount fields after `totalAmount`, with their headers. */
  amounts: Array<[field: string, header: string]>
  /** `metadata` count of distinct resources, and what they are. */
  unique?: [field: string, noun: string]
}

const TOTAL_AMOUNTS: Array<[string, string]> = [
  ['podGpuAmount', 'POD GPU'],
  ['podCpuAmount', 'POD CPU'],
  ['podDiskAmount', 'POD DISK'],
  ['serverlessGpuAmount', 'SERVERLESS GPU'],
  ['serverlessCpuAmount', 'SERVERLESS CPU'],
  ['serverlessDiskAmount', 'SERVERLESS DISK'],
  ['serverlessFeeAmount', 'SERVERLESS FEE'],
  ['storageStandardAmount', 'STORAGE STANDARD'],
  ['storageHighPerformanceAmount', 'STORAGE HIGH-PERF'],
  ['endpointAmount', 'MODELS'],
  ['clusterGpuAmount', 'CLUSTER GPU'],
  ['clusterDiskAmount', 'CLUSTER DISK'],
  ['clusterNetworkingAmount', 'CLUSTER NETWORKING'],
]

const REPORTS: Record<string, ReportShape> = {
  totals: {
    report: '',
    description:
      'all usage of the account per bucket (the default); only the kinds of usage that cost something are shown as columns',
    amounts: TOTAL_AMOUNTS,
  },
  pods: {
    report: 'pods',
    description: 'pod usage per bucket and pod',
    filter: {
      flag: '--pod <id>',
      help: 'only this pod',
      query: 'podId',
      idField: 'podId',
      header: 'POD',
    },
    amounts: [
      ['gpuAmount', 'GPU'],
      ['cpuAmount', 'CPU'],
      ['diskAmount', 'DISK'],
    ],
    unique: ['uniquePodCount', 'pod(s)'],
  },
  serverless: {
    report: 'serverless',
    description: 'serverless endpoint (worker) usage per bucket and endpoint',
    filter: {
      flag: '--endpoint <id>',
      help: 'only this serverless endpoint',
      query: 'serverlessId',
      idField: 'serverlessId',
      header: 'ENDPOINT',
    },
    amounts: [
      ['gpuAmount', 'GPU'],
      ['cpuAmount', 'CPU'],
      ['diskAmount', 'DISK'],
      ['feeAmount', 'FEE'],
    ],
    unique: ['uniqueServerlessCount', 'endpoint(s)'],
  },
  endpoints: {
    report: 'endpoints',
    description: 'public model endpoint usage per bucket and model',
    filter: {
      flag: '--endpoint <model-id>',
      help: 'only this public model',
      query: 'endpointId',
      idField: 'endpointId',
      header: 'MODEL',
    },
    amounts: [],
    unique: ['uniqueEndpointCount', 'model(s)'],
  },
  volumes: {
    report: 'network-volumes',
    description: 'network volume usage per bucket and volume',
    filter: {
      flag: '--volume <id>',
      help: 'only this network volume',
      query: 'networkVolumeId',
      idField: 'networkVolumeId',
      header: 'VOLUME',
    },
    amounts: [
      ['standardAmount', 'STANDARD'],
      ['highPerformanceAmount', 'HIGH-PERF'],
    ],
    unique: ['uniqueNetworkVolumeCount', 'volume(s)'],
  },
  clusters: {
    report: 'clusters',
    description: 'instant cluster usage (its pods) per bucket and cluster',
    filter: {
      flag: '--cluster <id>',
      help: 'only this cluster',
      query: 'clusterId',
      idField: 'clusterId',
      header: 'CLUSTER',
    },
    amounts: [
      ['gpuAmount', 'GPU'],
      ['diskAmount', 'DISK'],
      ['networkingAmount', 'NETWORKING'],
    ],
    unique: ['uniqueClusterCount', 'cluster(s)'],
  },
}

const amountOf = (record: Record<string, unknown>, field: string) => Number(record[field] ?? 0)

/**
 * A report as a table, the window and its totals underneath. Buckets without spend are left
 * out unless `all` (a month of days of `$0.00` hides the one day that cost something); the
 * summary says how many were left out.
 */
export function reportTable(
  shape: ReportShape,
  report: BillingReportJson,
  options: { all?: boolean } = {},
): string {
  const { metadata } = report
  const records = options.all
    ? report.records
    : report.records.filter((r) => amountOf(r, 'totalAmount') !== 0)
  const hidden = report.records.length - records.length
  // The totals report has one record per bucket with every amount: show only those used.
  const amounts = shape.filter
    ? shape.amounts
    : shape.amounts.filter(
        ([field]) =>
          amountOf(metadata.totals, field) !== 0 || records.some((r) => amountOf(r, field) !== 0),
      )
  const headers = [
    'START',
    'END',
    ...(shape.filter ? [shape.filter.header] : []),
    'TOTAL',
    ...amounts.map(([, header]) => header),
  ]
  const rows = records.map((r) => [
    String(r.startTime),
    String(r.endTime),
    ...(shape.filter ? [String(r[shape.filter.idField])] : []),
    formatUsd(amountOf(r, 'totalAmount')),
    ...amounts.map(([field]) => formatUsd(amountOf(r, field))),
  ])
  const { query } = metadata
  const count = shape.unique ? `, ${Number(metadata[shape.unique[0]] ?? 0)} ${shape.unique[1]}` : ''
  const summary =
    `${query.bucketSize} buckets from ${query.startTime} to ${query.endTime}: ` +
    `${metadata.recordCount} record(s)${count}, total ${formatUsd(amountOf(metadata.totals, 'totalAmount'))}`
  const left = hidden > 0 ? `; ${hidden} without spend not shown (--all shows them)` : ''
  if (records.length === 0) return `${hidden > 0 ? 'No spend' : 'No usage'}. ${summary}${left}`
  return `${formatTable(headers, rows)}\n${summary}${left}`
}

/**
 * `podyard billing [totals|pods|serverless|endpoints|volumes]`: the `/v2/billing` reports
 * (docs/billing.md, "CLI"). Thin: one call, printed as a table or `--json`; the server checks
 * dates, windows and filters and its problem detail is the error.
 */
export function addBillingCommands(program: Command, deps: BillingCommandDeps): void {
  const billing = program
    .command('billing')
    .description("the account's usage in USD per time bucket, from a running server")
  const json = (value: unknown) => JSON.stringify(value, null, 2)

  for (const [name, shape] of Object.entries(REPORTS)) {
    const command = withClientOptions(
      billing.command(name, { isDefault: name === 'totals' }).description(shape.description),
    )
      .option('--start <time>', 'RFC 3339 start, snapped down to its bucket (not with --last)')
      .option('--end <time>', 'RFC 3339 end, snapped up to its bucket (default: now)')
      .addOption(
        new Option(
          '--bucket <size>',
          'bucket size (UTC; weeks start on Monday); default day',
        ).choices(BUCKET_SIZES),
      )
      .option('--last <n>', 'the last n buckets up to --end', positiveInteger)
      .option('--all', 'list buckets without spend too (by default only those that cost something)')
    if (shape.filter) command.option(shape.filter.flag, shape.filter.help)
    command.action(async (flags: WindowFlags & Record<string, unknown>) => {
      const filterValue = shape.filter
        ? (flags[filterFlagKey(shape.filter.flag)] as string | undefined)
        : undefined
      const report = await clientFrom(flags).billing(shape.report, {
        startTime: flags.start,
        endTime: flags.end,
        bucketSize: flags.bucket,
        lastN: flags.last,
        ...(shape.filter ? { [shape.filter.query]: filterValue } : {}),
      })
      deps.print(flags.json ? json(report) : reportTable(shape, report, { all: flags.all }))
    })
  }
}

/** `--pod <id>` -> `pod`: commander's key of a flag. */
function filterFlagKey(flag: string): string {
  return flag.slice(2).split(' ')[0]!
}
