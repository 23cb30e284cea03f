export type GpuManufacturer = 'NVIDIA' | 'AMD'

/** Serverless GPU pool ids of wire-compat §8.2. */
export const GPU_POOLS = [
  'AMPERE_16',
  'AMPERE_24',
  'ADA_24',
  'ADA_32_PRO',
  'AMPERE_48',
  'ADA_48_PRO',
  'AMPERE_80',
  'ADA_80_PRO',
  'BLACKWELL_96',
  'HOPPER_141',
  'BLACKWELL_180',
] as const

export type GpuPool = (typeof GPU_POOLS)[number]

export interface GpuType {
  /** The id RunPod's clients send (GraphQL `gpuTypes.id`, REST `gpu.id`); kept byte for byte. */
  id: string
  displayName: string
  memoryGb: number
  manufacturer: GpuManufacturer
  /** Serverless GPU pool (wire-compat §8.2), or null when serverless does not offer the type. */
  pool: GpuPool | null
}

const nvidia = (
  id: string,
  displayName: string,
  memoryGb: number,
  pool: GpuPool | null = null,
): GpuType => ({
  id,
  displayName,
  memoryGb,
  manufacturer: 'NVIDIA',
  pool,
})

/**
 * Every GPU type of wire-compat §8.1, in its order. The legacy REST v1 extras (double-space
 * typos, `Tesla T4`, ...) are left out: clients get ids from the catalog, and a type that no
 * catalog lists can never be placed anyway. Pools follow the §8.2 reference table, which is
 * where L4 sits in AMPERE_24 and A4500 in AMPERE_16.
 */
export const GPU_TYPES: readonly GpuType[] = [
  {
    id: 'AMD Instinct MI300X OAM',
    displayName: 'MI300X',
    memoryGb: 192,
    manufacturer: 'AMD',
    pool: null,
  },
  nvidia('NVIDIA A100 80GB PCIe', 'A100 PCIe', 80, 'AMPERE_80'),
  nvidia('NVIDIA A100-SXM4-80GB', 'A100 SXM', 80, 'AMPERE_80'),
  nvidia('NVIDIA A30', 'A30', 24),
  nvidia('NVIDIA A40', 'A40', 48, 'AMPERE_48'),
  nvidia('NVIDIA B200', 'B200', 180, 'BLACKWELL_180'),
  nvidia('NVIDIA B300 SXM6 AC', 'B300', 288),
  nvidia('NVIDIA GeForce RTX 3070', 'RTX 3070', 8),
  nvidia('NVIDIA GeForce RTX 3080', 'RTX 3080', 10),
  nvidia('NVIDIA GeForce RTX 3080 Ti', 'RTX 3080 Ti', 12),
  nvidia('NVIDIA GeForce RTX 3090', 'RTX 3090', 24, 'AMPERE_24'),
  nvidia('NVIDIA GeForce RTX 3090 Ti', 'RTX 3090 Ti', 24),
  nvidia('NVIDIA GeForce RTX 4070 Ti', 'RTX 4070 Ti', 12),
  nvidia('NVIDIA GeForce RTX 4080', 'RTX 4080', 16),
  nvidia('NVIDIA GeForce RTX 4080 SUPER', 'RTX 4080 SUPER', 16),
  nvidia('NVIDIA GeForce RTX 4090', 'RTX 4090', 24, 'ADA_24'),
  nvidia('NVIDIA GeForce RTX 5080', 'RTX 5080', 16),
  nvidia('NVIDIA GeForce RTX 5090', 'RTX 5090', 32, 'ADA_32_PRO'),
  nvidia('NVIDIA H100 80GB HBM3', 'H100 SXM', 80, 'ADA_80_PRO'),
  nvidia('NVIDIA H100 NVL', 'H100 NVL', 94, 'ADA_80_PRO'),
  nvidia('NVIDIA H100 PCIe', 'H100 PCIe', 80, 'ADA_80_PRO'),
  nvidia('NVIDIA H200', 'H200 SXM', 141, 'HOPPER_141'),
  nvidia('NVIDIA H200 NVL', 'NVIDIA H200 NVL', 143),
  nvidia('NVIDIA L4', 'L4', 24, 'AMPERE_24'),
  nvidia('NVIDIA L40', 'L40', 48, 'ADA_48_PRO'),
  nvidia('NVIDIA L40S', 'L40S', 48, 'ADA_48_PRO'),
  nvidia('NVIDIA RTX 2000 Ada Generation', 'RTX 2000 Ada', 16, 'AMPERE_16'),
  nvidia('NVIDIA RTX 4000 Ada Generation', 'RTX 4000 Ada', 20, 'AMPERE_16'),
  nvidia('NVIDIA RTX 4000 SFF Ada Generation', 'RTX 4000 Ada SFF', 20),
  nvidia('NVIDIA RTX 5000 Ada Generation', 'RTX 5000 Ada', 32),
  nvidia('NVIDIA RTX 6000 Ada Generation', 'RTX 6000 Ada', 48, 'ADA_48_PRO'),
  nvidia('NVIDIA RTX A2000', 'RTX A2000', 6),
  nvidia('NVIDIA RTX A4000', 'RTX A4000', 16, 'AMPERE_16'),
  nvidia('NVIDIA RTX A4500', 'RTX A4500', 20, 'AMPERE_16'),
  nvidia('NVIDIA RTX A5000', 'RTX A5000', 24, 'AMPERE_24'),
  nvidia('NVIDIA RTX A6000', 'RTX A6000', 48, 'AMPERE_48'),
  nvidia('NVIDIA RTX PRO 4500 Blackwell', 'RTX PRO 4500', 32),
  nvidia('NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition', 'RTX PRO 6000 MaxQ', 96),
  nvidia('NVIDIA RTX PRO 6000 Blackwell Server Edition', 'RTX PRO 6000', 96, 'BLACKWELL_96'),
  nvidia('NVIDIA RTX PRO 6000 Blackwell Server Edition MIG 1g.24gb', 'PRO 6000 MIG 24GB', 24),
  nvidia('NVIDIA RTX PRO 6000 Blackwell Server Edition MIG 2g.48gb', 'PRO 6000 MIG 48GB', 48),
  nvidia('NVIDIA RTX PRO 6000 Blackwell Workstation Edition', 'RTX PRO 6000 WK', 96),
  nvidia('Tesla V100-PCIE-16GB', 'Tesla V100', 16),
  nvidia('Tesla V100-SXM2-16GB', 'V100 SXM2', 16),
  nvidia('Tesla V100-SXM2-32GB', 'V100 SXM2 32GB', 32),
]

const byId = new Map(GPU_TYPES.map((t) => [t.id, t]))

export function findGpuType(id: string): GpuType | undefined {
  return byId.get(id)
}

/** Case, spaces and punctuation aside: `rtx-4090` reads as `RTX 4090`. */
const normalName = (text: string) => text.toLowerCase().replace(/[^a-z0-9]/g, '')

/**
 * For a GPU type id that is not one: ` (did you mean "NVIDIA GeForce RTX 4090"?)` when the text
 * is a type's display name or part of its id or name (`RTX 4090`, `h100 sxm`), else ''. At most
 * three ids, so a message stays one line.
 */
export function gpuTypeSuggestion(given: string, among: readonly GpuType[] = GPU_TYPES): string {
  const wanted = normalName(given)
  if (wanted === '') return ''
  const exact = among.filter((t) => normalName(t.displayName) === wanted)
  const close =
    exact.length > 0
      ? exact
      : among.filter(
          (t) => normalName(t.id).includes(wanted) || normalName(t.displayName).includes(wanted),
        )
  if (close.length === 0) return ''
  return ` (did you mean ${close
    .slice(0, 3)
    .map((t) => `"${t.id}"`)
    .join(' or ')}?)`
}

export function isKnownGpuType(id: string): boolean {
  return byId.has(id)
}

/** CUDA versions a host may declare (wire-compat §8.5), newest first. */
export const CUDA_VERSIONS = [
  '13.0',
  '12.9',
  '12.8',
  '12.7',
  '12.6',
  '12.5',
  '12.4',
  '12.3',
  '12.2',
  '12.1',
  '12.0',
  '11.8',
] as const

export type CudaVersion = (typeof CUDA_VERSIONS)[number]

export function isKnownCudaVersion(version: string): boolean {
  return (CUDA_VERSIONS as readonly string[]).includes(version)
}

const CUDA_VERSION_PATTERN = /^\d+(\.\d+)*$/

/** True for `12`, `12.1`, `12.10`: the shapes `minCudaVersion` and nvidia-smi use. */
export function isCudaVersionSyntax(version: string): boolean {
  return CUDA_VERSION_PATTERN.test(version)
}

/**
 * Orders CUDA versions by their numeric parts, so 12.10 is newer than 12.9 and `12` equals
 * `12.0` (a string comparison gets both wrong).
 */
export function compareCudaVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number)
  const pb = b.split('.').map(Number)
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const diff = (pa[i] ?? 0) - (pb[i] ?? 0)
    if (diff !== 0) return Math.sign(diff)
  }
  return 0
}
