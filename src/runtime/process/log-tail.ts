import { open, type FileHandle } from 'node:fs/promises'
import type { LogQuery } from '../driver.js'
import { logEntryMatches, logFilterOf, parseLogEntry, type LogEntry } from './log-lines.js'

/**
 * Bytes of a log file read at a time, from its end backwards: what a read of the last lines
 * costs, whatever the size of the file.
 */
export const BACKWARD_CHUNK_BYTES = 64 * 1024

const NEWLINE = 0x0a

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === 'ENOENT'
}

/** The file open for reading, or undefined when it does not exist. */
export async function openIfPresent(file: string): Promise<FileHandle | undefined> {
  try {
    return await open(file, 'r')
  } catch (error) {
    if (isMissing(error)) return undefined
    throw error
  }
}

/** An entry of a log file and the byte offset just after its line. */
export interface PlacedEntry {
  entry: LogEntry
  end: number
}

/**
 * The entries of an open logs.jsonl, newest first, read `chunkBytes` at a time from the end:
 * only newline-terminated lines count (the last may be half written by a server that crashed
 * while appending), unreadable lines are skipped, and a line longer than a chunk is put
 * together from several. Memory: one chunk and the line being put together.
 */
export async function* entriesBackward(
  handle: FileHandle,
  chunkBytes: number = BACKWARD_CHUNK_BYTES,
): AsyncGenerator<PlacedEntry> {
  const size = (await handle.stat()).size
  const buffer = Buffer.alloc(Math.min(chunkBytes, size))
  // The bytes of a line seen so far (its end part), and where that line ends in the file.
  let pending: Buffer | undefined
  let lineEnd = -1
  for (let position = size; position > 0;) {
    const start = Math.max(0, position - buffer.length)
    const { bytesRead } = await handle.read(buffer, 0, position - start, start)
    let end = bytesRead
    // (lastIndexOf with a negative offset would count from the buffer's end: never below 0.)
    for (let at = end > 0 ? buffer.lastIndexOf(NEWLINE, end - 1) : -1; at >= 0;) {
      // Bytes after this newline, up to the previous one, are a whole line (before the file's
      // last newline they are a half-written one, skipped).
      if (lineEnd >= 0) {
        const piece = buffer.subarray(at + 1, end)
        const entry = parseLogEntry(
          (pending ? Buffer.concat([piece, pending]) : piece).toString('utf8'),
        )
        if (entry) yield { entry, end: lineEnd }
      }
      pending = undefined
      lineEnd = start + at + 1
      end = at
      at = end > 0 ? buffer.lastIndexOf(NEWLINE, end - 1) : -1
    }
    // What is left begins a line whose start is in an earlier chunk.
    if (lineEnd >= 0 && end > 0) {
      const rest = Buffer.from(buffer.subarray(0, end))
      pending = pending ? Buffer.concat([rest, pending]) : rest
    }
    position = start
  }
  if (pending && lineEnd >= 0) {
    const entry = parseLogEntry(pending.toString('utf8'))
    if (entry) yield { entry, end: lineEnd }
  }
}

/**
 * The last entries of a log kept in `current` and `rotated` (rotating-log-writer.ts) that
 * `query` asks for, oldest first: read backwards from the end of `current`, then of `rotated`,
 * until `tail` entries are found or `afterSeq` is reached. Both files are opened before either
 * is read: a rotation meanwhile makes the same file appear twice, and its entries are taken
 * once (seqs only decrease backwards).
 */
export async function readLogTail(
  files: { current: string; rotated: string },
  query: LogQuery = {},
  chunkBytes: number = BACKWARD_CHUNK_BYTES,
): Promise<LogEntry[]> {
  const tail = query.tail ?? Infinity
  if (tail <= 0) return []
  const filter = logFilterOf(query)
  const handles = [await openIfPresent(files.current), await openIfPresent(files.rotated)]
  const found: LogEntry[] = []
  let below = Infinity
  try {
    scan: for (const handle of handles) {
      if (!handle) continue
      for await (const { entry } of entriesBackward(handle, chunkBytes)) {
        if (entry.seq >= below) continue
        below = entry.seq
        if (entry.seq <= filter.afterSeq) break scan
        if (!logEntryMatches(entry, filter)) continue
        found.push(entry)
        if (found.length >= tail) break scan
      }
    }
  } finally {
    await Promise.all(handles.map((handle) => handle?.close()))
  }
  return found.reverse()
}

/** The last complete entry of a log kept in `current` and `rotated`, or undefined. */
export async function readLastLogEntry(files: {
  current: string
  rotated: string
}): Promise<LogEntry | undefined> {
  return (await readLogTail(files, { tail: 1 }))[0]
}
