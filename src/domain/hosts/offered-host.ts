import type { Host, HostGpu } from '../catalog/fleet.js'
import { findGpuType } from '../catalog/gpu-types.js'
import type { HostFacts, ReportedGpu } from './host-facts.js'

/**
 * Reported memory may fall this far short of the declared before the declaration is lowered:
 * machines report a little less than they hold (the kernel and firmware keep some).
 */
const MEMORY_TOLERANCE = 1.05

/** What a host offers, and why that differs from what the fleet file declares. */
export interface OfferedHost {
  /** The declared host with its GPUs, vCPUs and memory lowered to what was reported. */
  host: Host
  /** One sentence per difference, for `podyard hosts get` and the server log. */
  notes: string[]
}

/**
 * The declared GPUs that the host's engine reports: the run of GPUs of the declared type from
 * index 0 (allocation index i is the engine's GPU i, so the indices stay 0..count-1), at most
 * as many as declared.
 */
function reportedRun(declared: HostGpu, gpus: readonly ReportedGpu[]): number {
  const byIndex = [...gpus].sort((a, b) => a.index - b.index)
  let count = 0
  while (
    count < byIndex.length &&
    count < declared.count &&
    byIndex[count]!.index === count &&
    byIndex[count]!.typeId === declared.typeId
  )
    count++
  return count
}

function offeredGpu(host: Host, facts: HostFacts, notes: string[]): HostGpu | null {
  const declared = host.gpu
  // Simulated hosts have virtual GPUs; an engine can only speak of NVIDIA's.
  if (!declared || host.simulated || findGpuType(declared.typeId)?.manufacturer !== 'NVIDIA')
    return declared
  const what = `declares ${declared.count} × ${declared.typeId}`
  if (!facts.runtimes.includes('nvidia')) {
    notes.push(`${what} but its engine has no nvidia runtime: GPUs not offered`)
    return null
  }
  if (facts.gpuProbeError !== undefined) {
    notes.push(`${what} but its GPUs could not be read (${facts.gpuProbeError}): GPUs not offered`)
    return null
  }
  // Written before engines reported GPUs: the runtime is all that is known.
  if (facts.gpus === undefined) return declared
  const count = reportedRun(declared, facts.gpus)
  const cudaVersion = facts.cudaVersion ?? declared.cudaVersion
  if (count === 0) {
    const seen = facts.gpus.length === 0 ? 'none' : describeGpus(facts.gpus)
    notes.push(`${what} but its engine reports ${seen}: GPUs not offered`)
    return null
  }
  if (count < declared.count)
    notes.push(`${what}, its engine reports ${describeGpus(facts.gpus)}: offers ${count}`)
  if (facts.cudaVersion && declared.cudaVersion && facts.cudaVersion !== declared.cudaVersion)
    notes.push(`declares CUDA ${declared.cudaVersion}, its driver has ${facts.cudaVersion}`)
  return { typeId: declared.typeId, count, cudaVersion }
}

/** "2 × NVIDIA L4, 1 × NVIDIA A40", in index order. */
function describeGpus(gpus: readonly ReportedGpu[]): string {
  const counts = new Map<string, number>()
  for (const gpu of [...gpus].sort((a, b) => a.index - b.index))
    counts.set(gpu.typeId, (counts.get(gpu.typeId) ?? 0) + 1)
  return [...counts].map(([type, n]) => `${n} × ${type}`).join(', ')
}

/**
 * The fleet file's declaration is a ceiling and a label: a host offers what it declares and its
 * engine reports. Declared NVIDIA GPUs that the engine cannot give a container (no `nvidia`
 * runtime, unreadable, fewer or of another type) are not offered; vCPUs and memory are lowered
 * to the engine's. No facts (a process-driver host, not probed yet): as declared.
 */
export function offeredHost(host: Host, facts: HostFacts | null): OfferedHost {
  if (!facts) return { host, notes: [] }
  const notes: string[] = []
  const gpu = offeredGpu(host, facts, notes)
  let vcpus = host.vcpus
  if (facts.cpus > 0 && host.vcpus > facts.cpus) {
    vcpus = facts.cpus
    notes.push(`declares ${host.vcpus} vCPUs, its engine has ${facts.cpus}: offers ${facts.cpus}`)
  }
  let memoryGb = host.memoryGb
  if (facts.memoryGb > 0 && host.memoryGb > Math.ceil(facts.memoryGb * MEMORY_TOLERANCE)) {
    memoryGb = Math.floor(facts.memoryGb)
    notes.push(
      `declares ${host.memoryGb} GB of memory, its engine has ${facts.memoryGb} GB: offers ${memoryGb} GB`,
    )
  }
  if (gpu === host.gpu && vcpus === host.vcpus && memoryGb === host.memoryGb) return { host, notes }
  const offered: Host = { ...host, gpu, vcpus, memoryGb }
  const gpuNote = notes.find((note) => note.startsWith('declares') && note.includes(' × '))
  if (host.gpu && gpuNote && (gpu?.count ?? 0) < host.gpu.count)
    offered.withheldGpu = { typeId: host.gpu.typeId, reason: gpuNote }
  return { host: offered, notes }
}
