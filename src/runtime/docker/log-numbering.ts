import type { LogLine } from '../driver.js'
import { isBefore, type DecodedLine } from './log-frames.js'

/**
 * Numbers that stay with their lines when Docker rotates a container's log. The engine's logs
 * API sends the lines it still keeps, from the oldest; once it has deleted its oldest json-file
 * file, counting from there would give every line a lower number than before, and a client
 * resuming after the number it saw last would miss as many lines as were deleted.
 *
 * So the driver remembers, per container, where numbers fell: the line of every ANCHOR_EVERY-th
 * number and the newest line it numbered (ContainerLogNumbers). A pass over the retained log
 * holds its lines back (at most MAX_PENDING) until one of them is such an anchor, and numbers
 * the pass from it. When the oldest line kept is newer than every line the driver numbered,
 * all it knew was deleted: the lines are numbered on after the newest one it numbered, one
 * number left for the note that says lines were lost. What the driver remembers is kept in the
 * store (log-numbers-store.ts), so that every replica, and a restarted server, numbers alike.
 */

export const ANCHOR_EVERY = 1024
/** The most lines a pass holds back while it looks for an anchor. */
const MAX_PENDING = 4 * ANCHOR_EVERY

/** Where a pass's first line fell, once it is numbered. */
export interface LogStart {
  /** The number of the oldest line kept. */
  firstSeq: number
  ts: string
  /** Whether the numbers before firstSeq were all counted (else some were never read). */
  counted: boolean
}

/** ContainerLogNumbers as the store keeps it (log-numbers-store.ts). */
export interface LogNumbersJson {
  anchors: Array<[string, number]>
  last?: { seq: number; key: string; time: [number, number] }
}

/**
 * What the driver remembers of one container's numbering: in each replica's memory, and shared
 * through the store (log-numbers-store.ts).
 */
export class ContainerLogNumbers {
  readonly anchors = new Map<string, number>()
  /** The newest line numbered. */
  last: { seq: number; key: string; time: [number, number] } | undefined
  /** Called when an anchor is added (the store keeps it). */
  onAnchor: (() => void) | undefined

  /**
   * Takes in what another replica (or an earlier start) kept: its anchors, and its newest line
   * when it numbered further. Numbers agree across replicas, so nothing kept here is replaced.
   */
  takeIn(json: LogNumbersJson): void {
    for (const [key, seq] of json.anchors) if (!this.anchors.has(key)) this.anchors.set(key, seq)
    if (json.last && (!this.last || json.last.seq > this.last.seq)) this.last = json.last
  }

  toJson(): LogNumbersJson {
    return { anchors: [...this.anchors], ...(this.last ? { last: this.last } : {}) }
  }

  record(line: DecodedLine): void {
    if (!line.key || !line.time) return
    if (line.seq % ANCHOR_EVERY === 0) {
      this.anchors.set(line.key, line.seq)
      this.onAnchor?.()
    }
    if (!this.last || line.seq > this.last.seq) {
      this.last = { seq: line.seq, key: line.key, time: line.time }
    }
  }

  /** The lines before `firstSeq` are gone: their anchors go too. */
  forgetBefore(firstSeq: number): void {
    for (const [key, seq] of this.anchors) if (seq < firstSeq) this.anchors.delete(key)
  }

  seqOf(key: string | undefined): number | undefined {
    if (key === undefined) return undefined
    return this.last?.key === key ? this.last.seq : this.anchors.get(key)
  }
}

/** One pass over a container's retained log from its oldest line: decoded lines in, numbered out. */
export class LogNumbering {
  private offset: number | undefined
  private readonly pending: DecodedLine[] = []
  /** Where the first line fell; undefined until it is numbered. */
  start: LogStart | undefined

  /** @param base the number before the container's first line (its log-base label) */
  constructor(
    private readonly numbers: ContainerLogNumbers,
    private readonly base: number,
  ) {}

  /** Lines of the pass (numbered from 1 by the decoder, in order); the lines numbered now. */
  push(lines: readonly DecodedLine[]): LogLine[] {
    if (this.offset === undefined) {
      this.pending.push(...lines)
      this.resolve(false)
      if (this.offset === undefined) return []
      return this.number(this.pending.splice(0))
    }
    return this.number(lines)
  }

  /** The pass ended: what it held back is numbered as best known. */
  end(): LogLine[] {
    if (this.offset === undefined && this.pending.length > 0) this.resolve(true)
    return this.number(this.pending.splice(0))
  }

  private resolve(ended: boolean): void {
    const first = this.pending[0]
    if (!first) return
    const last = this.numbers.last
    if (!last || !first.time) return this.settle(first, this.base, true)
    if (isBefore(last.time, first.time)) {
      // Everything the driver numbered was deleted: on after the newest, one number apart.
      return this.settle(first, last.seq + 1, false)
    }
    for (const line of this.pending) {
      const seq = this.numbers.seqOf(line.key)
      if (seq !== undefined) return this.settle(first, seq - line.seq, true)
    }
    if (ended || this.pending.length >= MAX_PENDING) this.settle(first, last.seq + 1, false)
  }

  private settle(first: DecodedLine, offset: number, counted: boolean): void {
    this.offset = offset
    const firstSeq = first.seq + offset
    this.start = { firstSeq, ts: first.ts, counted }
    this.numbers.forgetBefore(firstSeq)
  }

  private number(lines: readonly DecodedLine[]): LogLine[] {
    const offset = this.offset ?? this.base
    return lines.map((line) => {
      const numbered: DecodedLine = { ...line, seq: line.seq + offset }
      this.numbers.record(numbered)
      return { seq: numbered.seq, ts: line.ts, line: line.line }
    })
  }
}

/**
 * The note a reader after `afterSeq` gets where lines it has not seen were deleted before the
 * oldest line kept (`start`), or undefined when none were: a line of its own, numbered just
 * before that oldest line.
 */
export function lostLinesNote(
  start: LogStart,
  base: number,
  afterSeq: number,
): LogLine | undefined {
  const lost = start.firstSeq - 1 - Math.max(base, afterSeq)
  if (lost <= 0) return undefined
  const line = start.counted
    ? `[podyard] ${lost} log line${lost === 1 ? ' was' : 's were'} lost here: Docker deleted ` +
      "them with its oldest log file (the log's budget keeps the newest lines)"
    : "[podyard] log lines were lost here: Docker deleted them with its oldest log file (the log's " +
      'budget keeps the newest lines) before this server read them; how many is not known'
  return { seq: start.firstSeq - 1, ts: start.ts, line }
}
