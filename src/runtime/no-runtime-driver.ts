import type {
  LogLine,
  RuntimeDriver,
  WorkloadIsolation,
  WorkloadState,
  WorkloadStats,
} from './driver.js'

/**
 * The driver of a host that has no runtime podyard can reach: a real host that names no
 * engine, or whose endpoint's files cannot be read. It runs nothing, anywhere: a start fails
 * with the reason, and it knows no workloads. (A real host's pods never run on this machine.)
 */
export class NoRuntimeDriver implements RuntimeDriver {
  readonly name = 'none'

  constructor(readonly reason: string) {}

  async start(): Promise<WorkloadState> {
    throw new Error(this.reason)
  }

  async stop(): Promise<void> {}

  async inspect(): Promise<WorkloadState | undefined> {
    return undefined
  }

  async list(): Promise<WorkloadState[]> {
    return []
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

  async remove(): Promise<void> {}

  async isolation(): Promise<WorkloadIsolation> {
    return { level: 'container', detail: `no runtime: ${this.reason}` }
  }

  async close(): Promise<void> {}
}
