import type { LogLine, LogQuery } from '../driver.js'

/**
 * Docker's log stream of a container without a TTY is multiplexed: frames of an 8-byte header
 * (stream type, three zero bytes, big-endian payload length) and the payload. With
 * `timestamps=1` every line of a payload begins with an RFC 3339 time with nanoseconds and a
 * space. LogFrameDecoder turns that stream into numbered lines, counting from `base` + 1 in the
 * order lines complete, so that the same container log always gets the same numbers (the base
 * is where the container's log continues the workload's: container-spec.ts LOG_BASE_LABEL).
 *
 * The engine's json-file reader sends lines again when a file is rotated under it (seen while
 * following a flood: a whole file's lines a second time). Each stream's lines are stamped in
 * order by one copier, so a line stamped before the last line of its stream is such a repeat,
 * and so is the last line itself again (the same time and text): it is dropped, not numbered.
 */

const HEADER_BYTES = 8

/**
 * A decoded line with what identifies it in the container's log whatever its number: its
 * stream, Docker's exact time and its text (log-numbering.ts anchors numbers on it).
 */
export interface DecodedLine extends LogLine {
  /** Undefined for a line without Docker's time (none is sent with timestamps=1). */
  key?: string
  /** Docker's time to the nanosecond: [ms since the epoch, ns past it]. */
  time?: [number, number]
}

interface StreamBuffer {
  pending: Buffer
  /** The time of the stream's last line, to the nanosecond: [ms since the epoch, ns past it]. */
  last?: [number, number]
  lastText?: string
}

/** An RFC 3339 time with up to nanoseconds as [ms since the epoch, ns past that ms]. */
function preciseTime(stamp: string, ms: number): [number, number] {
  const fraction = /\.(\d+)/.exec(stamp)?.[1] ?? ''
  return [ms, Number(fraction.padEnd(9, '0').slice(3, 9))]
}

export function isBefore(a: [number, number], b: [number, number]): boolean {
  return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1])
}

export class LogFrameDecoder {
  private buffer: Buffer = Buffer.alloc(0)
  private readonly streams = new Map<number, StreamBuffer>()
  private seq: number
  /**
   * Docker's time of the newest frame decoded, whether it ended a line or not (a progress bar
   * writes no newline): what a follow has heard of the engine (follow-stall.ts).
   */
  newestFrameTime: [number, number] | undefined

  /** @param base the seq before the first line (the lines of earlier containers and pulls) */
  constructor(base = 0) {
    this.seq = base
  }

  /** Feeds raw bytes; returns the lines completed by them. */
  push(chunk: Uint8Array): DecodedLine[] {
    this.buffer =
      this.buffer.length === 0 ? Buffer.from(chunk) : Buffer.concat([this.buffer, chunk])
    const lines: DecodedLine[] = []
    let lastPayload: Buffer | undefined
    while (this.buffer.length >= HEADER_BYTES) {
      const size = this.buffer.readUInt32BE(4)
      if (this.buffer.length < HEADER_BYTES + size) break
      const type = this.buffer[0] ?? 1
      const payload = this.buffer.subarray(HEADER_BYTES, HEADER_BYTES + size)
      lastPayload = payload
      this.buffer = this.buffer.subarray(HEADER_BYTES + size)
      const stream = this.streams.get(type) ?? { pending: Buffer.alloc(0) }
      this.streams.set(type, stream)
      let data = stream.pending.length > 0 ? Buffer.concat([stream.pending, payload]) : payload
      for (let newline = data.indexOf(0x0a); newline >= 0; newline = data.indexOf(0x0a)) {
        const line = this.line(data.subarray(0, newline), stream, type)
        if (line) lines.push(line)
        data = data.subarray(newline + 1)
      }
      stream.pending = Buffer.from(data)
    }
    // Once per chunk: the frames of a chunk are in time order but for the other stream's.
    if (lastPayload) this.noteFrameTime(lastPayload)
    return lines
  }

  private noteFrameTime(payload: Buffer): void {
    const head = payload.subarray(0, 40).toString('latin1')
    const space = head.indexOf(' ')
    const stamp = space > 0 ? Date.parse(head.slice(0, space)) : Number.NaN
    if (Number.isNaN(stamp)) return
    const time = preciseTime(head.slice(0, space), stamp)
    if (!this.newestFrameTime || isBefore(this.newestFrameTime, time)) this.newestFrameTime = time
  }

  /** The stream has ended: unterminated last lines are lines too. */
  end(): DecodedLine[] {
    const lines: DecodedLine[] = []
    for (const [type, stream] of this.streams) {
      const line = stream.pending.length > 0 ? this.line(stream.pending, stream, type) : undefined
      if (line) lines.push(line)
      stream.pending = Buffer.alloc(0)
    }
    return lines
  }

  /** The line, numbered; undefined for a repeat of a line already sent (above). */
  private line(raw: Buffer, stream: StreamBuffer, type: number): DecodedLine | undefined {
    let text = raw.toString('utf8')
    if (text.endsWith('\r')) text = text.slice(0, -1)
    const space = text.indexOf(' ')
    const stamp = space > 0 ? Date.parse(text.slice(0, space)) : Number.NaN
    if (Number.isNaN(stamp)) return { seq: ++this.seq, ts: new Date().toISOString(), line: text }
    const time = preciseTime(text.slice(0, space), stamp)
    if (stream.last && isBefore(time, stream.last)) return undefined
    if (stream.last && !isBefore(stream.last, time) && text === stream.lastText) return undefined
    stream.last = time
    stream.lastText = text
    const line = text.slice(space + 1)
    return {
      seq: ++this.seq,
      ts: new Date(stamp).toISOString(),
      line,
      key: `${type}|${time[0]}.${time[1]}|${line.length}|${line.slice(0, 64)}`,
      time,
    }
  }
}

/** Decodes a whole (not followed) log response, numbering its lines after `base`. */
export function decodeLogFrames(raw: Uint8Array, base = 0): DecodedLine[] {
  const decoder = new LogFrameDecoder(base)
  return [...decoder.push(raw), ...decoder.end()]
}

/** afterSeq and since filter; tail then keeps the last lines of what is left. */
export function selectLines(lines: readonly LogLine[], query: LogQuery = {}): LogLine[] {
  const since = query.since === undefined ? undefined : Date.parse(query.since)
  const selected = lines.filter(
    (line) =>
      (query.afterSeq === undefined || line.seq > query.afterSeq) &&
      (since === undefined || Date.parse(line.ts) >= since),
  )
  return query.tail === undefined
    ? selected
    : selected.slice(Math.max(0, selected.length - query.tail))
}
