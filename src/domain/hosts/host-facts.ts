import type { UnenforcedLimit } from '../../shared/contained-limits.js'

/** What a host's runtime reports of its machine (a Docker engine's /info). */
export interface HostFacts {
  /** The engine's name for its machine. */
  name: string
  /**
   * The engine's own id (Docker's /info `ID`): two real hosts that report one are one machine
   * listed twice (host-twins.ts); absent in records written before engines reported it.
   */
  engineId?: string
  cpus: number
  memoryGb: number
  serverVersion: string
  runtimes: string[]
  /**
   * The limits of a workload its engine does not enforce, each with why (docs/security.md,
   * "Containment"); absent in records written before engines reported them.
   */
  unenforced?: UnenforcedLimit[]
  /**
   * The NVIDIA GPUs its engine gave a probe container (docs/fleet.md, "GPUs: declared and
   * reported"); absent when the engine has no `nvidia` runtime, for simulated hosts, and in
   * records written before engines reported them.
   */
  gpus?: ReportedGpu[]
  /** The CUDA version of the host's driver, as nvidia-smi prints it. */
  cudaVersion?: string | null
  /** Why the GPUs could not be read although the engine has the `nvidia` runtime. */
  gpuProbeError?: string
}

/** One GPU as nvidia-smi reports it. */
export interface ReportedGpu {
  index: number
  uuid: string
  /** The name nvidia-smi printed. */
  name: string
  /** The catalog's GPU type id for that name, or the name itself when no type matches. */
  typeId: string
  memoryMib: number | null
  driverVersion: string | null
}
