import { execFile } from 'node:child_process'
import { statfs } from 'node:fs/promises'
import os from 'node:os'
import { promisify } from 'node:util'

const execFileAsync = promisify(execFile)

/** A hung driver makes nvidia-smi block for minutes; start-up must not wait on it. */
export const NVIDIA_SMI_TIMEOUT_MS = 5000

const BYTES_PER_GB = 1024 ** 3

export interface LocalGpus {
  /** A catalog GPU type id when the name is recognised, else the name nvidia-smi printed. */
  typeId: string
  count: number
  cudaVersion: string | null
  /** Every GPU nvidia-smi listed (all types), by index; absent when only names were read. */
  details?: SmiGpuDetail[]
}

export interface LocalHostFacts {
  vcpus: number
  memoryGb: number
  /** Free space on the file system of the working directory, where pods' files go. */
  diskGb: number
  gpus: LocalGpus | null
}

/**
 * NVIDIA GPU type ids of the catalog (domain/catalog/gpu-types.ts). Copied rather than
 * imported because the runtime may depend on shared/ only; the ids are nvidia-smi's own names,
 * so keep the two lists in step when a type is added.
 */
const NVIDIA_GPU_TYPE_IDS: ReadonlySet<string> = new Set([
  'NVIDIA A100 80GB PCIe',
  'NVIDIA A100-SXM4-80GB',
  'NVIDIA A30',
  'NVIDIA A40',
  'NVIDIA B200',
  'NVIDIA B300 SXM6 AC',
  'NVIDIA GeForce RTX 3070',
  'NVIDIA GeForce RTX 3080',
  'NVIDIA GeForce RTX 3080 Ti',
  'NVIDIA GeForce RTX 3090',
  'NVIDIA GeForce RTX 3090 Ti',
  'NVIDIA GeForce RTX 4070 Ti',
  'NVIDIA GeForce RTX 4080',
  'NVIDIA GeForce RTX 4080 SUPER',
  'NVIDIA GeForce RTX 4090',
  'NVIDIA GeForce RTX 5080',
  'NVIDIA GeForce RTX 5090',
  'NVIDIA H100 80GB HBM3',
  'NVIDIA H100 NVL',
  'NVIDIA H100 PCIe',
  'NVIDIA H200',
  'NVIDIA H200 NVL',
  'NVIDIA L4',
  'NVIDIA L40',
  'NVIDIA L40S',
  'NVIDIA RTX 2000 Ada Generation',
  'NVIDIA RTX 4000 Ada Generation',
  'NVIDIA RTX 4000 SFF Ada Generation',
  'NVIDIA RTX 5000 Ada Generation',
  'NVIDIA RTX 6000 Ada Generation',
  'NVIDIA RTX A2000',
  'NVIDIA RTX A4000',
  'NVIDIA RTX A4500',
  'NVIDIA RTX A5000',
  'NVIDIA RTX A6000',
  'NVIDIA RTX PRO 4500 Blackwell',
  'NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition',
  'NVIDIA RTX PRO 6000 Blackwell Server Edition',
  'NVIDIA RTX PRO 6000 Blackwell Workstation Edition',
  'Tesla V100-PCIE-16GB',
  'Tesla V100-SXM2-16GB',
  'Tesla V100-SXM2-32GB',
])

const byLowerCase = new Map([...NVIDIA_GPU_TYPE_IDS].map((id) => [id.toLowerCase(), id]))

/**
 * Hopper names that drivers and board variants print differently from the catalog's id: the
 * SXM boards with or without their memory ("NVIDIA H100 80GB HBM3", "H100 SXM5 80GB", "NVIDIA
 * H200 141GB HBM3e"), the PCIe and NVL boards with their memory. Matched on the name without
 * the "NVIDIA " prefix, lower case; first match wins, so NVL and PCIe come first.
 */
const HOPPER_ALIASES: ReadonlyArray<[RegExp, string]> = [
  [/^h100[ -]nvl( \d+gb)?( hbm3e?)?$/, 'NVIDIA H100 NVL'],
  [/^h100[ -]pcie( \d+gb)?( hbm2e)?$/, 'NVIDIA H100 PCIe'],
  [/^h100( sxm\d?)?( 80gb)?( hbm3)?$/, 'NVIDIA H100 80GB HBM3'],
  [/^h200[ -]nvl( \d+gb)?( hbm3e)?$/, 'NVIDIA H200 NVL'],
  [/^h200( sxm\d?)?( 141gb)?( hbm3e)?$/, 'NVIDIA H200'],
]

/**
 * The catalog id for a name printed by `nvidia-smi --query-gpu=name`, or the name itself when
 * it matches no type. Older drivers omit the "NVIDIA " prefix ("GeForce RTX 3090",
 * "A100-SXM4-80GB") and spacing or case may differ between versions.
 */
export function gpuTypeIdFromSmiName(name: string): string {
  const cleaned = name.trim().replace(/\s+/g, ' ')
  const lower = cleaned.toLowerCase()
  const exact = byLowerCase.get(lower) ?? byLowerCase.get(`nvidia ${lower}`)
  if (exact) return exact
  const bare = lower.replace(/^nvidia /, '')
  return HOPPER_ALIASES.find(([pattern]) => pattern.test(bare))?.[1] ?? cleaned
}

/** One GPU as `nvidia-smi --query-gpu=index,uuid,name,memory.total,driver_version` lists it. */
export interface SmiGpuDetail {
  index: number
  uuid: string
  name: string
  /** The catalog's GPU type id for the name (gpuTypeIdFromSmiName). */
  typeId: string
  memoryMib: number | null
  driverVersion: string | null
}

/** The query the GPU probes run, local and in a probe container (GPU_DETAIL_QUERY_ARGS). */
export const GPU_DETAIL_QUERY_ARGS = [
  '--query-gpu=index,uuid,name,memory.total,driver_version',
  '--format=csv,noheader,nounits',
] as const

/**
 * Parses the output of GPU_DETAIL_QUERY_ARGS: `0, GPU-5c3e..., NVIDIA H100 80GB HBM3, 81559,
 * 550.54.15`. GPU names hold no commas, so the fields split on them; lines that are not a GPU
 * (a warning nvidia-smi printed) are skipped. "[N/A]" reads as null.
 */
export function parseSmiGpuDetails(csv: string): SmiGpuDetail[] {
  const gpus: SmiGpuDetail[] = []
  for (const line of csv.split('\n')) {
    const fields = line.split(',').map((field) => field.trim())
    if (fields.length !== 5) continue
    const [index, uuid, name, memory, driver] = fields as [string, string, string, string, string]
    if (!/^\d+$/.test(index) || !uuid.startsWith('GPU-')) continue
    const memoryMib = /^\d+$/.test(memory) ? Number(memory) : null
    gpus.push({
      index: Number(index),
      uuid,
      name,
      typeId: gpuTypeIdFromSmiName(name),
      memoryMib,
      driverVersion: driver === '' || driver.startsWith('[') ? null : driver,
    })
  }
  return gpus
}

export interface SmiGpu {
  name: string
  memoryMib: number | null
}

/** Parses `nvidia-smi --query-gpu=name,memory.total --format=csv,noheader` output. */
export function parseSmiGpuList(csv: string): SmiGpu[] {
  const gpus: SmiGpu[] = []
  for (const line of csv.split('\n')) {
    if (line.trim() === '') continue
    // GPU names contain no commas; memory is the last field ("24564 MiB").
    const comma = line.lastIndexOf(',')
    const name = (comma >= 0 ? line.slice(0, comma) : line).trim()
    const memory = comma >= 0 ? Number.parseInt(line.slice(comma + 1).trim(), 10) : Number.NaN
    gpus.push({ name, memoryMib: Number.isNaN(memory) ? null : memory })
  }
  return gpus
}

/** The "CUDA Version: 12.2" of nvidia-smi's banner, or null when absent. */
export function parseSmiCudaVersion(banner: string): string | null {
  return /CUDA Version:\s*(\d+(?:\.\d+)*)/.exec(banner)?.[1] ?? null
}

/**
 * A host has one GPU type, so only GPU 0's type counts, and only the run of identical GPUs
 * starting at index 0: device indices then stay 0..count-1, which is what the driver will put
 * in CUDA_VISIBLE_DEVICES.
 */
export function localGpusFromSmi(
  gpus: readonly SmiGpu[],
  cudaVersion: string | null,
): LocalGpus | null {
  const first = gpus[0]
  if (!first) return null
  let count = 0
  while (count < gpus.length && gpus[count]?.name === first.name) count++
  return { typeId: gpuTypeIdFromSmiName(first.name), count, cudaVersion }
}

async function runSmi(args: string[]): Promise<string> {
  const { stdout } = await execFileAsync('nvidia-smi', args, {
    timeout: NVIDIA_SMI_TIMEOUT_MS,
    encoding: 'utf8',
  })
  return stdout
}

async function discoverGpus(): Promise<LocalGpus | null> {
  try {
    const details = parseSmiGpuDetails(await runSmi([...GPU_DETAIL_QUERY_ARGS]))
    // An nvidia-smi whose query knows no UUID (very old, or a stand-in): names alone.
    const list =
      details.length > 0
        ? details.map((gpu) => ({ name: gpu.name, memoryMib: gpu.memoryMib }))
        : parseSmiGpuList(await runSmi(['--query-gpu=name,memory.total', '--format=csv,noheader']))
    if (list.length === 0) return null
    const cudaVersion = parseSmiCudaVersion(await runSmi([]))
    const gpus = localGpusFromSmi(list, cudaVersion)
    return gpus && details.length > 0 ? { ...gpus, details } : gpus
  } catch {
    // No nvidia-smi, no driver loaded, or a timeout: the machine is used as a CPU host.
    return null
  }
}

async function freeDiskGb(dir: string): Promise<number> {
  try {
    const stats = await statfs(dir)
    return Math.floor((stats.bavail * stats.bsize) / BYTES_PER_GB)
  } catch {
    return 0
  }
}

/** CPU, memory, disk and NVIDIA GPUs of the machine podyard runs on. */
export async function discoverLocalHost(): Promise<LocalHostFacts> {
  const [diskGb, gpus] = await Promise.all([freeDiskGb(process.cwd()), discoverGpus()])
  return {
    vcpus: os.cpus().length,
    memoryGb: Math.floor(os.totalmem() / BYTES_PER_GB),
    diskGb,
    gpus,
  }
}
