import { createHash } from 'node:crypto'
import type { Logger } from 'pino'
import type { AccountCredit, CreditEntry } from '../domain/billing/credits.js'
import type { MeterState, MeteredKind, UsageRepo } from '../domain/billing/ports.js'
import {
  accrue,
  networkVolumeRates,
  podRates,
  segmentsAcrossChange,
  sizeHistorySegments,
  workerRates,
  type RateSegment,
  type Rates,
  type UsageRecord,
  type UsageResourceKind,
} from '../domain/billing/usage.js'
import type { Fleet } from '../domain/catalog/fleet.js'
import type { Pod } from '../domain/pods/pod.js'
import type { PodFilter } from '../domain/pods/ports.js'
import type { Endpoint } from '../domain/serverless/endpoint.js'
import type { ManagedWorker } from '../domain/serverless/worker.js'
import type {
  NetworkVolume,
  NetworkVolumeType,
  VolumeSizeRecord,
} from '../domain/volumes/network-volume.js'
import type { Clock, TimerClock } from '../shared/clock.js'
import { ReconcileLoop } from '../shared/reconcile-loop.js'

export const DEFAULT_METER_INTERVAL_MS = 10_000

export interface BillingMeterDeps {
  /** The clock its loop's timers wait on (default: the system clock): a ManualClock drives it. */
  timers?: TimerClock
  usage: UsageRepo
  pods: { list(filter: PodFilter): Promise<Pod[]> }
  workers: { listAll(): Promise<ManagedWorker[]> }
  endpoints: { listAll(): Promise<Endpoint[]> }
  volumes: {
    listAll(): Promise<NetworkVolume[]>
    sizeHistory(id: string): Promise<VolumeSizeRecord[]>
  }
  prices: Fleet['prices']
  clock: Clock
  logger: Logger
  intervalMs?: number
  /** Told each account's balance after a tick charged it (the zero-balance policy). */
  afterCharge?: (credit: AccountCredit) => Promise<void>
}

/** What a tick charges one resource for one hour: one ledger entry, grown by later ticks. */
interface HourCharge {
  resourceKind: UsageResourceKind
  resourceId: string
  bucketStart: string
  amountNano: number
}

/** One account's share of a tick. */
interface AccountTick {
  records: Map<string, UsageRecord>
  charges: Map<string, HourCharge>
  states: Array<{ state: MeterState; expectedUntil: string | null }>
  closed: Array<{ resourceKind: MeteredKind; resourceId: string; expectedUntil: string }>
}

interface Metering {
  kind: MeteredKind
  id: string
  accountId: string
  usage: { kind: UsageResourceKind; id: string }
  segments: RateSegment[]
  /** Charged up to here after this tick. */
  untilMs: number
  rates: Rates
  detail: string | null
  /** The resource is gone and charged to its end: forget its state. */
  close: boolean
}

const keyOf = (kind: string, id: string) => `${kind}:${id}`
const iso = (ms: number) => new Date(ms).toISOString()

/**
 * The billing meter (docs/billing.md): a reconcile loop that charges, every `intervalMs`, what
 * each pod, serverless worker and network volume used since the meter last saw it, writes it as
 * hourly usage records and takes it off the account's balance in one ledger entry per resource
 * and hour, which each tick of that hour adds to. Each account's tick is one transaction together with the meter's state, so a
 * restart (or a crash mid-tick) neither charges twice nor leaves a gap; a second replica's
 * meter that raced it finds a state moved and writes nothing for that account.
 */
export class BillingMeter {
  private readonly loop: ReconcileLoop

  constructor(private readonly deps: BillingMeterDeps) {
    this.loop = new ReconcileLoop({
      clock: deps.timers,
      pass: () => this.tick(),
      intervalMs: deps.intervalMs ?? DEFAULT_METER_INTERVAL_MS,
      onError: (error) => deps.logger.error({ err: error }, 'billing meter failed'),
    })
  }

  start(): void {
    this.loop.start()
  }

  stop(): Promise<void> {
    return this.loop.stop()
  }

  /** When the last pass ended that metered everything up to its start (ms), for the metrics. */
  meteredThroughMs: number | undefined

  /** One pass: meters everything up to now. Safe to call at any time (tests call it directly). */
  async tick(): Promise<void> {
    const nowMs = this.deps.clock.now().getTime()
    await this.meter(nowMs)
    this.meteredThroughMs = nowMs
  }

  /** The ledger ids of the charges of this tick and the last (hourChargeId). */
  private readonly chargeIds = new HourChargeIds()

  private async meter(nowMs: number): Promise<void> {
    this.chargeIds.nextTick()
    const states = new Map(
      (await this.deps.usage.meterStates()).map((s) => [keyOf(s.resourceKind, s.resourceId), s]),
    )
    const meterings: Metering[] = []
    const seen = new Set<string>()

    for (const pod of await this.deps.pods.list({})) {
      const state = states.get(keyOf('pod', pod.id))
      seen.add(keyOf('pod', pod.id))
      const metering = this.podMetering(pod, state, nowMs)
      if (metering) meterings.push(metering)
    }

    const disks = new Map((await this.deps.endpoints.listAll()).map((e) => [e.id, e.disk]))
    for (const worker of await this.deps.workers.listAll()) {
      if (worker.startedAt === null) continue
      const state = states.get(keyOf('worker', worker.id))
      seen.add(keyOf('worker', worker.id))
      const startMs = Date.parse(worker.startedAt)
      // An UNHEALTHY or STOPPED worker's workload is gone since its phase changed.
      const gone = worker.phase === 'UNHEALTHY' || worker.phase === 'STOPPED'
      const endMs = gone ? Math.min(Date.parse(worker.phaseChangedAt), nowMs) : nowMs
      const fromMs = Math.max(startMs, state ? Date.parse(state.meteredUntil) : startMs)
      const rates = workerRates(this.deps.prices, worker, disks.get(worker.endpointId) ?? 0)
      meterings.push({
        kind: 'worker',
        id: worker.id,
        accountId: worker.accountId,
        usage: { kind: 'serverless', id: worker.endpointId },
        segments: endMs > fromMs ? [{ fromMs, toMs: endMs, rates }] : [],
        untilMs: Math.max(fromMs, endMs),
        rates,
        detail: null,
        close: false,
      })
    }

    const volumes = await this.deps.volumes.listAll()
    for (const volume of volumes) {
      const state = states.get(keyOf('networkVolume', volume.id))
      seen.add(keyOf('networkVolume', volume.id))
      meterings.push(
        await this.volumeMetering(volume.id, volume.accountId, volume.type, {
          fromMs: state ? Date.parse(state.meteredUntil) : Date.parse(volume.createdAt),
          nowMs,
          close: false,
        }),
      )
    }

    for (const [key, state] of states) {
      if (seen.has(key)) continue
      if (state.resourceKind === 'networkVolume') {
        // Deleted since the last tick: its size history says until when it was rented.
        meterings.push(
          await this.volumeMetering(
            state.resourceId,
            state.accountId,
            (state.detail ?? 'STANDARD') as NetworkVolumeType,
            { fromMs: Date.parse(state.meteredUntil), nowMs, close: true },
          ),
        )
        continue
      }
      // A purged pod or a stopped worker: it was charged up to the last tick that saw it.
      meterings.push({
        kind: state.resourceKind,
        id: state.resourceId,
        accountId: state.accountId,
        usage: { kind: 'pod', id: state.resourceId },
        segments: [],
        untilMs: Date.parse(state.meteredUntil),
        rates: {},
        detail: state.detail,
        close: true,
      })
    }

    const ticks = new Map<string, AccountTick>()
    for (const metering of meterings) {
      this.plan(ticks, metering, states.get(keyOf(metering.kind, metering.id)))
    }
    for (const [accountId, tick] of ticks) {
      try {
        await this.commit(accountId, tick, nowMs)
      } catch (error) {
        // One account's failure must not stop the others' metering; it is retried next tick.
        this.deps.logger.error({ err: error, accountId }, 'billing meter failed for an account')
      }
    }
  }

  private podMetering(pod: Pod, state: MeterState | undefined, nowMs: number): Metering | null {
    const terminated = pod.status === 'TERMINATED'
    // A pod terminated before the meter ever saw it ran for less than one interval: unknown rates.
    if (terminated && !state) return null
    const fromMs = state ? Date.parse(state.meteredUntil) : Date.parse(pod.createdAt)
    const endMs = terminated
      ? Math.min(Date.parse(pod.terminatedAt ?? pod.lastStatusChange), nowMs)
      : nowMs
    const rates = podRates(pod)
    return {
      kind: 'pod',
      id: pod.id,
      accountId: pod.accountId,
      usage: { kind: 'pod', id: pod.id },
      segments: segmentsAcrossChange({
        fromMs,
        toMs: endMs,
        changedAtMs: Date.parse(pod.lastStatusChange),
        previous: state?.rates,
        current: rates,
      }),
      untilMs: Math.max(fromMs, endMs),
      rates,
      detail: null,
      close: terminated,
    }
  }

  private async volumeMetering(
    id: string,
    accountId: string,
    type: NetworkVolumeType,
    at: { fromMs: number; nowMs: number; close: boolean },
  ): Promise<Metering> {
    const history = (await this.deps.volumes.sizeHistory(id)).map((h) => ({
      sizeGb: h.sizeGb,
      changedAtMs: Date.parse(h.changedAt),
    }))
    const segments = sizeHistorySegments({ fromMs: at.fromMs, toMs: at.nowMs, history, type })
    return {
      kind: 'networkVolume',
      id,
      accountId,
      usage: { kind: 'networkVolume', id },
      segments,
      untilMs: Math.max(at.fromMs, at.nowMs),
      rates: networkVolumeRates(type, history.at(-1)?.sizeGb ?? 0),
      detail: type,
      close: at.close,
    }
  }

  private plan(
    ticks: Map<string, AccountTick>,
    metering: Metering,
    state: MeterState | undefined,
  ): void {
    const { accruals, carries } = accrue(metering.segments, state?.carries ?? {})
    const meteredUntil = iso(metering.untilMs)
    const unchanged =
      state !== undefined &&
      !metering.close &&
      accruals.length === 0 &&
      state.meteredUntil === meteredUntil &&
      JSON.stringify(state.carries) === JSON.stringify(carries) &&
      JSON.stringify(state.rates) === JSON.stringify(metering.rates)
    if (unchanged) return
    let tick = ticks.get(metering.accountId)
    if (!tick) {
      tick = { records: new Map(), charges: new Map(), states: [], closed: [] }
      ticks.set(metering.accountId, tick)
    }
    for (const accrual of accruals) {
      const bucketStart = iso(accrual.bucketStartMs)
      const key = `${metering.usage.kind}:${metering.usage.id}:${accrual.category}:${bucketStart}`
      const record = tick.records.get(key)
      if (record) record.amountNano += accrual.amountNano
      else {
        tick.records.set(key, {
          accountId: metering.accountId,
          resourceKind: metering.usage.kind,
          resourceId: metering.usage.id,
          category: accrual.category,
          bucketStart,
          amountNano: accrual.amountNano,
        })
      }
      const hourKey = `${metering.usage.kind}:${metering.usage.id}:${bucketStart}`
      const charge = tick.charges.get(hourKey)
      if (charge) charge.amountNano += accrual.amountNano
      else {
        tick.charges.set(hourKey, {
          resourceKind: metering.usage.kind,
          resourceId: metering.usage.id,
          bucketStart,
          amountNano: accrual.amountNano,
        })
      }
    }
    if (metering.close) {
      if (state) {
        tick.closed.push({
          resourceKind: metering.kind,
          resourceId: metering.id,
          expectedUntil: state.meteredUntil,
        })
      }
      return
    }
    tick.states.push({
      state: {
        resourceKind: metering.kind,
        resourceId: metering.id,
        accountId: metering.accountId,
        meteredUntil,
        rates: metering.rates,
        carries,
        detail: metering.detail,
      },
      expectedUntil: state?.meteredUntil ?? null,
    })
  }

  private async commit(accountId: string, tick: AccountTick, nowMs: number): Promise<void> {
    const charges: CreditEntry[] = [...tick.charges.values()]
      .filter((c) => c.amountNano > 0)
      .map((c) => ({
        id: this.chargeIds.of(accountId, c),
        accountId,
        amountNano: -c.amountNano,
        kind: 'charge',
        note: `${USAGE_NOUNS[c.resourceKind]} ${c.resourceId}: usage in the hour from ${c.bucketStart}`,
        createdBy: null,
        createdAt: iso(nowMs),
      }))
    const credit = await this.deps.usage.commit({
      accountId,
      records: [...tick.records.values()],
      states: tick.states,
      closed: tick.closed,
      charges,
    })
    if (!credit) {
      this.deps.logger.info({ accountId }, 'billing meter: another meter charged first; skipped')
      return
    }
    if (charges.length > 0 && this.deps.afterCharge) await this.deps.afterCharge(credit)
  }
}

const USAGE_NOUNS: Record<UsageResourceKind, string> = {
  pod: 'pod',
  serverless: 'serverless endpoint',
  networkVolume: 'network volume',
  endpoint: 'public model',
}

/**
 * The ledger id of one resource's charges in one hour: the same in every tick and on every
 * replica, so a tick after a restart (or another replica's) adds to the entry that the hour's
 * earlier ticks started, instead of a new entry per tick. A credit entry id in shape.
 */
function hourChargeId(accountId: string, charge: HourCharge): string {
  const digest = createHash('sha256')
    .update(`${accountId}\0${charge.resourceKind}\0${charge.resourceId}\0${charge.bucketStart}`)
    .digest()
  return `cred_${BigInt(`0x${digest.toString('hex', 0, 12)}`)
    .toString(36)
    .padStart(14, '0')
    .slice(-14)}`
}

/**
 * hourChargeId of the charges of the last tick and this one: a resource's id is the same in
 * every tick of an hour, and a sha256 per charge per tick was a fifth of a tick's CPU with
 * 2 500 running pods. Holds only what the last two ticks charged.
 */
class HourChargeIds {
  private current = new Map<string, string>()
  private previous = new Map<string, string>()

  nextTick(): void {
    this.previous = this.current
    this.current = new Map()
  }

  of(accountId: string, charge: HourCharge): string {
    const key = `${accountId}\0${charge.resourceKind}\0${charge.resourceId}\0${charge.bucketStart}`
    let id = this.current.get(key) ?? this.previous.get(key)
    if (id === undefined) id = hourChargeId(accountId, charge)
    this.current.set(key, id)
    return id
  }
}
