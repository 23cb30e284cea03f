/**
 * Usage and its price (docs/billing.md): what the meter charges for, at which rates, and the
 * exact arithmetic that turns a rate and a stretch of time into whole nano-USD.
 */
import type { Fleet } from '../catalog/fleet.js'
import type { NetworkVolumeType } from '../volumes/network-volume.js'
import type { Pod } from '../pods/pod.js'
import { holdsResources } from '../pods/pod-rules.js'
import { usdToNano } from './credits.js'

/** The amounts of a billing record (wire-compat §3.3), one per kind of usage. */
export const USAGE_CATEGORIES = [
  'podGpu',
  'podCpu',
  'podDisk',
  'serverlessGpu',
  'serverlessCpu',
  'serverlessDisk',
  'storageStandard',
  'storageHighPerformance',
  'endpoint',
] as const
export type UsageCategory = (typeof USAGE_CATEGORIES)[number]

/**
 * What a usage record is about: a pod, a serverless endpoint (its workers), a network volume,
 * or a public model endpoint (`endpoint`, id = the model id).
 */
export const USAGE_RESOURCE_KINDS = ['pod', 'serverless', 'networkVolume', 'endpoint'] as const
export type UsageResourceKind = (typeof USAGE_RESOURCE_KINDS)[number]

/** One hour's usage of one resource in one category. */
export interface UsageRecord {
  accountId: string
  resourceKind: UsageResourceKind
  resourceId: string
  category: UsageCategory
  /** The hour the usage falls in (ISO, on the hour). */
  bucketStart: string
  amountNano: number
}

export const MS_PER_HOUR = 3_600_000
/** A billing month: 30 days, the month of every per-GB-month price here. */
export const HOURS_PER_BILLING_MONTH = 720
export const MS_PER_BILLING_MONTH = HOURS_PER_BILLING_MONTH * MS_PER_HOUR

/**
 * Storage list prices, USD per GB per billing month (wire-compat §8.2). The high-performance
 * network volume rate is ours: §8.2 gives none, and twice the standard rate is what the
 * faster tier costs at comparable clouds.
 */
export const STORAGE_PRICES = {
  /** A pod's or worker's container disk, while it runs (it is wiped when stopped). */
  containerDisk: 0.1,
  /** A pod's persistent volume while the pod runs. */
  podVolumeRunning: 0.1,
  /** A pod's persistent volume while the pod is stopped: it still holds the host's disk. */
  podVolumeStopped: 0.2,
  networkStandard: 0.07,
  /** A STANDARD network volume of NETWORK_VOLUME_LARGE_GB or more, all of it. */
  networkStandardLarge: 0.05,
  networkHighPerformance: 0.14,
} as const
/** "Over 1 TB" (§8.2), in decimal GB as the volume sizes are. */
export const NETWORK_VOLUME_LARGE_GB = 1000

/**
 * Rates of a resource now, per category, in nano-USD per billing month: one integer unit for
 * hourly prices (× 720) and per-GB-month prices alike, so accrual is exact integer arithmetic.
 */
export type Rates = Partial<Record<UsageCategory, number>>
/** Sub-nano remainders per category, in nano-USD × ms / MS_PER_BILLING_MONTH. */
export type Carries = Partial<Record<UsageCategory, number>>

export function monthlyNanoOfHourly(usdPerHour: number): number {
  return usdToNano(usdPerHour) * HOURS_PER_BILLING_MONTH
}

export function monthlyNanoOfStorage(usdPerGbMonth: number, gb: number): number {
  return usdToNano(usdPerGbMonth) * gb
}

function withoutZeros(rates: Rates): Rates {
  const out: Rates = {}
  for (const [category, rate] of Object.entries(rates) as Array<[UsageCategory, number]>) {
    if (rate > 0) out[category] = rate
  }
  return out
}

/**
 * A pod's rates in its status: compute at its hourly price and its container disk while it
 * holds resources (PROVISIONING, STARTING, RUNNING); its persistent volume at the running rate
 * then and at the stopped rate in EXITED and ERROR; nothing once TERMINATED.
 */
export function podRates(
  pod: Pick<Pod, 'status' | 'hourlyPrice' | 'compute' | 'disk' | 'mounts'>,
): Rates {
  if (pod.status === 'TERMINATED') return {}
  const volumeGb = pod.mounts.persistent?.size ?? 0
  if (!holdsResources(pod.status)) {
    return withoutZeros({
      podDisk: monthlyNanoOfStorage(STORAGE_PRICES.podVolumeStopped, volumeGb),
    })
  }
  return withoutZeros({
    [pod.compute.kind === 'gpu' ? 'podGpu' : 'podCpu']: monthlyNanoOfHourly(pod.hourlyPrice),
    podDisk:
      monthlyNanoOfStorage(STORAGE_PRICES.containerDisk, pod.disk) +
      monthlyNanoOfStorage(STORAGE_PRICES.podVolumeRunning, volumeGb),
  })
}

/** What a serverless worker runs on: a GPU type and count, or a CPU flavor and vCPUs. */
export interface WorkerCompute {
  gpuTypeId: string | null
  gpuCount: number
  cpuFlavorId: string | null
  vcpus: number
}

/**
 * USD per hour of a worker at the catalog's serverless prices (the fleet's price table): per
 * GPU for GPU workers (a type without a serverless price falls back to its secure pod price),
 * per vCPU for CPU workers.
 */
export function workerHourlyPrice(prices: Fleet['prices'], worker: WorkerCompute): number {
  if (worker.gpuTypeId !== null) {
    const price = prices.gpus[worker.gpuTypeId]
    const perGpu = price?.serverless ?? price?.secure ?? 0
    return Math.round(perGpu * worker.gpuCount * 10_000) / 10_000
  }
  if (worker.cpuFlavorId !== null) {
    const perVcpu = prices.cpus[worker.cpuFlavorId]?.serverlessPerVcpu ?? 0
    return Math.round(perVcpu * worker.vcpus * 10_000) / 10_000
  }
  return 0
}

/** A running worker's rates: its compute and its container disk (the endpoint's `disk`). */
export function workerRates(
  prices: Fleet['prices'],
  worker: WorkerCompute,
  containerDiskGb: number,
): Rates {
  return withoutZeros({
    [worker.gpuTypeId !== null ? 'serverlessGpu' : 'serverlessCpu']: monthlyNanoOfHourly(
      workerHourlyPrice(prices, worker),
    ),
    serverlessDisk: monthlyNanoOfStorage(STORAGE_PRICES.containerDisk, containerDiskGb),
  })
}

/** A network volume's rate at a size: by type, and the whole volume at the large rate from 1 TB. */
export function networkVolumeRates(type: NetworkVolumeType, sizeGb: number): Rates {
  if (sizeGb <= 0) return {}
  if (type === 'HIGH_PERFORMANCE') {
    return {
      storageHighPerformance: monthlyNanoOfStorage(STORAGE_PRICES.networkHighPerformance, sizeGb),
    }
  }
  const price =
    sizeGb >= NETWORK_VOLUME_LARGE_GB
      ? STORAGE_PRICES.networkStandardLarge
      : STORAGE_PRICES.networkStandard
  return { storageStandard: monthlyNanoOfStorage(price, sizeGb) }
}

/** A stretch of time [fromMs, toMs) at constant rates. */
export interface RateSegment {
  fromMs: number
  toMs: number
  rates: Rates
}

export interface Accrual {
  category: UsageCategory
  /** Epoch ms of the hour the amount falls in. */
  bucketStartMs: number
  amountNano: number
}

export function hourStart(ms: number): number {
  return Math.floor(ms / MS_PER_HOUR) * MS_PER_HOUR
}

const MONTH = BigInt(MS_PER_BILLING_MONTH)

/**
 * Charges `segments` exactly: each category accrues rate × ms, split at the hours, and only
 * whole nano-USD are charged; the remainder below one nano-USD is carried to the next call, so
 * the total over any sequence of calls is floor(rate × time) whatever the tick cadence. The
 * products exceed 2^53 (a day of a large pod), hence BigInt.
 */
export function accrue(
  segments: readonly RateSegment[],
  carries: Carries,
): { accruals: Accrual[]; carries: Carries } {
  const carry = new Map<UsageCategory, bigint>(
    (Object.entries(carries) as Array<[UsageCategory, number]>).map(([c, v]) => [c, BigInt(v)]),
  )
  const amounts = new Map<string, Accrual>()
  for (const segment of segments) {
    for (const [category, rate] of Object.entries(segment.rates) as Array<
      [UsageCategory, number]
    >) {
      if (!(rate > 0)) continue
      let from = segment.fromMs
      while (from < segment.toMs) {
        const bucket = hourStart(from)
        const to = Math.min(segment.toMs, bucket + MS_PER_HOUR)
        const total = BigInt(rate) * BigInt(to - from) + (carry.get(category) ?? 0n)
        const whole = total / MONTH
        carry.set(category, total % MONTH)
        if (whole > 0n) {
          const key = `${category}@${bucket}`
          const current = amounts.get(key)
          if (current) current.amountNano += Number(whole)
          else amounts.set(key, { category, bucketStartMs: bucket, amountNano: Number(whole) })
        }
        from = to
      }
    }
  }
  const nextCarries: Carries = {}
  for (const [category, value] of carry) if (value > 0n) nextCarries[category] = Number(value)
  return { accruals: [...amounts.values()], carries: nextCarries }
}

/**
 * The segments from `fromMs` to `toMs` of a resource whose rates changed at `changedAtMs`:
 * before that instant it had `previous` (the rates the meter saw last), from it on `current`.
 */
export function segmentsAcrossChange(input: {
  fromMs: number
  toMs: number
  changedAtMs: number
  previous: Rates | undefined
  current: Rates
}): RateSegment[] {
  const { fromMs, toMs, changedAtMs, previous, current } = input
  if (toMs <= fromMs) return []
  if (previous === undefined || changedAtMs <= fromMs) {
    return [{ fromMs, toMs, rates: current }]
  }
  if (changedAtMs >= toMs) return [{ fromMs, toMs, rates: previous }]
  return [
    { fromMs, toMs: changedAtMs, rates: previous },
    { fromMs: changedAtMs, toMs, rates: current },
  ]
}

/**
 * A volume's segments from its size history (each entry holds until the next; the last one,
 * until `toMs`), clipped to [fromMs, toMs).
 */
export function sizeHistorySegments(input: {
  fromMs: number
  toMs: number
  history: ReadonlyArray<{ sizeGb: number; changedAtMs: number }>
  type: NetworkVolumeType
}): RateSegment[] {
  const out: RateSegment[] = []
  const { history } = input
  for (let i = 0; i < history.length; i++) {
    const from = Math.max(history[i]!.changedAtMs, input.fromMs)
    const to = Math.min(history[i + 1]?.changedAtMs ?? input.toMs, input.toMs)
    const rates = networkVolumeRates(input.type, history[i]!.sizeGb)
    if (to > from && Object.keys(rates).length > 0) out.push({ fromMs: from, toMs: to, rates })
  }
  return out
}
