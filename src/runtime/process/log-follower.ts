import type { FileHandle } from 'node:fs/promises'
import { parseLogEntry, type LogEntry } from './log-lines.js'
import { entriesBackward, openIfPresent, type PlacedEntry } from './log-tail.js'

/** Bytes of a log file read at a time going forward (a longer line takes a larger read). */
export const FORWARD_CHUNK_BYTES = 64 * 1024

const NEWLINE = 0x0a

/**
 * The entries of an open logs.jsonl from byte `offset` to its present end, in order, read a
 * chunk at a time; each with the offset after its line. An incomplete last line (being
 * appended) is left for the next read; unreadable lines are skipped.
 */
export async function* entriesForward(
  handle: FileHandle,
  offset: number,
  chunkBytes: number = FORWARD_CHUNK_BYTES,
): AsyncGenerator<PlacedEntry> {
  const size = (await handle.stat()).size
  let buffer = Buffer.alloc(chunkBytes)
  for (let position = offset; position < size;) {
    const { bytesRead } = await handle.read(
      buffer,
      0,
      Math.min(buffer.length, size - position),
      position,
    )
    if (bytesRead === 0) return
    const last = buffer.lastIndexOf(NEWLINE, bytesRead - 1)
    if (last < 0) {
      // No line ends in this read: the rest is being written, or a line longer than a chunk.
      if (position + bytesRead >= size) return
      buffer = Buffer.alloc(buffer.length * 2)
      continue
    }
    for (let start = 0; start <= last;) {
      const at = buffer.indexOf(NEWLINE, start)
      const entry = parseLogEntry(buffer.toString('utf8', start, at))
      start = at + 1
      if (entry) yield { entry, end: position + start }
    }
    position += last + 1
  }
}

/** Bytes read to find the first entry of a file (a longer first line takes a larger read). */
const PEEK_BYTES = 4096

/**
 * A file of the log, open, and the seq of its first entry: what tells the files apart. Not the
 * inode: a new logs.jsonl often gets the inode of the logs.1.jsonl its rotation deleted.
 */
interface Source {
  handle: FileHandle | undefined
  firstSeq: number | undefined
}

async function sourceOf(file: string): Promise<Source> {
  const handle = await openIfPresent(file)
  let firstSeq: number | undefined
  try {
    for await (const { entry } of handle ? entriesForward(handle, 0, PEEK_BYTES) : []) {
      firstSeq = entry.seq
      break
    }
  } catch (error) {
    await handle?.close()
    throw error
  }
  return { handle, firstSeq }
}

/** Where a read begins: a byte offset in one of the files (0: rotated, 1: current). */
interface Position {
  index: number
  offset: number
}

/** What one LogFollower.read() found. */
export interface FollowedBatch {
  entries: LogEntry[]
  /** The reader came to the end of the log; false: there is more to read at once. */
  atEnd: boolean
}

/**
 * Follows a log kept in `current` and `rotated` (rotating-log-writer.ts): each read() gives the
 * next entries (the first: those after `afterSeq`), about `chunkBytes` of the log at most, and
 * closes the files before it returns, so that a follower nobody reads on holds nothing open.
 * Where it is, is a byte offset in a file known by its first entry: when `current` was rotated
 * meanwhile, the rest of that file is read in `rotated`, then `current` from its start; a
 * follower left behind by two rotations goes on after the newest entry it has, or from the
 * oldest one there is (the lines between are gone). Entries are delivered once, in seq order.
 */
export class LogFollower {
  private at: { firstSeq: number | undefined; offset: number } | undefined
  private last: number

  constructor(
    private readonly files: { current: string; rotated: string },
    afterSeq: number,
    private readonly chunkBytes: number = FORWARD_CHUNK_BYTES,
  ) {
    this.last = afterSeq
  }

  /** The seq of the last entry delivered (afterSeq before the first). */
  get lastSeq(): number {
    return this.last
  }

  async read(): Promise<FollowedBatch> {
    // The current file first: a rotation between the two opens then shows one file twice
    // (harmless: entries are taken by seq) rather than none.
    const sources: Source[] = []
    const entries: LogEntry[] = []
    try {
      sources.push(await sourceOf(this.files.current))
      sources.unshift(await sourceOf(this.files.rotated))
      const found = sources.findIndex(
        (s) => s.firstSeq !== undefined && s.firstSeq === this.at?.firstSeq,
      )
      const start: Position =
        found >= 0 ? { index: found, offset: this.at!.offset } : await this.locate(sources)
      let bytes = 0
      for (let index = start.index, offset = start.offset; index < sources.length; index++) {
        const { handle, firstSeq } = sources[index]!
        if (!handle) continue
        this.at = { firstSeq, offset }
        for await (const { entry, end } of entriesForward(handle, offset, this.chunkBytes)) {
          bytes += end - this.at.offset
          this.at = { firstSeq: this.at.firstSeq ?? entry.seq, offset: end }
          if (entry.seq > this.last) {
            this.last = entry.seq
            entries.push(entry)
          }
          if (bytes >= this.chunkBytes) return { entries, atEnd: false }
        }
        offset = 0
      }
      return { entries, atEnd: true }
    } finally {
      await Promise.all(sources.map((s) => s.handle?.close()))
    }
  }

  /**
   * Where the entries after `last` begin: the start of the oldest file when its first entry
   * is later; else after the newest entry at or before `last`, found from the end of its file
   * backwards (a follower of the newest lines reads one chunk).
   */
  private async locate(sources: Source[]): Promise<Position> {
    const oldest = sources.findIndex((s) => s.firstSeq !== undefined)
    if (oldest < 0 || sources[oldest]!.firstSeq! > this.last) {
      return { index: Math.max(0, oldest), offset: 0 }
    }
    // The newest file that begins at or before `last` holds the entry.
    let index = sources.length - 1
    while (index > oldest && (sources[index]!.firstSeq ?? Infinity) > this.last) index--
    for await (const { entry, end } of entriesBackward(sources[index]!.handle!)) {
      if (entry.seq <= this.last) return { index, offset: end }
    }
    return { index, offset: 0 }
  }
}
