import { readFile, stat } from 'node:fs/promises'
import type { Clock } from '../../shared/clock.js'
import type { WorkloadState } from '../driver.js'
import { ranOutOfMemory } from './cgroup-files.js'
import { currentBootId, leaderIsRunning, pidExists, type ProcessTable } from './process-group.js'
import { groupOf, type Ended, type Tracked, type WorkloadTracking } from './tracked-workload.js'
import type { WorkloadContainment } from './workload-containment.js'
import {
  EXIT_STATUS_FILE,
  isMissing,
  OUT_OF_MEMORY_FILE,
  STATE_FILE,
  workloadFile,
} from './workload-files.js'
import {
  isValidWorkloadId,
  parseExitStatus,
  parseWorkloadRecord,
  type WorkloadRecord,
} from './workload-record.js'
import { stopGroup } from './workload-stop.js'

/**
 * How often the workloads adopted from a previous server (not this process's children, whose
 * exit Node reports) are looked at: one kill(0) each.
 */
export const ADOPTED_POLL_MS = 1000

/**
 * The workloads a process driver knows: loaded from the state directory (adopted when a
 * previous server started them), watched until they end, stopped, and their state read.
 */
export class WorkloadRegistry {
  private readonly workloads = new Map<string, Tracked>()
  /** Running workloads this process did not start: their exit is looked for (ADOPTED_POLL_MS). */
  private readonly adopted = new Set<Tracked>()
  private livenessTimer: NodeJS.Timeout | undefined
  private readonly listeners = new Set<(id: string) => void>()
  /** Whether this driver runs the workloads of its state directory (ProcessDriver.setActive). */
  private activeNow = true

  constructor(
    private readonly options: {
      stateDir: string
      clock: Clock
      tracking: WorkloadTracking
      containment: WorkloadContainment
      processes: ProcessTable
      /** Aborted when the driver closes: no more timers, no more listeners told. */
      closing: AbortSignal
    },
  ) {}

  get active(): boolean {
    return this.activeNow
  }

  setActive(active: boolean): void {
    this.activeNow = active
    // Either way, what was known may be stale: start again from the files.
    this.forgetAll()
  }

  watch(listener: (id: string) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  forgetAll(): void {
    for (const tracked of this.workloads.values()) this.options.tracking.stopPumping(tracked)
    this.workloads.clear()
    this.adopted.clear()
    clearInterval(this.livenessTimer)
    this.livenessTimer = undefined
  }

  /** A workload just started (again) by this process: its exit is Node's to report. */
  started(tracked: Tracked): void {
    this.adopted.delete(tracked)
    this.workloads.set(tracked.record.spec.id, tracked)
  }

  /** Forgets a workload whose start failed or which is removed. */
  forget(tracked: Tracked): void {
    this.workloads.delete(tracked.record.spec.id)
    this.adopted.delete(tracked)
  }

  /** Our own child ended: note the time, collect its last output and say so. */
  childExited(id: string, pid: number): void {
    if (this.options.closing.aborted) return
    const tracked = this.workloads.get(id)
    if (!tracked || tracked.removed || tracked.record.pid !== pid) return
    if (tracked.record.stoppedAt === undefined) {
      tracked.record = { ...tracked.record, stoppedAt: this.options.clock.now().toISOString() }
      this.options.tracking.save(tracked).catch(() => undefined)
    }
    void this.ended(tracked)
  }

  /** The workload ended by itself: its last output, how it ended, and the listeners told. */
  private async ended(tracked: Tracked): Promise<void> {
    if (tracked.settled || tracked.removed) return
    try {
      await this.settle(tracked)
    } catch {
      // Its last lines are read again by readLogs(); the end is known either way.
    }
    if (this.active && !tracked.stopping) {
      await this.releaseNetwork(tracked.record.spec.id).catch(() => undefined)
    }
    if (tracked.removed || !this.active) return
    for (const listener of this.listeners) listener(tracked.record.spec.id)
  }

  /** One kill(0) per adopted workload: those whose leader is gone have ended. */
  private checkAdopted(): void {
    for (const tracked of this.adopted) {
      if (pidExists(tracked.record.pid)) continue
      this.adopted.delete(tracked)
      void this.ended(tracked)
    }
    if (this.adopted.size === 0) {
      clearInterval(this.livenessTimer)
      this.livenessTimer = undefined
    }
  }

  private adopt(tracked: Tracked): void {
    this.adopted.add(tracked)
    if (this.livenessTimer || this.options.closing.aborted) return
    this.livenessTimer = setInterval(() => this.checkAdopted(), ADOPTED_POLL_MS)
    this.livenessTimer.unref()
  }

  /** A workload's network namespace and cgroup are gone with it (workload-containment.ts). */
  releaseNetwork(id: string): Promise<void> {
    return this.options.containment.release(id)
  }

  // --- stopping ---------------------------------------------------------------------------

  /** Its processes stopped (workload-stop.ts), its network and cgroup released, its end noted. */
  async stopNow(tracked: Tracked, graceMs: number, settle = true): Promise<void> {
    tracked.stopping = true
    try {
      await stopGroup(tracked.record, graceMs, this.options.processes)
    } finally {
      tracked.stopping = false
    }
    this.adopted.delete(tracked)
    await this.releaseNetwork(tracked.record.spec.id)
    if (settle) await this.settle(tracked)
    else {
      tracked.settled = true
      this.options.tracking.stopPumping(tracked)
    }
  }

  /** The workload is over: stop watching its output, take the last of it, note how it ended. */
  private async settle(tracked: Tracked): Promise<void> {
    tracked.settled = true
    this.options.tracking.stopPumping(tracked)
    await tracked.pump.pump(true)
    await this.noteEnded(tracked)
  }

  // --- observing --------------------------------------------------------------------------

  async isRunning(record: WorkloadRecord): Promise<boolean> {
    return record.bootId === currentBootId() && leaderIsRunning(groupOf(record))
  }

  /**
   * Whether a workload this driver tracks runs. One it watches (its own child, whose exit Node
   * reports; one adopted, looked at every second) was identified by its start ticks when it
   * was started or adopted, and runs until its end is seen: a kill(0) is enough, not a read of
   * its /proc entry.
   */
  private async trackedRuns(tracked: Tracked): Promise<boolean> {
    if (tracked.settled) return false
    if (this.active && this.workloads.get(tracked.record.spec.id) === tracked) {
      return tracked.record.bootId === currentBootId() && pidExists(tracked.record.pid)
    }
    return this.isRunning(tracked.record)
  }

  async stateOf(tracked: Tracked): Promise<WorkloadState> {
    const { record } = tracked
    const base = { id: record.spec.id, startedAt: record.startedAt, labels: record.spec.labels }
    if (await this.trackedRuns(tracked)) {
      return { ...base, phase: 'running', exitCode: null, finishedAt: null }
    }
    const ended = await this.noteEnded(tracked)
    return {
      ...base,
      phase: 'exited',
      exitCode: ended.exitCode,
      finishedAt: ended.finishedAt,
      ...(ended.outOfMemory ? { outOfMemory: true } : {}),
    }
  }

  /** How an ended workload ended; computed once and kept. Call only once it has ended. */
  private async noteEnded(tracked: Tracked): Promise<Ended> {
    if (tracked.ended) return tracked.ended
    const exitFile = this.file(tracked.record.spec.id, EXIT_STATUS_FILE)
    const exitCode = parseExitStatus(await readFile(exitFile, 'utf8').catch(() => undefined))
    let finishedAt = tracked.record.stoppedAt
    if (finishedAt === undefined) {
      // Ended while no driver watched: the exit-status file was written as it ended.
      const written = await stat(exitFile).catch(() => undefined)
      finishedAt = (written?.mtime ?? this.options.clock.now()).toISOString()
      tracked.record = { ...tracked.record, stoppedAt: finishedAt }
      if (this.active) await this.options.tracking.save(tracked).catch(() => undefined)
    }
    const id = tracked.record.spec.id
    const outOfMemory = await ranOutOfMemory(
      await this.options.containment.cgroups(),
      id,
      this.file(id, OUT_OF_MEMORY_FILE),
    )
    tracked.ended = { exitCode, finishedAt, outOfMemory }
    return tracked.ended
  }

  /** The tracked workload for an id, adopting it from the state directory when unseen. */
  async load(id: string): Promise<Tracked | undefined> {
    const known = this.workloads.get(id)
    if (known) return known
    if (!isValidWorkloadId(id)) return undefined
    let text: string
    try {
      text = await readFile(this.file(id, STATE_FILE), 'utf8')
    } catch (error) {
      if (isMissing(error)) return undefined
      throw error
    }
    const record = parseWorkloadRecord(text)
    if (!record || record.spec.id !== id) return undefined
    const { tracking } = this.options
    // Inactive: read afresh each time, never kept, never pumped (setActive).
    if (!this.active) return tracking.track(record)
    const raced = this.workloads.get(id)
    if (raced) return raced
    const tracked = tracking.track(record)
    this.workloads.set(id, tracked)
    // Written by a version that kept the environment (worker keys) in it: write it again
    // without.
    if (/"(env|registryAuth)"\s*:/.test(text)) await tracking.save(tracked).catch(() => undefined)
    // Adopted: running, its exit is looked for and its output pumped as it comes; ended while
    // no driver was running, its last lines are collected now.
    if (await this.isRunning(record)) {
      this.adopt(tracked)
      tracking.startPumping(tracked)
    } else void this.ended(tracked)
    return tracked
  }

  private file(id: string, name: string): string {
    return workloadFile(this.options.stateDir, id, name)
  }
}
