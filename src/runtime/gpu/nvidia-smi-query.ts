/**
 * Pure parsers of nvidia-smi's machine-readable output (docs/gpus.md, "What podyard reads").
 * Every field may come back as a placeholder instead of a number: "[N/A]" (the GPU has no such
 * counter, e.g. ECC on a consumer card), "[Not Supported]", "[Unknown Error]", or "[GPU is lost]"
 * when the device stopped answering; those read as null, never as 0.
 */

/**
 * The fields of the long-lived sampler's `--query-gpu`, in this order. clocks_throttle_reasons
 * is the name every driver since 2013 accepts (newer ones alias it to clocks_event_reasons).
 */
export const GPU_QUERY_FIELDS = [
  'index',
  'uuid',
  'pci.bus_id',
  'utilization.gpu',
  'utilization.memory',
  'memory.used',
  'memory.total',
  'temperature.gpu',
  'power.draw',
  'clocks_throttle_reasons.active',
  'ecc.errors.uncorrected.volatile.total',
  'retired_pages.pending',
] as const

/** One GPU's line of `--query-gpu=GPU_QUERY_FIELDS --format=csv,noheader,nounits`. */
export interface GpuSample {
  index: number
  uuid: string | null
  /** "00000000:3B:00.0" as nvidia-smi prints it (kernel XID lines name the GPU by it). */
  busId: string | null
  /** Percent of the last sample period a kernel ran. */
  utilPercent: number | null
  /** Percent of the period device memory was read or written (bandwidth, not capacity). */
  memoryBandwidthPercent: number | null
  memoryUsedMib: number | null
  memoryTotalMib: number | null
  temperatureC: number | null
  powerDrawW: number | null
  /** The active clock throttle reasons as a bit mask (THROTTLE_REASON_BITS). */
  throttleMask: number | null
  /** Uncorrectable ECC errors since the driver loaded; null where the GPU has no ECC. */
  eccUncorrectedVolatile: number | null
  /** Pages waiting to be retired at the next reset (pre-Ampere GPUs; Ampere on remaps rows). */
  retiredPagesPending: boolean | null
  /** Every field said the GPU is lost: it no longer answers on the bus. */
  lost: boolean
}

export type GpuQueryLine =
  | { kind: 'sample'; sample: GpuSample }
  /** "Unable to determine the device handle for GPU 0000:3B:00.0: Unknown Error". */
  | { kind: 'unreachable'; busId: string; message: string }
  | { kind: 'other'; line: string }

/** A placeholder instead of a value: "[N/A]", "N/A", "[Not Supported]", "[GPU is lost]". */
export function isPlaceholder(field: string): boolean {
  const value = field.trim()
  return value === '' || value === 'N/A' || (value.startsWith('[') && value.endsWith(']'))
}

const LOST = /gpu is lost/i

function numberOf(field: string | undefined): number | null {
  if (field === undefined || isPlaceholder(field)) return null
  // With nounits most fields are bare numbers; without, "35 %" or "81559 MiB".
  const value = Number.parseFloat(field.trim())
  return Number.isFinite(value) ? value : null
}

function textOf(field: string | undefined): string | null {
  return field === undefined || isPlaceholder(field) ? null : field.trim()
}

function yesNoOf(field: string | undefined): boolean | null {
  const value = textOf(field)?.toLowerCase()
  if (value === undefined || value === null) return null
  if (value === 'yes' || value === '1' || value === 'true') return true
  if (value === 'no' || value === '0' || value === 'false') return false
  return null
}

/** "0x0000000000000004" (or a plain number) to its bits; null for a placeholder. */
function maskOf(field: string | undefined): number | null {
  const value = textOf(field)
  if (value === null) return null
  const parsed = /^0x[0-9a-f]+$/i.test(value) ? Number.parseInt(value, 16) : Number(value)
  return Number.isSafeInteger(parsed) ? parsed : null
}

const UNREACHABLE =
  /Unable to determine the device handle for (?:GPU\s*)?([0-9A-Fa-f:.]+)\s*:\s*(.*)$/

/**
 * One line of the sampler's output. Lines that are neither a sample nor a GPU's failure
 * (a driver banner, a blank line) come back as `other` and are ignored by the caller.
 */
export function parseGpuQueryLine(line: string): GpuQueryLine {
  const trimmed = line.trim()
  const unreachable = UNREACHABLE.exec(trimmed)
  if (unreachable) {
    return { kind: 'unreachable', busId: normaliseBusId(unreachable[1]!), message: trimmed }
  }
  const fields = trimmed.split(',').map((f) => f.trim())
  if (fields.length !== GPU_QUERY_FIELDS.length) return { kind: 'other', line: trimmed }
  const index = Number(fields[0])
  if (!Number.isSafeInteger(index) || index < 0) return { kind: 'other', line: trimmed }
  const at = (name: (typeof GPU_QUERY_FIELDS)[number]) => fields[GPU_QUERY_FIELDS.indexOf(name)]
  const lost = fields.slice(1).some((f) => LOST.test(f))
  const busId = textOf(at('pci.bus_id'))
  return {
    kind: 'sample',
    sample: {
      index,
      uuid: textOf(at('uuid')),
      busId: busId === null ? null : normaliseBusId(busId),
      utilPercent: numberOf(at('utilization.gpu')),
      memoryBandwidthPercent: numberOf(at('utilization.memory')),
      memoryUsedMib: numberOf(at('memory.used')),
      memoryTotalMib: numberOf(at('memory.total')),
      temperatureC: numberOf(at('temperature.gpu')),
      powerDrawW: numberOf(at('power.draw')),
      throttleMask: maskOf(at('clocks_throttle_reasons.active')),
      eccUncorrectedVolatile: numberOf(at('ecc.errors.uncorrected.volatile.total')),
      retiredPagesPending: yesNoOf(at('retired_pages.pending')),
      lost,
    },
  }
}

/**
 * nvidia-smi prints bus ids with an 8-digit domain ("00000000:3B:00.0"), the kernel's XID
 * lines and error messages with 4 ("0000:3b:00"), sometimes without the function: compare
 * domain-less, upper-case, function-less ids.
 */
export function normaliseBusId(busId: string): string {
  const parts = busId.trim().toUpperCase().split(':')
  const [bus, deviceFunction] = parts.slice(-2)
  if (bus === undefined || deviceFunction === undefined) return busId.trim().toUpperCase()
  return `${bus.padStart(2, '0')}:${deviceFunction.split('.')[0]!.padStart(2, '0')}`
}

/**
 * Bits of clocks_throttle_reasons.active (NVML's nvmlClocksThrottleReason*), each with whether
 * it is a sign of trouble (thermal or hardware slowdown) or of normal work (idle, power cap).
 */
export const THROTTLE_REASON_BITS: ReadonlyArray<{
  bit: number
  name: string
  trouble: boolean
}> = [
  { bit: 0x1, name: 'gpu idle', trouble: false },
  { bit: 0x2, name: 'applications clocks setting', trouble: false },
  { bit: 0x4, name: 'software power cap', trouble: false },
  { bit: 0x8, name: 'hardware slowdown', trouble: true },
  { bit: 0x10, name: 'sync boost', trouble: false },
  { bit: 0x20, name: 'software thermal slowdown', trouble: true },
  { bit: 0x40, name: 'hardware thermal slowdown', trouble: true },
  { bit: 0x80, name: 'hardware power brake slowdown', trouble: true },
  { bit: 0x100, name: 'display clock setting', trouble: false },
]

/** The names of the throttle reasons that signal trouble (thermal, hardware, power brake). */
export function troubleThrottleReasons(mask: number | null): string[] {
  if (mask === null) return []
  return THROTTLE_REASON_BITS.filter((r) => r.trouble && (mask & r.bit) !== 0).map((r) => r.name)
}
