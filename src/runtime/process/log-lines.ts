import type { LogLine, LogQuery } from '../driver.js'

/**
 * Longest line kept whole. A workload that prints megabytes without a newline (a progress bar
 * redrawn with \r, a binary dump) must not make one log entry of unbounded size.
 */
export const MAX_LOG_LINE_BYTES = 64 * 1024

const NEWLINE = 0x0a
const CARRIAGE_RETURN = 0x0d

export interface ChunkLine {
  text: string
  /** Offset in the chunk just after this line (after its newline, when it had one). */
  end: number
}

export interface SplitChunk {
  lines: ChunkLine[]
  /** Bytes of the chunk that the lines cover; the rest is an incomplete line. */
  consumed: number
}

/** Moves a cut point back so that it does not fall inside a UTF-8 sequence. */
function utf8Boundary(chunk: Uint8Array, cut: number, floor: number): number {
  let at = cut
  while (at > floor && ((chunk[at] ?? 0) & 0xc0) === 0x80) at--
  return at > floor ? at : cut
}

/**
 * Splits raw output into lines. A trailing \r (CRLF output) is dropped; lines longer than
 * `maxLineBytes` are cut into pieces. The bytes after the last newline are an incomplete line,
 * left for the next read, unless `final` (the writer has exited), when they are a line too.
 * At most `maxLines` lines are taken; `consumed` then ends after the last of them.
 */
export function splitLogChunk(
  chunk: Uint8Array,
  final: boolean,
  maxLineBytes: number = MAX_LOG_LINE_BYTES,
  maxLines: number = Infinity,
): SplitChunk {
  const buffer = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
  const lines: ChunkLine[] = []
  let position = 0
  while (position < buffer.length && lines.length < maxLines) {
    const newline = buffer.indexOf(NEWLINE, position)
    const lineEnd = newline < 0 ? buffer.length : newline
    if (lineEnd - position > maxLineBytes) {
      const cut = utf8Boundary(buffer, position + maxLineBytes, position)
      lines.push({ text: buffer.toString('utf8', position, cut), end: cut })
      position = cut
    } else if (newline >= 0 || final) {
      const textEnd =
        lineEnd > position && buffer[lineEnd - 1] === CARRIAGE_RETURN ? lineEnd - 1 : lineEnd
      const end = newline >= 0 ? newline + 1 : buffer.length
      lines.push({ text: buffer.toString('utf8', position, textEnd), end })
      position = end
    } else {
      break
    }
  }
  return { lines, consumed: position }
}

/** One line of logs.jsonl: the line, and where output.log continues after it. */
export interface LogEntry extends LogLine {
  /** Byte offset in output.log just after this line; a restarted server resumes there. */
  end: number
}

export function formatLogEntry(entry: LogEntry): string {
  return `${JSON.stringify({ seq: entry.seq, ts: entry.ts, line: entry.line, end: entry.end })}\n`
}

export function parseLogEntry(text: string): LogEntry | undefined {
  try {
    const value: unknown = JSON.parse(text)
    if (typeof value !== 'object' || value === null) return undefined
    const { seq, ts, line, end } = value as Record<string, unknown>
    if (
      typeof seq !== 'number' ||
      typeof ts !== 'string' ||
      typeof line !== 'string' ||
      typeof end !== 'number'
    ) {
      return undefined
    }
    return { seq, ts, line, end }
  } catch {
    return undefined
  }
}

/** What a LogQuery's afterSeq and since keep (tail is the reader's: log-tail.ts). */
export interface LogFilter {
  afterSeq: number
  /** Milliseconds since the epoch; NaN or undefined keep every time. */
  sinceMs: number | undefined
}

export function logFilterOf(query: LogQuery = {}): LogFilter {
  return {
    afterSeq: query.afterSeq ?? 0,
    sinceMs: query.since === undefined ? undefined : Date.parse(query.since),
  }
}

export function logEntryMatches(entry: LogEntry, filter: LogFilter): boolean {
  const { afterSeq, sinceMs } = filter
  return (
    entry.seq > afterSeq &&
    (sinceMs === undefined || Number.isNaN(sinceMs) || Date.parse(entry.ts) >= sinceMs)
  )
}

export function logLineOf(entry: LogEntry): LogLine {
  return { seq: entry.seq, ts: entry.ts, line: entry.line }
}
