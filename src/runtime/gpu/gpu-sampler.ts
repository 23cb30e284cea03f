import type { Logger } from 'pino'
import {
  parseRemappedRows,
  REMAPPED_ROWS_FIELDS,
  type RemappedRows,
} from './nvidia-health-sources.js'
import { KernelLogFollower } from './kernel-log-follower.js'
import { GPU_QUERY_FIELDS, parseGpuQueryLine, type GpuSample } from './nvidia-smi-query.js'
import { LocalNvidiaSmi, type FollowedQuery, type NvidiaSmiSource } from './nvidia-smi-source.js'

/** How often nvidia-smi prints a reading of every GPU. */
export const GPU_SAMPLE_INTERVAL_MS = 1000
/** Row remapping changes rarely and its query is slower: read it this often. */
export const REMAPPED_ROWS_INTERVAL_MS = 60_000
/** First and longest wait before restarting a sampler that exited. */
const RESTART_MIN_MS = 1000
const RESTART_MAX_MS = 60_000
/** A sampler that ran this long before exiting starts again after the shortest wait. */
const STABLE_RUN_MS = 60_000
/** Lines of one round arrive together; this long after the last one the round is complete. */
const ROUND_SETTLE_MS = 100
/** XIDs of one GPU held for the next round at most. */
const MAX_QUEUED_XIDS = 100
/** A GPU missing this many rounds while others report has stopped answering. */
const MISSING_ROUNDS = 3

/** One GPU in a round: nvidia-smi's reading and the last row-remapping answer. */
export interface SampledGpu extends GpuSample {
  remappedRowsPending: boolean | null
  remappedRowsFailure: boolean | null
  /** XIDs the driver logged for this GPU since the previous round (the kernel log). */
  xids: number[]
}

export interface GpuSamplerOptions {
  logger: Logger
  /** Called with every GPU's reading once per round. */
  onRound: (gpus: SampledGpu[]) => void
  /** Where nvidia-smi runs; default this machine's `command`. */
  source?: NvidiaSmiSource
  /** This machine's executable, when no source is given; default `nvidia-smi` on PATH. */
  command?: string
  intervalMs?: number
  remappedRowsIntervalMs?: number
  /** Where the driver's XID reports are read (kernel-log-follower.ts); absent: not read. */
  kernelLog?: string
  /** Why the kernel log cannot be read; null once it can. */
  onKernelLogProblem?: (problem: string | null) => void
}

/**
 * One long-lived `nvidia-smi --query-gpu=... -lms <interval>` per host (docs/gpus.md): a child
 * process here, or a container on a remote engine (NvidiaSmiSource), that prints every GPU
 * each interval, parsed line by line, restarted with a doubling wait when it exits. No request
 * ever runs nvidia-smi; readers take the latest round.
 */
export class GpuSampler {
  private query: FollowedQuery | undefined
  private restartTimer: NodeJS.Timeout | undefined
  private settleTimer: NodeJS.Timeout | undefined
  private remapTimer: NodeJS.Timeout | undefined
  private restartWaitMs = RESTART_MIN_MS
  private stopped = true
  private readonly pending = new Map<number, GpuSample>()
  private readonly last = new Map<number, GpuSample>()
  private readonly missingRounds = new Map<number, number>()
  private readonly unreachableBusIds = new Set<string>()
  private remapped: RemappedRows[] = []
  /** XIDs by normalised bus id, waiting for the next round. */
  private readonly xids = new Map<string, number[]>()
  private kernelLog: KernelLogFollower | undefined
  /** How many times the process was started (tests and logs). */
  starts = 0

  private readonly source: NvidiaSmiSource

  constructor(private readonly options: GpuSamplerOptions) {
    this.source = options.source ?? new LocalNvidiaSmi(options.command)
  }

  start(): void {
    if (!this.stopped) return
    this.stopped = false
    this.spawn()
    this.readRemappedRows()
    this.remapTimer = setInterval(
      () => this.readRemappedRows(),
      this.options.remappedRowsIntervalMs ?? REMAPPED_ROWS_INTERVAL_MS,
    )
    this.remapTimer.unref()
    const { kernelLog, logger, onKernelLogProblem } = this.options
    if (kernelLog) {
      this.kernelLog = new KernelLogFollower({
        path: kernelLog,
        logger,
        onXid: ({ busId, xid, detail }) => {
          logger.warn({ busId, xid, detail }, 'the NVIDIA driver reported an XID')
          // Bounded while no round takes them (nvidia-smi down): the latest are kept.
          this.xids.set(busId, [...(this.xids.get(busId) ?? []), xid].slice(-MAX_QUEUED_XIDS))
        },
        onProblem: (problem) => onKernelLogProblem?.(problem),
      })
      this.kernelLog.start()
    }
  }

  stop(): void {
    this.stopped = true
    clearTimeout(this.restartTimer)
    clearTimeout(this.settleTimer)
    clearInterval(this.remapTimer)
    this.kernelLog?.stop()
    this.query?.stop()
    this.query = undefined
  }

  private spawn(): void {
    const interval = this.options.intervalMs ?? GPU_SAMPLE_INTERVAL_MS
    const startedAt = Date.now()
    this.starts++
    const args = [
      `--query-gpu=${GPU_QUERY_FIELDS.join(',')}`,
      '--format=csv,noheader,nounits',
      `-lms`,
      String(interval),
    ]
    const query = this.source.follow(
      args,
      (line) => this.onLine(line),
      (why) => {
        if (this.query !== query) return
        this.query = undefined
        if (this.stopped) return
        if (Date.now() - startedAt >= STABLE_RUN_MS) this.restartWaitMs = RESTART_MIN_MS
        const wait = this.restartWaitMs
        this.restartWaitMs = Math.min(RESTART_MAX_MS, this.restartWaitMs * 2)
        this.options.logger.warn(
          { where: this.source.where, why, restartInMs: wait },
          'the GPU sampler exited',
        )
        this.restartTimer = setTimeout(() => this.spawn(), wait)
        this.restartTimer.unref()
      },
    )
    this.query = query
  }

  private onLine(line: string): void {
    const parsed = parseGpuQueryLine(line)
    if (parsed.kind === 'other') return
    if (parsed.kind === 'unreachable') this.unreachableBusIds.add(parsed.busId)
    else {
      // A second line for an index already in this round starts the next round.
      if (this.pending.has(parsed.sample.index)) this.flush()
      this.pending.set(parsed.sample.index, parsed.sample)
    }
    clearTimeout(this.settleTimer)
    this.settleTimer = setTimeout(() => this.flush(), ROUND_SETTLE_MS)
    this.settleTimer.unref()
  }

  private flush(): void {
    clearTimeout(this.settleTimer)
    if (this.pending.size === 0 && this.unreachableBusIds.size === 0) return
    for (const [index, sample] of this.pending) {
      this.last.set(index, sample)
      this.missingRounds.delete(index)
    }
    const round: SampledGpu[] = []
    for (const [index, sample] of [...this.last.entries()].sort(([a], [b]) => a - b)) {
      let seen = sample
      if (!this.pending.has(index)) {
        // Absent while others answered: after MISSING_ROUNDS it counts as lost.
        const missing = (this.missingRounds.get(index) ?? 0) + (this.pending.size > 0 ? 1 : 0)
        this.missingRounds.set(index, missing)
        if (missing >= MISSING_ROUNDS) seen = { ...sample, lost: true }
      }
      if (sample.busId !== null && this.unreachableBusIds.has(sample.busId))
        seen = { ...seen, lost: true }
      const remap = this.remapped.find((r) => r.busId === sample.busId)
      const xids = sample.busId === null ? [] : (this.xids.get(sample.busId) ?? [])
      if (sample.busId !== null) this.xids.delete(sample.busId)
      round.push({
        ...seen,
        remappedRowsPending: remap?.pending ?? null,
        remappedRowsFailure: remap?.failure ?? null,
        xids,
      })
    }
    this.pending.clear()
    this.unreachableBusIds.clear()
    // XIDs of a bus id no GPU answers for (an unknown device) are dropped with the round.
    this.xids.clear()
    if (round.length > 0) this.options.onRound(round)
  }

  private readRemappedRows(): void {
    this.source
      .run(
        [
          `--query-remapped-rows=${REMAPPED_ROWS_FIELDS.join(',')}`,
          '--format=csv,noheader,nounits',
        ],
        10_000,
      )
      .then(
        (stdout) => (this.remapped = parseRemappedRows(stdout)),
        // GPUs older than Ampere, or drivers without the query, answer with an error: no data.
        () => undefined,
      )
  }
}
