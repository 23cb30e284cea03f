import { AppError } from '../../shared/app-error.js'
import { judgeGpu, type GpuReading } from './gpu-health.js'
import type { GpuWithdrawalRecord, GpuWithdrawalRepo } from './ports.js'

/** One GPU of a host as the operator sees it (host view, console, /metrics). */
export interface GpuStatus {
  index: number
  uuid: string | null
  /** HEALTHY, or WITHDRAWN from placement until an operator resets it. */
  health: 'HEALTHY' | 'WITHDRAWN'
  /** Why it was withdrawn; null while healthy. */
  reason: string | null
  withdrawnAt: string | null
  warnings: string[]
  /** When this server's sampler last read it; null when it has not (another replica's host). */
  sampledAt: string | null
  reading: GpuReading | null
}

export interface GpuWithdrawal {
  hostId: string
  index: number
  reason: string
}

interface Sampled {
  reading: GpuReading
  sampledAt: string
  warnings: string[]
  /** The last warning of an XID, shown for XID_WARNING_MS: an XID is reported once. */
  xidWarning?: { text: string; at: string }
}

/** How long a warning of an XID (reported once, in one round) stays on its GPU. */
export const XID_WARNING_MS = 60 * 60_000

/**
 * How long after learning of another replica's reset this board's readings do not withdraw the
 * GPU again: a round read before the reset (in the sampler's pipe, or between its lines and its
 * record) may still be on its way, with the counts from before a driver reload.
 */
export const RESET_SETTLE_MS = 5_000

/**
 * The latest reading of every GPU this server samples (in memory: the sampler runs beside the
 * host it reads), and every GPU's withdrawal, kept in the store so that a restarted server and
 * every replica agree (docs/gpus.md). A GPU found unhealthy is withdrawn once and stays
 * withdrawn, whatever later readings say, until reset(): a GPU that flaps must not take pods
 * between two bad readings. refresh() reads the store again (replicas do, every few seconds).
 */
export class GpuBoard {
  private readonly sampled = new Map<string, Map<number, Sampled>>()
  private stored = new Map<string, Map<number, GpuWithdrawalRecord>>()
  private withdrawnCache: Readonly<Record<string, readonly number[]>> | undefined
  /** Why a host's GPU sources (the kernel log) cannot be read, per host. */
  private readonly sourceProblems = new Map<string, string>()
  /** When this board learned that another replica reset a GPU, by `host/index` (ms). */
  private readonly resetsLearned = new Map<string, number>()

  constructor(
    private readonly repo: GpuWithdrawalRepo,
    private readonly now: () => string,
  ) {}

  /** Reads the withdrawals from the store. */
  async refresh(): Promise<void> {
    const next = new Map<string, Map<number, GpuWithdrawalRecord>>()
    for (const record of await this.repo.list()) {
      let gpus = next.get(record.hostId)
      if (!gpus) next.set(record.hostId, (gpus = new Map()))
      gpus.set(record.index, record)
      if (record.reason === null && this.stored.get(record.hostId)?.get(record.index)?.reason)
        this.resetsLearned.set(`${record.hostId}/${record.index}`, Date.parse(this.now()))
    }
    this.stored = next
    this.withdrawnCache = undefined
  }

  /**
   * A host's readings of one round; returns the GPUs this round newly withdrew (written to the
   * store first: a GPU another replica or an earlier round withdrew is not withdrawn twice).
   */
  async record(hostId: string, readings: readonly GpuReading[]): Promise<GpuWithdrawal[]> {
    let gpus = this.sampled.get(hostId)
    if (!gpus) this.sampled.set(hostId, (gpus = new Map()))
    const at = this.now()
    const found: Array<GpuWithdrawal & { eccUncorrected: number | null }> = []
    for (const reading of readings) {
      const stored = this.stored.get(hostId)?.get(reading.index)
      const baseline = stored ? { eccUncorrected: stored.acceptedEccUncorrected } : undefined
      const verdict = judgeGpu(reading, baseline)
      const xidNow = verdict.warnings.find((w) => w.startsWith('XID '))
      const earlier = gpus.get(reading.index)?.xidWarning
      const xidWarning = xidNow
        ? { text: `${xidNow} at ${at}`, at }
        : earlier && Date.parse(at) - Date.parse(earlier.at) < XID_WARNING_MS
          ? earlier
          : undefined
      const warnings = verdict.warnings.filter((w) => !w.startsWith('XID '))
      gpus.set(reading.index, {
        reading,
        sampledAt: at,
        warnings: xidWarning ? [...warnings, xidWarning.text] : warnings,
        ...(xidWarning ? { xidWarning } : {}),
      })
      if (
        !verdict.healthy &&
        !stored?.reason &&
        !this.settlingAfterReset(hostId, reading.index, at)
      )
        found.push({
          hostId,
          index: reading.index,
          reason: verdict.problems.join('; '),
          eccUncorrected: reading.eccUncorrected,
        })
    }
    const withdrawn: GpuWithdrawal[] = []
    let stale = false
    for (const { eccUncorrected, ...withdrawal } of found) {
      if (await this.repo.withdraw({ ...withdrawal, at, eccUncorrected })) {
        this.keep({
          hostId,
          index: withdrawal.index,
          reason: withdrawal.reason,
          withdrawnAt: at,
          eccUncorrected,
          acceptedEccUncorrected:
            this.stored.get(hostId)?.get(withdrawal.index)?.acceptedEccUncorrected ?? 0,
        })
        withdrawn.push(withdrawal)
      } else stale = true
    }
    // Withdrawn already by another replica, or this board read the store before it was.
    if (stale) await this.refresh()
    return withdrawn
  }

  /**
   * The operator says the GPU is fixed: it takes pods again, and its uncorrectable ECC count as
   * it stands now is accepted (volatile counts only drop at a driver reload). A replica that
   * does not sample the GPU accepts the count it was withdrawn with.
   */
  async reset(hostId: string, index: number): Promise<GpuStatus> {
    const sampled = this.sampled.get(hostId)?.get(index)
    const stored = this.stored.get(hostId)?.get(index)
    if (!sampled && !stored?.reason)
      throw new AppError('NOT_FOUND', `GPU ${index} of host ${hostId} has not been sampled`)
    const accepted =
      sampled?.reading.eccUncorrected ??
      Math.max(stored?.acceptedEccUncorrected ?? 0, stored?.eccUncorrected ?? 0)
    await this.repo.reset(hostId, index, accepted, this.now())
    this.keep({
      hostId,
      index,
      reason: null,
      withdrawnAt: null,
      eccUncorrected: null,
      acceptedEccUncorrected: accepted,
    })
    return this.statusOf(hostId, index)
  }

  /** Every GPU of the host this server samples or the store has withdrawn, by index. */
  statuses(hostId: string): GpuStatus[] {
    const indices = new Set(this.sampled.get(hostId)?.keys() ?? [])
    for (const [index, record] of this.stored.get(hostId) ?? []) {
      if (record.reason !== null) indices.add(index)
    }
    return [...indices].sort((a, b) => a - b).map((index) => this.statusOf(hostId, index))
  }

  reading(hostId: string, index: number): GpuReading | undefined {
    return this.sampled.get(hostId)?.get(index)?.reading
  }

  /** The hosts with a GPU sampled here or withdrawn in the store. */
  hostIds(): string[] {
    const ids = new Set(this.sampled.keys())
    for (const [hostId, gpus] of this.stored) {
      if ([...gpus.values()].some((r) => r.reason !== null)) ids.add(hostId)
    }
    return [...ids]
  }

  /** Withdrawn GPU indices per host (placement's input); the same object until one changes. */
  withdrawn(): Readonly<Record<string, readonly number[]>> {
    if (this.withdrawnCache) return this.withdrawnCache
    const out: Record<string, number[]> = {}
    for (const [hostId, gpus] of this.stored) {
      const indices = [...gpus.values()].filter((r) => r.reason !== null).map((r) => r.index)
      if (indices.length > 0) out[hostId] = indices.sort((a, b) => a - b)
    }
    this.withdrawnCache = Object.freeze(out)
    return this.withdrawnCache
  }

  /**
   * Forgets what was sampled on hosts no longer in the fleet (a host removed at runtime), so a
   * host added again under that id starts without old readings. Withdrawals stay in the store.
   */
  keepHosts(hostIds: ReadonlySet<string>): void {
    for (const id of [...this.sampled.keys()]) if (!hostIds.has(id)) this.sampled.delete(id)
    for (const id of [...this.sourceProblems.keys()])
      if (!hostIds.has(id)) this.sourceProblems.delete(id)
  }

  /** Why the host's GPU sources cannot be fully read (null: they can), for its warnings. */
  setSourceProblem(hostId: string, problem: string | null): void {
    if (problem === null) this.sourceProblems.delete(hostId)
    else this.sourceProblems.set(hostId, problem)
  }

  sourceProblem(hostId: string): string | undefined {
    return this.sourceProblems.get(hostId)
  }

  private settlingAfterReset(hostId: string, index: number, at: string): boolean {
    const key = `${hostId}/${index}`
    const learned = this.resetsLearned.get(key)
    if (learned === undefined) return false
    if (Date.parse(at) - learned < RESET_SETTLE_MS) return true
    this.resetsLearned.delete(key)
    return false
  }

  private keep(record: GpuWithdrawalRecord): void {
    let gpus = this.stored.get(record.hostId)
    if (!gpus) this.stored.set(record.hostId, (gpus = new Map()))
    gpus.set(record.index, record)
    this.withdrawnCache = undefined
  }

  private statusOf(hostId: string, index: number): GpuStatus {
    const sampled = this.sampled.get(hostId)?.get(index)
    const stored = this.stored.get(hostId)?.get(index)
    const withdrawn = stored?.reason != null
    return {
      index,
      uuid: sampled?.reading.uuid ?? null,
      health: withdrawn ? 'WITHDRAWN' : 'HEALTHY',
      reason: withdrawn ? stored.reason : null,
      withdrawnAt: withdrawn ? stored.withdrawnAt : null,
      warnings: sampled?.warnings ?? [],
      sampledAt: sampled?.sampledAt ?? null,
      reading: sampled?.reading ?? null,
    }
  }
}
