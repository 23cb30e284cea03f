import { AppError } from '../../shared/app-error.js'
import { judgeGpu, type GpuBaseline, type GpuReading } from './gpu-health.js'

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
  /** When the sampler last read it; null before its first reading. */
  sampledAt: string | null
  reading: GpuReading | null
}

export interface GpuWithdrawal {
  hostId: string
  index: number
  reason: string
}

interface Kept {
  reading: GpuReading
  sampledAt: string
  warnings: string[]
  withdrawn?: { reason: string; at: string }
  baseline?: GpuBaseline
}

/**
 * The latest reading and health of every sampled GPU, held in this server's memory (the
 * sampler runs beside the host it reads; docs/gpus.md says what that means for replicas).
 * A GPU found unhealthy is withdrawn once and stays withdrawn, whatever later readings say,
 * until reset(): a GPU that flaps must not take pods between two bad readings.
 */
export class GpuBoard {
  private readonly hosts = new Map<string, Map<number, Kept>>()
  private withdrawnCache: Readonly<Record<string, readonly number[]>> | undefined

  constructor(private readonly now: () => string) {}

  /** A host's readings of one round; returns the GPUs this round newly withdrew. */
  record(hostId: string, readings: readonly GpuReading[]): GpuWithdrawal[] {
    let gpus = this.hosts.get(hostId)
    if (!gpus) this.hosts.set(hostId, (gpus = new Map()))
    const at = this.now()
    const withdrawn: GpuWithdrawal[] = []
    for (const reading of readings) {
      const kept = gpus.get(reading.index)
      const verdict = judgeGpu(reading, kept?.baseline)
      const next: Kept = {
        reading,
        sampledAt: at,
        warnings: verdict.warnings,
        ...(kept?.withdrawn ? { withdrawn: kept.withdrawn } : {}),
        ...(kept?.baseline ? { baseline: kept.baseline } : {}),
      }
      if (!verdict.healthy && !next.withdrawn) {
        const reason = verdict.problems.join('; ')
        next.withdrawn = { reason, at }
        withdrawn.push({ hostId, index: reading.index, reason })
        this.withdrawnCache = undefined
      }
      gpus.set(reading.index, next)
    }
    return withdrawn
  }

  /**
   * The operator says the GPU is fixed: it takes pods again, and its error counters as they
   * stand now are accepted (volatile ECC counts only drop at a driver reload).
   */
  reset(hostId: string, index: number): GpuStatus {
    const kept = this.hosts.get(hostId)?.get(index)
    if (!kept)
      throw new AppError('NOT_FOUND', `GPU ${index} of host ${hostId} has not been sampled`)
    delete kept.withdrawn
    kept.baseline = { eccUncorrected: kept.reading.eccUncorrected ?? 0 }
    this.withdrawnCache = undefined
    return statusOf(index, kept)
  }

  /** Every sampled GPU of the host, by index. */
  statuses(hostId: string): GpuStatus[] {
    const gpus = this.hosts.get(hostId)
    if (!gpus) return []
    return [...gpus.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, kept]) => statusOf(index, kept))
  }

  reading(hostId: string, index: number): GpuReading | undefined {
    return this.hosts.get(hostId)?.get(index)?.reading
  }

  hostIds(): string[] {
    return [...this.hosts.keys()]
  }

  /** Withdrawn GPU indices per host (placement's input); the same object until one changes. */
  withdrawn(): Readonly<Record<string, readonly number[]>> {
    if (this.withdrawnCache) return this.withdrawnCache
    const out: Record<string, number[]> = {}
    for (const [hostId, gpus] of this.hosts) {
      const indices = [...gpus.entries()].filter(([, k]) => k.withdrawn).map(([i]) => i)
      if (indices.length > 0) out[hostId] = indices.sort((a, b) => a - b)
    }
    this.withdrawnCache = Object.freeze(out)
    return this.withdrawnCache
  }
}

function statusOf(index: number, kept: Kept): GpuStatus {
  return {
    index,
    uuid: kept.reading.uuid,
    health: kept.withdrawn ? 'WITHDRAWN' : 'HEALTHY',
    reason: kept.withdrawn?.reason ?? null,
    withdrawnAt: kept.withdrawn?.at ?? null,
    warnings: kept.warnings,
    sampledAt: kept.sampledAt,
    reading: kept.reading,
  }
}
