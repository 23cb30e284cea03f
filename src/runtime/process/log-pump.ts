import { fstatSync, ftruncateSync, readSync } from 'node:fs'
import { open, readFile, rename, truncate, writeFile, type FileHandle } from 'node:fs/promises'
import type { Clock } from '../../shared/clock.js'
import type { LogBudget, WorkloadLogFiles } from './log-files.js'
import {
  formatLogEntry,
  MAX_LOG_LINE_BYTES,
  splitLogChunk,
  type ChunkLine,
  type LogEntry,
} from './log-lines.js'
import { openIfPresent, readLastLogEntry } from './log-tail.js'
import { RotatingLogWriter } from './rotating-log-writer.js'

/**
 * Bytes of output.log read at a time; larger than a log line (MAX_LOG_LINE_BYTES) so that every
 * read makes progress, and small enough that the entries of one read (two bytes a line at
 * worst: 64 Ki entries) are a few megabytes of memory.
 */
export const READ_CHUNK_BYTES = 128 * 1024

/**
 * Lines numbered between two turns of the event loop (each pump step reads or writes a file in
 * between). A chunk of short lines holds tens of thousands; numbering them at once held the
 * server's event loop for a quarter of a second under a log flood, and /readyz with it.
 */
export const LINES_PER_STEP = 2048

/**
 * At most this much of output.log is taken when it has grown past its budget (and at most the
 * budget): the newest bytes, copied out before the file is emptied; a bound on memory,
 * whatever the budget.
 */
export const NEWEST_OUTPUT_BYTES = 1024 * 1024

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === 'ENOENT'
}

/** Bytes read at a time looking for the last newline of logs.jsonl. */
const TAIL_PROBE_BYTES = 64 * 1024

/**
 * Cuts off a half-written last line of `file` (the server died while appending), so that the
 * next append starts on a fresh line.
 */
async function cutHalfWrittenLine(file: string): Promise<void> {
  const handle = await openIfPresent(file)
  if (!handle) return
  let size: number
  let keep = 0
  try {
    size = (await handle.stat()).size
    const buffer = Buffer.alloc(TAIL_PROBE_BYTES)
    for (let end = size; end > 0 && keep === 0; end -= buffer.length) {
      const start = Math.max(0, end - buffer.length)
      const { bytesRead } = await handle.read(buffer, 0, end - start, start)
      const at = buffer.subarray(0, bytesRead).lastIndexOf(0x0a)
      if (at >= 0) keep = start + at + 1
    }
  } finally {
    await handle.close()
  }
  if (keep < size) await truncate(file, keep)
}

/**
 * Copies new complete lines of a workload's output.log into its numbered log (logs.jsonl and
 * logs.1.jsonl: log-files.ts), numbering them and stamping each with the time it was read, and
 * keeps both within the workload's budget: the numbered log rotates (RotatingLogWriter), and
 * output.log, which the workload writes itself, is emptied once read. Everything it needs to
 * resume (last seq, byte offset in output.log) is in the last entry of the log and in
 * output.reset, so a restarted server continues where the previous one stopped. Calls are
 * serialised: a timer and a reader may both pump.
 */
export class LogPump {
  private loaded = false
  private seq = 0
  private offset = 0
  private queue: Promise<unknown> = Promise.resolve()
  private readonly writer: RotatingLogWriter

  constructor(
    private readonly files: WorkloadLogFiles,
    private readonly clock: Clock,
    private readonly budget: LogBudget,
  ) {
    this.writer = new RotatingLogWriter(files.current, files.rotated, budget.fileBytes)
  }

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
    await cutHalfWrittenLine(this.files.current)
    // A log of an earlier version (no budget) or of a larger budget is cut down to this one.
    await this.writer.trim()
    const last = await readLastLogEntry(this.files)
    this.seq = last?.seq ?? 0
    this.offset = last?.end ?? 0
    // output.log was emptied after this entry was read: it starts over.
    if (last !== undefined && (await this.resetAfter()) === last.seq) this.offset = 0
    this.loaded = true
  }

  private async resetAfter(): Promise<number | undefined> {
    try {
      const seq = Number((await readFile(this.files.outputReset, 'utf8')).trim())
      return Number.isInteger(seq) ? seq : undefined
    } catch (error) {
      if (isMissing(error)) return undefined
      throw error
    }
  }

  private async pumpNow(final: boolean): Promise<number> {
    if (!this.loaded) await this.load()
    let handle
    try {
      // Read and write: the pump empties the file once it has read it.
      handle = await open(this.files.output, 'r+')
    } catch (error) {
      if (isMissing(error)) return 0
      throw error
    }
    try {
      const size = (await handle.stat()).size
      // Shorter than what was read: emptied by someone else; start over.
      if (size < this.offset) this.offset = 0
      if (size > this.budget.outputBytes) return await this.takeNewest(handle, size)
      const appended = await this.readUpTo(handle, size, final)
      if (this.offset >= this.budget.outputBytes / 2) await this.emptyIfAllRead(handle)
      return appended
    } finally {
      await handle.close()
    }
  }

  /** Numbers the lines of output.log from the offset up to `size` (the size when it began). */
  private async readUpTo(handle: FileHandle, size: number, final: boolean): Promise<number> {
    let appended = 0
    const buffer = Buffer.alloc(Math.min(READ_CHUNK_BYTES, size - this.offset))
    while (this.offset < size) {
      const length = Math.min(buffer.length, size - this.offset)
      const { bytesRead } = await handle.read(buffer, 0, length, this.offset)
      if (bytesRead === 0) break
      const reachedEnd = this.offset + bytesRead >= size
      const { lines, consumed } = splitLogChunk(
        buffer.subarray(0, bytesRead),
        final && reachedEnd,
        MAX_LOG_LINE_BYTES,
        LINES_PER_STEP,
      )
      if (lines.length === 0) break
      await this.append(lines, (line) => this.offset + line.end)
      this.offset += consumed
      appended += lines.length
    }
    return appended
  }

  /**
   * The workload has read up with a file that is half its budget: it is emptied, so that it
   * does not grow further. Looked at and emptied with nothing in between (two system calls):
   * a line written in that instant would be lost; once the file is emptied, the workload's
   * next write lands at its start (it was opened in append mode).
   */
  private async emptyIfAllRead(handle: FileHandle): Promise<void> {
    if (fstatSync(handle.fd).size !== this.offset) return
    ftruncateSync(handle.fd, 0)
    await this.startedOver(0)
  }

  /**
   * output.log has grown past its budget: the workload writes faster than the pump reads, or
   * for long without a pause. Its newest bytes (its budget, NEWEST_OUTPUT_BYTES at most, none
   * before the offset) are copied out and the file is emptied at once, then those bytes are
   * numbered; the older unread bytes are left out, and a line of the log says how many.
   */
  private async takeNewest(handle: FileHandle, size: number): Promise<number> {
    const keep = Math.min(this.budget.outputBytes, NEWEST_OUTPUT_BYTES)
    const start = Math.max(this.offset, size - keep)
    // One byte before `start` too, to see whether a line begins there.
    const from = start > this.offset ? start - 1 : start
    const copy = Buffer.alloc(size - from)
    // Read and emptied with nothing in between: what the workload writes in that instant is lost.
    const bytesRead = readSync(handle.fd, copy, 0, copy.length, from)
    ftruncateSync(handle.fd, 0)
    await this.startedOver(start - this.offset)
    let taken = copy.subarray(0, bytesRead)
    if (from < start) {
      // A line cut by `start` is left out whole.
      const newline = taken.indexOf(0x0a)
      taken = newline < 0 ? taken.subarray(taken.length) : taken.subarray(newline + 1)
    }
    let appended = 0
    for (let position = 0; position < taken.length;) {
      const chunk = taken.subarray(position, position + READ_CHUNK_BYTES)
      // The last piece ends a line even without a newline: its rest is gone with the file.
      const { lines, consumed } = splitLogChunk(
        chunk,
        position + chunk.length >= taken.length,
        MAX_LOG_LINE_BYTES,
        LINES_PER_STEP,
      )
      if (lines.length === 0) break
      // Entries of a file that no longer has them: a restarted server resumes at its start.
      await this.append(lines, () => 0)
      position += consumed
      appended += lines.length
    }
    return appended
  }

  /**
   * output.log was emptied: reading starts over at 0, output.reset says so to a restarted
   * server, and `skipped` unread bytes (if any) are noted in the log.
   */
  private async startedOver(skipped: number): Promise<void> {
    this.offset = 0
    if (skipped > 0) {
      const note = `[podyard] ${skipped} bytes of output left out: written faster than the log keeps (its budget is ${this.budget.maxBytes} bytes)`
      await this.append([{ text: note, end: 0 }], () => 0)
    }
    const file = this.files.outputReset
    // Written aside and renamed: a crash never leaves half a number.
    await writeFile(`${file}.tmp`, `${this.seq}\n`)
    await rename(`${file}.tmp`, file)
  }

  /** Appends numbered entries for `lines`, `endOf` saying where output.log goes on after each. */
  private async append(
    lines: readonly ChunkLine[],
    endOf: (line: ChunkLine) => number,
  ): Promise<void> {
    const ts = this.clock.now().toISOString()
    let seq = this.seq
    const entries = lines.map((line) =>
      formatLogEntry({ seq: ++seq, ts, line: line.text, end: endOf(line) } satisfies LogEntry),
    )
    await this.writer.append(entries)
    this.seq = seq
  }
}
