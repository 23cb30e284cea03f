import type { Answer } from '../../api/types'

type Totals = Answer<'/v2/billing', 'get'>['records'][number]
type PodRecord = Answer<'/v2/billing/pods', 'get'>['records'][number]
type EndpointRecord = Answer<'/v2/billing/serverless', 'get'>['records'][number]

/** Resource kinds, each a sum of the report's amounts (docs/billing.md, "Reports"). */
const KINDS: Array<[string, Array<keyof Totals>]> = [
  ['Pod GPU', ['podGpuAmount']],
  ['Pod CPU', ['podCpuAmount']],
  ['Pod disk', ['podDiskAmount']],
  [
    'Serverless',
    ['serverlessGpuAmount', 'serverlessCpuAmount', 'serverlessDiskAmount', 'serverlessFeeAmount'],
  ],
  ['Network volumes', ['storageStandardAmount', 'storageHighPerformanceAmount']],
  ['Public models', ['endpointAmount']],
  ['Clusters', ['clusterGpuAmount', 'clusterDiskAmount', 'clusterNetworkingAmount']],
]

export function bucketLabel(iso: string, bucketSize: string): string {
  const date = new Date(iso)
  return bucketSize === 'hour'
    ? date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
    : date.toLocaleDateString()
}

/** Spend per bucket by kind of resource; kinds with nothing spent are left out. */
export function byKind(records: Totals[]) {
  return KINDS.map(([label, fields]) => ({
    label,
    values: records.map((record) =>
      fields.reduce((sum, field) => sum + Number(record[field] ?? 0), 0),
    ),
  })).filter((series) => series.values.some((value) => value > 0))
}

/** Spend per bucket by pod and endpoint: the `limit` that spent most, the rest summed as "other". */
export function byResource(
  starts: string[],
  pods: PodRecord[],
  endpoints: EndpointRecord[],
  names: Map<string, string>,
  limit = 8,
) {
  const rows = new Map<string, number[]>()
  const add = (key: string, start: string, amount: number) => {
    const values = rows.get(key) ?? starts.map(() => 0)
    const index = starts.indexOf(start)
    if (index >= 0) values[index] = (values[index] ?? 0) + amount
    rows.set(key, values)
  }
  for (const record of pods)
    add(`pod ${names.get(record.podId) ?? record.podId}`, record.startTime, record.totalAmount)
  for (const record of endpoints) {
    add(
      `endpoint ${names.get(record.serverlessId) ?? record.serverlessId}`,
      record.startTime,
      record.totalAmount,
    )
  }
  const ranked = [...rows.entries()]
    .map(([label, values]) => ({ label, values }))
    .filter((series) => series.values.some((v) => v > 0))
    .sort((a, b) => sum(b.values) - sum(a.values))
  if (ranked.length <= limit) return ranked
  const rest = ranked.slice(limit)
  return [
    ...ranked.slice(0, limit),
    {
      label: 'other',
      values: starts.map((_, i) => rest.reduce((total, s) => total + (s.values[i] ?? 0), 0)),
    },
  ]
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0)
