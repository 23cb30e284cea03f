import { appendFile, open, readFile, truncate, type FileHandle } from 'node:fs/promises'
import type { Clock } from '../../shared/clock.js'
import {
  formatLogEntry,
  parseLogEntries,
  parseLogEntry,
  splitLogChunk,
  type LogEntry,
} from './log-lines.js'

/** Bytes of output.log read at a time; larger than a log line so every read makes progress. */
const READ_CHUNK_BYTES = 1024 * 1024

/** First guess at how far from its end logs.jsonl holds its last entry; doubled as needed. */
const TAIL_PROBE_BYTES = 64 * 1024

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === 'ENOENT'
}

/** Position of the last newline before `before` in an open file, or -1. */
async function lastNewlineBefore(handle: FileHandle, before: number): Promise<number> {
  const buffer = Buffer.alloc(TAIL_PROBE_BYTES)
  for (let end = before; end > 0; end -= buffer.length) {
    const start = Math.max(0, end - buffer.length)
    const { bytesRead } = await handle.read(buffer, 0, end - start, start)
    const at = buffer.subarray(0, bytesRead).lastIndexOf(0x0a)
    if (at >= 0) return start + at
  }
  return -1
}

/**
 * The last complete entry of a logs.jsonl file. A half-written last line (the server died
 * while appending) is cut off so that the next append starts on a fresh line.
 */
export async function readLastLogEntry(file: string): Promise<LogEntry | undefined> {
  let handle
  try {
    handle = await open(file, 'r')
  } catch (error) {
    if (isMissing(error)) return undefined
    throw error
  }
  try {
    const size = (await handle.stat()).size
    const last = await lastNewlineBefore(handle, size)
    if (last + 1 < size) await truncate(file, last + 1)
    if (last < 0) return undefined
    const previous = await lastNewlineBefore(handle, last)
    const buffer = Buffer.alloc(last - previous - 1)
    await handle.read(buffer, 0, buffer.length, previous + 1)
    const entry = parseLogEntry(buffer.toString('utf8'))
    if (entry) return entry
  } finally {
    await handle.close()
  }
  // An unreadable last line: never restart numbering at 1, take the highest readable seq.
  return (await readLogEntries(file)).reduce<LogEntry | undefined>(
    (best, e) => (best === undefined || e.seq > best.seq ? e : best),
    undefined,
  )
}

/** All entries of a logs.jsonl file (none when it does not exist). */
export async function readLogEntries(file: string): Promise<LogEntry[]> {
  try {
    return parseLogEntries(await readFile(file, 'utf8'))
  } catch (error) {
    if (isMissing(error)) return []
    throw error
  }
}

/** Entries after byte `offset` of a logs.jsonl file, and the offset after the last of them. */
export async function readLogEntriesFrom(
  file: string,
  offset: number,
): Promise<{ entries: LogEntry[]; next: number }> {
  let handle
  try {
    handle = await open(file, 'r')
  } catch (error) {
    if (isMissing(error)) return { entries: [], next: offset }
    throw error
  }
  try {
    const size = (await handle.stat()).size
    if (size <= offset) return { entries: [], next: offset }
    const buffer = Buffer.alloc(size - offset)
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset)
    const complete = buffer.lastIndexOf(0x0a, bytesRead - 1) + 1
    return {
      entries: parseLogEntries(buffer.toString('utf8', 0, complete)),
      next: offset + complete,
    }
  } finally {
    await handle.close()
  }
}

/**
 * Copies new complete lines of a workload's output.log into its logs.jsonl, numbering them and
 * stamping each with the time it was read. Everything it needs to resume (last seq, byte
 * offset in output.log) is in the last entry of logs.jsonl, so a restarted server continues
 * where the previous one stopped. Calls are serialised: a timer and a reader may both pump.
 */
export class LogPump {
  private loaded = false
  private seq = 0
  private offset = 0
  private queue: Promise<unknown> = Promise.resolve()

  constructor(
    private readonly outputFile: string,
    private readonly logFile: string,
    private readonly clock: Clock,
  ) {}

  /**
   * Reads what is new; `final` (the writer has exited) also takes an unterminated last line.
   * Resolves to the number of entries appended.
   */
  pump(final: boolean): Promise<number> {
    const run = this.queue.then(() => this.pumpNow(final))
    this.queue = run.catch(() => undefined)
    return run
  }

  private async load(): Promise<void> {
    const last = await readLastLogEntry(this.logFile)
    this.seq = last?.seq ?? 0
    this.offset = last?.end ?? 0
    this.loaded = true
  }

  private async pumpNow(final: boolean): Promise<number> {
    if (!this.loaded) await this.load()
    let handle
    try {
      handle = await open(this.outputFile, 'r')
    } catch (error) {
      if (isMissing(error)) return 0
      throw error
    }
    let appended = 0
    try {
      const size = (await handle.stat()).size
      // Shorter than what was read: truncated by someone (log rotation); start over.
      if (size < this.offset) this.offset = 0
      const buffer = Buffer.alloc(Math.min(READ_CHUNK_BYTES, size - this.offset))
      while (this.offset < size) {
        const length = Math.min(buffer.length, size - this.offset)
        const { bytesRead } = await handle.read(buffer, 0, length, this.offset)
        if (bytesRead === 0) break
        const reachedEnd = this.offset + bytesRead >= size
        const { lines, consumed } = splitLogChunk(
          buffer.subarray(0, bytesRead),
          final && reachedEnd,
        )
        if (lines.length === 0) break
        const ts = this.clock.now().toISOString()
        let seq = this.seq
        const text = lines
          .map((line) =>
            formatLogEntry({ seq: ++seq, ts, line: line.text, end: this.offset + line.end }),
          )
          .join('')
        await appendFile(this.logFile, text)
        this.seq = seq
        this.offset += consumed
        appended += lines.length
      }
    } finally {
      await handle.close()
    }
    return appended
  }
}
