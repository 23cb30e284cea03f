export interface CpuFlavor {
  /** Flavor id as clients send it in `cpu.id` / `cpuFlavorIds` (wire-compat §8.3). */
  id: string
  name: string
  group: string
  /** Memory that comes with each vCPU: a slot of n vCPUs holds n * ramGbPerVcpu GB. */
  ramGbPerVcpu: number
}

const COMPUTE = 'Compute-Optimized'
const GENERAL = 'General Purpose'
const MEMORY = 'Memory-Optimized'

/**
 * RAM multipliers follow the instance ids of wire-compat §8.3 (`cpu3c-2-4`, `cpu3g-2-8`):
 * c = 2 GB, g = 4 GB per vCPU; m doubles g.
 */
export const CPU_FLAVORS: readonly CpuFlavor[] = [
  { id: 'cpu3c', name: COMPUTE, group: 'Gen 3', ramGbPerVcpu: 2 },
  { id: 'cpu3g', name: GENERAL, group: 'Gen 3', ramGbPerVcpu: 4 },
  { id: 'cpu3m', name: MEMORY, group: 'Gen 3', ramGbPerVcpu: 8 },
  { id: 'cpu5c', name: COMPUTE, group: 'Gen 5', ramGbPerVcpu: 2 },
  { id: 'cpu5g', name: GENERAL, group: 'Gen 5', ramGbPerVcpu: 4 },
  { id: 'cpu5m', name: MEMORY, group: 'Gen 5', ramGbPerVcpu: 8 },
]

const byId = new Map(CPU_FLAVORS.map((f) => [f.id, f]))

export function findCpuFlavor(id: string): CpuFlavor | undefined {
  return byId.get(id)
}

export function isKnownCpuFlavor(id: string): boolean {
  return byId.has(id)
}

/** The specification's lower bound for `cpu.vcpuCount` (platform-api "Field bounds"). */
export const MIN_VCPU_COUNT = 2

/** `vcpuCount` must be a power of two and at least MIN_VCPU_COUNT (platform-api CPU config). */
export function isValidVcpuCount(n: number): boolean {
  // log2 rather than a bit trick: bitwise operators truncate to 32 bits.
  return Number.isSafeInteger(n) && n >= MIN_VCPU_COUNT && Number.isInteger(Math.log2(n))
}

/**
 * The largest valid vCPU count that fits in `vcpus` vCPUs and `memoryGb` GB for a flavor, or 0
 * when not even the minimum fits.
 */
export function largestVcpuCount(vcpus: number, memoryGb: number, ramGbPerVcpu: number): number {
  let best = 0
  for (let n = MIN_VCPU_COUNT; n <= vcpus && n * ramGbPerVcpu <= memoryGb; n *= 2) best = n
  return best
}

/** The valid counts from MIN_VCPU_COUNT up to `max`: [2, 4, 8, ...]. */
export function vcpuCountsUpTo(max: number): number[] {
  const out: number[] = []
  for (let n = MIN_VCPU_COUNT; n <= max; n *= 2) out.push(n)
  return out
}
