import type { Logger } from 'pino'
import type { RuntimeDriver, WorkloadStats } from '../runtime/driver.js'

/** How old a pod's usage figures may be when it is read; older ones are sampled again. */
export const RUNTIME_SAMPLE_INTERVAL_MS = 5000
/** A pod read within this long is sampled every interval; one not read since is left alone. */
export const RUNTIME_WATCH_MS = 60_000
/** Workloads measured at once in a round (the process driver shares its reads of /proc). */
const ROUND_CONCURRENCY = 64

interface Watched {
  driver: RuntimeDriver
  /** When it was last read (ms); primed pods are sampled once, not watched. */
  readAt: number
}

/**
 * The pods' CPU and memory use, measured in the background so that a read of a pod answers
 * from what is known (docs/pods.md, "runtime"): a pod is sampled when it starts running and,
 * while someone reads it, every RUNTIME_SAMPLE_INTERVAL_MS, in rounds that measure every pod
 * due at once. A pod nobody reads costs nothing after its first sample.
 */
export class PodRuntimeSampler {
  private readonly samples = new Map<string, WorkloadStats>()
  private readonly sampledAt = new Map<string, number>()
  private readonly watched = new Map<string, Watched>()
  private timer: NodeJS.Timeout | undefined
  private round: Promise<void> | undefined
  private lastRound = -Infinity
  private stopped = false

  constructor(
    private readonly logger: Logger,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** The pod's last figures (undefined before its first sample); keeps them fresh while read. */
  read(podId: string, driver: RuntimeDriver): WorkloadStats | undefined {
    const now = this.now()
    this.watched.set(podId, { driver, readAt: now })
    if (now - (this.sampledAt.get(podId) ?? -Infinity) >= RUNTIME_SAMPLE_INTERVAL_MS) this.soon()
    return this.samples.get(podId)
  }

  /** The pod started running: one sample, so that its first read has figures. */
  prime(podId: string, driver: RuntimeDriver): void {
    if (!this.watched.has(podId)) this.watched.set(podId, { driver, readAt: -Infinity })
    this.soon()
  }

  /** The pod no longer runs: its figures go. */
  forget(podId: string): void {
    this.watched.delete(podId)
    this.samples.delete(podId)
    this.sampledAt.delete(podId)
  }

  stop(): Promise<void> | undefined {
    this.stopped = true
    clearTimeout(this.timer)
    this.timer = undefined
    return this.round
  }

  start(): void {
    this.stopped = false
  }

  /** A round as soon as the last one is an interval old (rounds never overlap). */
  private soon(): void {
    if (this.stopped || this.timer || this.round) return
    const wait = Math.max(0, this.lastRound + RUNTIME_SAMPLE_INTERVAL_MS / 5 - this.now())
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.round = this.sample().finally(() => {
        this.round = undefined
        if (this.due().length > 0) this.soon()
      })
    }, wait)
    this.timer.unref()
  }

  /** Pods whose figures are missing or older than an interval, among those read or primed. */
  private due(): Array<[string, Watched]> {
    const now = this.now()
    const out: Array<[string, Watched]> = []
    for (const [podId, watched] of this.watched) {
      const sampled = this.sampledAt.get(podId) ?? -Infinity
      const wanted = now - watched.readAt < RUNTIME_WATCH_MS || sampled === -Infinity
      if (!wanted) {
        // Not read for a while: stop sampling it, keep its last figures.
        this.watched.delete(podId)
        continue
      }
      if (now - sampled >= RUNTIME_SAMPLE_INTERVAL_MS) out.push([podId, watched])
    }
    return out
  }

  private async sample(): Promise<void> {
    this.lastRound = this.now()
    const due = this.due()
    let next = 0
    const worker = async () => {
      while (next < due.length && !this.stopped) {
        const [podId, { driver }] = due[next++]!
        try {
          const stats = await driver.stats(podId)
          this.sampledAt.set(podId, this.now())
          if (stats) this.samples.set(podId, stats)
          else this.samples.delete(podId)
        } catch (error) {
          // The host stopped answering: figures stay as they were, tried again next round.
          this.sampledAt.set(podId, this.now())
          this.logger.debug({ err: error, podId }, 'sampling the pod runtime failed')
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(ROUND_CONCURRENCY, due.length) }, worker))
  }
}
