import { rename, writeFile } from 'node:fs/promises'
import type { Clock } from '../../shared/clock.js'
import { workloadLogFiles, type LogBudget } from './log-files.js'
import { LogPump } from './log-pump.js'
import { watchOutput } from './output-watch.js'
import type { CpuSample } from './proc-stat.js'
import type { GroupIdentity } from './process-group.js'
import { STATE_FILE, workloadDir, workloadFile } from './workload-files.js'
import type { WorkloadRecord } from './workload-record.js'

export interface Ended {
  exitCode: number | null
  finishedAt: string
  outOfMemory: boolean
}

/** What the driver holds in memory about one workload it started or adopted. */
export interface Tracked {
  record: WorkloadRecord
  pump: LogPump
  /** Stops watching output.log for new output (watchOutput). */
  unwatch: (() => void) | undefined
  /** A pump of its output is running, and whether output came meanwhile. */
  pumping: boolean
  pumpAgain: boolean
  /** Its end was taken in (last output pumped, listeners told). */
  settled: boolean
  ended: Ended | undefined
  cpu: CpuSample | undefined
  removed: boolean
  /**
   * A stop is under way: its leader (the exit-status shell) may end at SIGTERM while what it ran
   * ignores it, and what is left is the stop's to kill after the grace period, not the cgroup's
   * release when the leader's end is seen.
   */
  stopping?: boolean
  /** Writes of state.json, one after the other, each of the record current when it runs. */
  saving: Promise<unknown>
}

export function groupOf(record: WorkloadRecord): GroupIdentity {
  return { pgid: record.pgid, leaderStartTicks: record.processStartTicks }
}

/**
 * The tracked workloads' record in state.json and their output copied into their logs: what
 * the driver keeps of each workload on disk while it runs them.
 */
export class WorkloadTracking {
  constructor(
    private readonly options: {
      stateDir: string
      clock: Clock
      logBudget: LogBudget
      /** How often running workloads' output is copied into their logs (ms). */
      logPollMs: number
      /** Aborted when the driver closes: no more watching. */
      closing: AbortSignal
    },
  ) {}

  track(record: WorkloadRecord): Tracked {
    const id = record.spec.id
    const { stateDir, clock, logBudget } = this.options
    return {
      record,
      pump: new LogPump(workloadLogFiles(workloadDir(stateDir, id)), clock, logBudget),
      unwatch: undefined,
      pumping: false,
      pumpAgain: false,
      settled: false,
      ended: undefined,
      cpu: undefined,
      removed: false,
      saving: Promise.resolve(),
    }
  }

  /** Persists the tracked record; serialised so that an older record never lands last. */
  save(tracked: Tracked): Promise<void> {
    const run = tracked.saving.then(async () => {
      if (tracked.removed) return
      // Written aside and renamed, so a crash never leaves half a state.json.
      const target = workloadFile(this.options.stateDir, tracked.record.spec.id, STATE_FILE)
      await writeFile(`${target}.tmp`, `${JSON.stringify(tracked.record, null, 2)}\n`)
      await rename(`${target}.tmp`, target)
    })
    tracked.saving = run.catch(() => undefined)
    return run
  }

  /**
   * Copies output into the log as it is written: output.log is watched (inotify), and a change
   * pumps within logPollMs. A workload that writes nothing costs nothing.
   */
  startPumping(tracked: Tracked): void {
    if (tracked.unwatch !== undefined || this.options.closing.aborted) return
    const output = workloadLogFiles(
      workloadDir(this.options.stateDir, tracked.record.spec.id),
    ).output
    tracked.unwatch = watchOutput(output, this.options.logPollMs, () => this.pumpSoon(tracked))
    // What it wrote before the watch began.
    this.pumpSoon(tracked)
  }

  stopPumping(tracked: Tracked): void {
    tracked.unwatch?.()
    tracked.unwatch = undefined
  }

  private pumpSoon(tracked: Tracked): void {
    if (tracked.removed || tracked.settled) return
    if (tracked.pumping) {
      // Written while a pump read: read again once it is done.
      tracked.pumpAgain = true
      return
    }
    tracked.pumping = true
    tracked.pump
      .pump(false)
      .catch(() => {
        // A failed read or append is retried at the next change; readLogs() reports it.
      })
      .finally(() => {
        tracked.pumping = false
        if (tracked.pumpAgain) {
          tracked.pumpAgain = false
          this.pumpSoon(tracked)
        }
      })
  }
}
