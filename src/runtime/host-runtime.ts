import type { UnenforcedLimit } from '../shared/contained-limits.js'
import type { RuntimeDriver } from './driver.js'
import type { NvidiaSmiSource } from './gpu/nvidia-smi-source.js'
import type { SmiGpuDetail } from './host-discovery.js'

/** What a host's engine reports of its machine (docker-driver.ts probe()). */
export interface RuntimeFacts {
  name: string
  /** The engine's own id (Docker's /info `ID`): the same engine reached twice has one. */
  engineId?: string
  cpus: number
  memoryBytes: number
  serverVersion: string
  runtimes: string[]
  /** The limits of a workload this engine does not enforce (docs/security.md, "Containment"). */
  unenforced: UnenforcedLimit[]
  /** The NVIDIA GPUs a probe container saw (engines with the `nvidia` runtime, real GPUs). */
  gpus?: SmiGpuDetail[]
  /** The driver's CUDA version, from nvidia-smi's banner. */
  cudaVersion?: string | null
  /** Why the GPUs could not be read although the engine has the `nvidia` runtime. */
  gpuProbeError?: string
}

/**
 * How podyard reaches one host of the fleet: the driver that runs its workloads, where it is
 * (for people: `this machine (process driver)`, `ssh://podyard@gpu-node-2`), and its probe,
 * which resolves with what the engine reports (null for a host without an engine: the process
 * driver) or throws when the host cannot be reached. Hosts whose runtimes share one probe
 * function (hosts of one engine) are probed once per round (control/host-monitor.ts).
 */
export interface HostRuntime {
  hostId: string
  driver: RuntimeDriver
  where: string
  /** The driver runs on another machine (a remote engine): its ports are on that machine. */
  remote: boolean
  probe(): Promise<RuntimeFacts | null>
  /**
   * nvidia-smi on the host's machine for its GPU sampler, where that is a remote engine's
   * (control/remote-gpu-sampling.ts); absent elsewhere (this machine's GPUs are read directly).
   */
  nvidiaSmi?: NvidiaSmiSource
}
