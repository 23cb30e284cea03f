import type { Logger } from 'pino'
import type { Host } from '../domain/catalog/fleet.js'
import { ReconcileLoop } from '../shared/reconcile-loop.js'
import type { TimerClock } from '../shared/clock.js'
import { GpuSampler, type SampledGpu } from '../runtime/gpu/gpu-sampler.js'
import type { NvidiaSmiSource } from '../runtime/gpu/nvidia-smi-source.js'
import type { HostRuntime } from '../runtime/host-runtime.js'

export interface RemoteGpuSamplingDeps {
  hosts: () => readonly Host[]
  runtimeOf: (hostId: string) => HostRuntime
  /** How many NVIDIA GPUs the host's engine last reported (its probe); 0 when none or unknown. */
  reportedGpus: (hostId: string) => number
  /** Each round of a host's readings (control/gpu-health-watch.ts). */
  onRound: (hostId: string, round: SampledGpu[]) => void
  logger: Logger
  /** How often the hosts are looked over (the host probe's interval). */
  intervalMs: number
  timers?: TimerClock
  /** The samplers' reading interval; GPU_SAMPLE_INTERVAL_MS by default. */
  sampleIntervalMs?: number
}

/**
 * The GPU samplers of remote Docker hosts (docs/gpus.md, "GPUs through Docker"), on the leader:
 * one per real GPU host whose engine reported NVIDIA GPUs, reading them through a container on
 * that engine (runtime/docker/nvidia-smi-container.ts) into the same GPU board as the local
 * host's sampler. Each pass starts the samplers now due and stops those of hosts removed,
 * reached another way, or whose engine no longer reports GPUs.
 */
export class RemoteGpuSampling {
  private readonly samplers = new Map<string, { sampler: GpuSampler; source: NvidiaSmiSource }>()
  private readonly loop: ReconcileLoop

  constructor(private readonly deps: RemoteGpuSamplingDeps) {
    this.loop = new ReconcileLoop({
      ...(deps.timers ? { clock: deps.timers } : {}),
      intervalMs: deps.intervalMs,
      pass: async () => this.sync(),
      onError: (error) => deps.logger.warn({ err: error }, 'looking over GPU samplers failed'),
    })
  }

  start(): void {
    this.loop.start({ immediate: true })
  }

  async stop(): Promise<void> {
    await this.loop.stop()
    for (const { sampler } of this.samplers.values()) sampler.stop()
    this.samplers.clear()
  }

  /** The hosts sampled now (tests, logs). */
  get sampled(): string[] {
    return [...this.samplers.keys()]
  }

  private sync(): void {
    const wanted = new Map<string, NvidiaSmiSource>()
    for (const host of this.deps.hosts()) {
      if (!host.gpu || host.simulated) continue
      const { nvidiaSmi } = this.deps.runtimeOf(host.id)
      if (nvidiaSmi && this.deps.reportedGpus(host.id) > 0) wanted.set(host.id, nvidiaSmi)
    }
    for (const [hostId, running] of this.samplers) {
      if (wanted.get(hostId) === running.source) continue
      running.sampler.stop()
      this.samplers.delete(hostId)
    }
    for (const [hostId, source] of wanted) {
      if (this.samplers.has(hostId)) continue
      const sampler = new GpuSampler({
        logger: this.deps.logger.child({ hostId }),
        source,
        onRound: (round) => this.deps.onRound(hostId, round),
        ...(this.deps.sampleIntervalMs ? { intervalMs: this.deps.sampleIntervalMs } : {}),
      })
      sampler.start()
      this.samplers.set(hostId, { sampler, source })
    }
  }
}
