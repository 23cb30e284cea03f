/**
 * The health rules of a host's GPUs (docs/gpus.md, "Health rules"), pure: a reading in, a
 * verdict out. A GPU judged unhealthy is withdrawn from placement until an operator resets it;
 * a warning (thermal or hardware throttling, an XID an application usually causes) is shown but
 * takes nothing away, since a throttling GPU still computes correctly, only slower.
 */

/** What the host's sampler last saw of one GPU. */
export interface GpuReading {
  index: number
  uuid: string | null
  /** false: the GPU no longer answers (lost, or missing from the sampler's output). */
  responding: boolean
  utilPercent: number | null
  memoryUsedMib: number | null
  memoryTotalMib: number | null
  temperatureC: number | null
  powerDrawW: number | null
  /** Throttle reasons that signal trouble (thermal, hardware slowdown, power brake). */
  throttling: string[]
  eccUncorrected: number | null
  retiredPagesPending: boolean | null
  remappedRowsPending: boolean | null
  remappedRowsFailure: boolean | null
  /** XID numbers the driver logged for this GPU since the previous reading. */
  xids: number[]
}

export interface GpuVerdict {
  healthy: boolean
  /** Why it is unhealthy (empty when healthy): each a sentence a person reads. */
  problems: string[]
  warnings: string[]
}

/**
 * XIDs that mean the GPU or its memory is faulty (NVIDIA's "XID Errors" catalogue): double-bit
 * ECC (48), row remapping events and failures (63, 64), NVLink (74), fallen off the bus (79),
 * high single-bit ECC rate (92), contained and uncontained ECC (94, 95), GSP and firmware
 * errors (119, 120). Other XIDs (13 graphics exception, 31 MMU fault, 43 reset channel) are
 * usually the application's own fault, so they are warnings.
 */
export const WITHDRAWING_XIDS: ReadonlySet<number> = new Set([
  48, 63, 64, 74, 79, 92, 94, 95, 119, 120,
])

/** What stays accepted after an operator's reset: counters as they were then. */
export interface GpuBaseline {
  eccUncorrected: number
}

export function judgeGpu(reading: GpuReading, baseline?: GpuBaseline): GpuVerdict {
  const problems: string[] = []
  const warnings: string[] = []
  if (!reading.responding) problems.push('not responding (lost from the bus or the driver)')
  const ecc = reading.eccUncorrected ?? 0
  const accepted = baseline?.eccUncorrected ?? 0
  if (ecc > accepted)
    problems.push(
      `${ecc - accepted} uncorrectable ECC ${ecc - accepted === 1 ? 'error' : 'errors'}${accepted > 0 ? ' since the last reset' : ''}`,
    )
  if (reading.retiredPagesPending)
    problems.push('memory page retirement pending (needs a GPU reset)')
  if (reading.remappedRowsPending) problems.push('row remapping pending (needs a GPU reset)')
  if (reading.remappedRowsFailure) problems.push('row remapping failed (no spare memory rows left)')
  const xids = [...new Set(reading.xids)]
  const withdrawing = xids.filter((x) => WITHDRAWING_XIDS.has(x))
  const other = xids.filter((x) => !WITHDRAWING_XIDS.has(x))
  if (withdrawing.length > 0) problems.push(`XID ${withdrawing.join(', ')}`)
  if (other.length > 0) warnings.push(`XID ${other.join(', ')} (usually the application's fault)`)
  if (reading.throttling.length > 0) warnings.push(`throttling: ${reading.throttling.join(', ')}`)
  return { healthy: problems.length === 0, problems, warnings }
}

/**
 * The percent of a GPU's memory in use, which is what `memoryUtil` means to a pod's owner
 * (how full the card is), rather than nvidia-smi's utilization.memory (bandwidth use).
 */
export function memoryUsePercent(
  reading: Pick<GpuReading, 'memoryUsedMib' | 'memoryTotalMib'>,
): number {
  const { memoryUsedMib: used, memoryTotalMib: total } = reading
  if (used === null || total === null || total <= 0) return 0
  return Math.min(100, Math.round((used / total) * 100))
}
