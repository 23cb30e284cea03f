import type { LogLine, LogQuery } from '../driver.js'
import { logPositionOf } from './container-spec.js'
import { containerLogLines, newestLogTime, selectStreamedLines } from './container-log-reader.js'
import { ignoring } from './engine-calls.js'
import { FollowStallWatch } from './follow-stall.js'
import { followPull, type ImagePulls } from './image-pulls.js'
import { LogFrameDecoder, selectLines } from './log-frames.js'
import { LogNumbersStore, type LogNumbersKeeping } from './log-numbers-store.js'
import { LogNumbering, lostLinesNote } from './log-numbering.js'
import type { FoundContainer } from './own-containers.js'

/**
 * A workload's log under the docker driver: its container's pull lines and own output, then a
 * pull under way (or failed) for its next start, numbered on across its containers.
 */
export class WorkloadLogs {
  private readonly follows = new Set<NodeJS.ReadableStream>()
  /** Where each container's numbers fall across rotations (log-numbering.ts), by container id. */
  private readonly numbers: LogNumbersStore

  /** @param keeping where the numbers are kept for every replica (none: memory only) */
  constructor(
    private readonly pulls: ImagePulls,
    keeping?: LogNumbersKeeping,
  ) {
    this.numbers = new LogNumbersStore(keeping)
  }

  /**
   * The container's pull lines and its own log, then a pull under way (or failed) for its next
   * start: the workload's log, numbered on across its containers.
   */
  async read(id: string, found: FoundContainer | undefined, query?: LogQuery): Promise<LogLine[]> {
    const pending = this.pulls.get(id)?.lines ?? []
    if (!found) return selectLines(pending, query)
    // Streamed: only the lines returned are kept, never the whole retained log.
    const own = await selectStreamedLines(this.containerLines(found, query?.afterSeq), query)
    return selectLines([...own, ...pending], query)
  }

  async *follow(
    id: string,
    found: FoundContainer | undefined,
    afterSeq: number,
    signal: AbortSignal,
  ): AsyncIterable<LogLine> {
    const pull = this.pulls.get(id)
    if (pull) {
      // The container (if any) has exited; a pull for its next start is the log's end.
      let last = afterSeq
      for await (const line of found ? this.containerLines(found, afterSeq) : []) {
        if (line.seq > last) yield line
        last = Math.max(last, line.seq)
      }
      yield* followPull(pull, last, signal)
      return
    }
    if (!found) return
    const { base, pullLines } = logPositionOf(found.inspection.Config.Labels)
    for (const line of pullLines) if (line.seq > afterSeq && !signal.aborted) yield line
    const stream = await ignoring([404], () =>
      found.container.logs({ stdout: true, stderr: true, timestamps: true, follow: true }),
    )
    if (!stream) return
    this.follows.add(stream)
    const destroy = (): void => void (stream as unknown as { destroy(): void }).destroy()
    signal.addEventListener('abort', destroy, { once: true })
    const decoder = new LogFrameDecoder()
    const numbering = new LogNumbering(await this.numbers.numbersOf(found.container.id), base)
    let noted = false
    const after = (lines: LogLine[]): LogLine[] => {
      const note =
        !noted && numbering.start ? lostLinesNote(numbering.start, base, afterSeq) : undefined
      if (numbering.start) noted = true
      return [...(note ? [note] : []), ...lines].filter((line) => line.seq > afterSeq)
    }
    let stalled = false
    const watch = new FollowStallWatch(
      () => newestLogTime(found.container),
      () => {
        stalled = true
        destroy()
      },
    )
    try {
      try {
        for await (const chunk of stream) {
          const decoded = decoder.push(chunk as Buffer)
          watch.heard(decoder.newestFrameTime)
          yield* after(numbering.push(decoded))
          watch.waiting()
        }
      } catch (error) {
        // Destroying the response on abort or close ends the iteration with an error.
        if (!stalled && (signal.aborted || !this.follows.has(stream))) return
        if (!stalled) throw error
      }
      // The driver follows again from the last line sent (docker-driver.ts followLogs).
      if (stalled) throw new Error(`the engine stopped sending the log of ${found.container.id}`)
      if (signal.aborted) return
      yield* after([...numbering.push(decoder.end()), ...numbering.end()])
    } finally {
      watch.stop()
      signal.removeEventListener('abort', destroy)
      this.follows.delete(stream)
      destroy()
      this.numbers.save(found.container.id)
    }
  }

  /** The seq of the last line of an exited container's log (its base when it wrote nothing). */
  async logEndOf(found: FoundContainer): Promise<number> {
    let end = logPositionOf(found.inspection.Config.Labels).base
    for await (const line of this.containerLines(found)) end = Math.max(end, line.seq)
    return end
  }

  /** A removed container's numbers go with it. */
  forget(containerId: string): Promise<void> {
    return this.numbers.forget(containerId)
  }

  /** Ends the open follows; the numbers they found are kept. */
  async close(): Promise<void> {
    const open = [...this.follows]
    this.follows.clear()
    for (const stream of open) (stream as unknown as { destroy(): void }).destroy()
    await this.numbers.flush()
  }

  /** A container's part of the workload's log: its pull lines, then its own output. */
  private async *containerLines(found: FoundContainer, afterSeq?: number): AsyncGenerator<LogLine> {
    const { base, pullLines } = logPositionOf(found.inspection.Config.Labels)
    yield* pullLines
    const numbers = await this.numbers.numbersOf(found.container.id)
    yield* containerLogLines(found.container, base, numbers, afterSeq)
    this.numbers.save(found.container.id)
  }
}
