import type { Logger } from 'pino'
import type { GpuBoard, GpuWithdrawal } from '../domain/hosts/gpu-board.js'
import type { GpuReading } from '../domain/hosts/gpu-health.js'
import type { PodStore } from '../domain/pods/ports.js'
import type { SampledGpu } from '../runtime/gpu/gpu-sampler.js'
import { troubleThrottleReasons } from '../runtime/gpu/nvidia-smi-query.js'
import type { Clock } from '../shared/clock.js'

/** What the health rules read of one sampled GPU. */
export function readingOf(gpu: SampledGpu): GpuReading {
  return {
    index: gpu.index,
    uuid: gpu.uuid,
    responding: !gpu.lost,
    utilPercent: gpu.utilPercent,
    memoryUsedMib: gpu.memoryUsedMib,
    memoryTotalMib: gpu.memoryTotalMib,
    temperatureC: gpu.temperatureC,
    powerDrawW: gpu.powerDrawW,
    throttling: troubleThrottleReasons(gpu.throttleMask),
    eccUncorrected: gpu.eccUncorrectedVolatile,
    retiredPagesPending: gpu.retiredPagesPending,
    remappedRowsPending: gpu.remappedRowsPending,
    remappedRowsFailure: gpu.remappedRowsFailure,
    xids: gpu.xids,
  }
}

const ENDED = new Set(['TERMINATED', 'EXITED', 'ERROR'])
/** A pod written by the lifecycle at the same moment: read it again, at most this often. */
const UPDATE_TRIES = 3

/**
 * Feeds each round of a host's GPU sampler to the board, and tells the pods of a GPU it
 * withdrew: a line in their system log and their statusReason (docs/gpus.md). The pods keep
 * running: a withdrawn GPU takes no new pods, but stopping the ones on it is the owner's or the
 * operator's call.
 */
export class GpuHealthWatch {
  constructor(
    private readonly deps: { board: GpuBoard; store: PodStore; clock: Clock; logger: Logger },
  ) {}

  /** One round of a host's sampler; resolves once its pods were told of any withdrawal. */
  async onRound(hostId: string, gpus: readonly SampledGpu[]): Promise<void> {
    let withdrawals: GpuWithdrawal[]
    try {
      withdrawals = await this.deps.board.record(hostId, gpus.map(readingOf))
    } catch (error) {
      // The store did not answer: the next round judges again.
      this.deps.logger.error({ err: error, hostId }, 'recording a round of GPU readings failed')
      return
    }
    for (const withdrawal of withdrawals) {
      this.deps.logger.warn(withdrawal, 'GPU withdrawn from placement')
      await this.tellPods(withdrawal).catch((error: unknown) =>
        this.deps.logger.error(
          { err: error, ...withdrawal },
          'telling pods of a withdrawn GPU failed',
        ),
      )
    }
  }

  private async tellPods({ hostId, index, reason }: GpuWithdrawal): Promise<void> {
    const { store, clock } = this.deps
    const line = `GPU ${index} of host ${hostId} withdrawn: ${reason}`
    const pods = (await store.pods.list({})).filter(
      (p) => p.hostId === hostId && p.gpuIndices.includes(index) && !ENDED.has(p.status),
    )
    for (const found of pods) {
      await store.events.append(found.id, clock.now().toISOString(), line)
      let pod: typeof found | undefined = found
      for (let i = 0; i < UPDATE_TRIES && pod; i++) {
        if (await store.pods.update({ ...pod, statusReason: line, version: pod.version + 1 })) break
        pod = await store.pods.findById(pod.id)
      }
    }
  }
}
