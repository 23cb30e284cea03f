/**
 * A runtime driver that only records the workloads it is asked to run (bench/README.md): the
 * fleet benchmark's ten thousand simulated hosts would otherwise start a real process for each
 * pod, and the figure would be the cost of fork and exec, not of the platform. Never for
 * serving: nothing runs, so nothing exits, writes logs or uses a CPU.
 */
import type {
  LogLine,
  RuntimeDriver,
  WorkloadIsolation,
  WorkloadFilter,
  WorkloadSpec,
  WorkloadState,
  WorkloadStats,
} from '../../src/runtime/driver.js'
import { hasLabels } from '../../src/runtime/driver.js'

export class RecordingDriver implements RuntimeDriver {
  readonly name = 'recording'
  private readonly workloads = new Map<string, WorkloadState>()
  private readonly listeners = new Set<(id: string) => void>()
  /** Starts and stops asked of it, for the bench's report. */
  readonly counts = { starts: 0, stops: 0 }

  async start(spec: WorkloadSpec): Promise<WorkloadState> {
    const known = this.workloads.get(spec.id)
    if (known?.phase === 'running') throw new Error(`workload ${spec.id} is already running`)
    this.counts.starts += 1
    const state: WorkloadState = {
      id: spec.id,
      phase: 'running',
      startedAt: new Date().toISOString(),
      exitCode: null,
      finishedAt: null,
      labels: { ...spec.labels },
    }
    this.workloads.set(spec.id, state)
    return state
  }

  async stop(id: string): Promise<void> {
    const known = this.workloads.get(id)
    if (!known || known.phase !== 'running') return
    this.counts.stops += 1
    this.workloads.set(id, {
      ...known,
      phase: 'exited',
      exitCode: null,
      finishedAt: new Date().toISOString(),
    })
    for (const listener of this.listeners) listener(id)
  }

  async inspect(id: string): Promise<WorkloadState | undefined> {
    return this.workloads.get(id)
  }

  async list(filter?: WorkloadFilter): Promise<WorkloadState[]> {
    return [...this.workloads.values()].filter((state) => hasLabels(state.labels, filter))
  }

  watch(listener: (id: string) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  async stats(): Promise<WorkloadStats | undefined> {
    return undefined
  }

  async readLogs(): Promise<LogLine[]> {
    return []
  }

  // eslint-disable-next-line require-yield
  async *followLogs(): AsyncIterable<LogLine> {
    return
  }

  async remove(id: string): Promise<void> {
    await this.stop(id)
    this.workloads.delete(id)
  }

  async isolation(): Promise<WorkloadIsolation> {
    return { level: 'none', detail: 'the fleet benchmark records workloads and runs none' }
  }

  async close(): Promise<void> {}
}
