import { describe, expect, it } from 'vitest'
import type { LogQuery } from '../driver.js'
import {
  formatLogEntry,
  logEntryMatches,
  logFilterOf,
  logLineOf,
  MAX_LOG_LINE_BYTES,
  parseLogEntry,
  splitLogChunk,
  type LogEntry,
} from './log-lines.js'

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8')

describe('splitLogChunk', () => {
  it('splits complete lines and leaves an unterminated tail for the next read', () => {
    expect(splitLogChunk(bytes('one\ntwo\nthr'), false)).toEqual({
      lines: [
        { text: 'one', end: 4 },
        { text: 'two', end: 8 },
      ],
      consumed: 8,
    })
    expect(splitLogChunk(bytes('partial'), false)).toEqual({ lines: [], consumed: 0 })
  })

  it('takes the unterminated tail as a line when final', () => {
    expect(splitLogChunk(bytes('one\nthr'), true)).toEqual({
      lines: [
        { text: 'one', end: 4 },
        { text: 'thr', end: 7 },
      ],
      consumed: 7,
    })
    expect(splitLogChunk(bytes('one\n'), true).lines).toHaveLength(1)
    expect(splitLogChunk(bytes(''), true)).toEqual({ lines: [], consumed: 0 })
  })

  it('takes at most maxLines lines, consumed ending after the last of them', () => {
    expect(splitLogChunk(bytes('one\ntwo\nthree\n'), true, MAX_LOG_LINE_BYTES, 2)).toEqual({
      lines: [
        { text: 'one', end: 4 },
        { text: 'two', end: 8 },
      ],
      consumed: 8,
    })
  })

  it('keeps empty lines and drops the CR of CRLF', () => {
    expect(splitLogChunk(bytes('a\r\n\n\r\nb\n'), false).lines.map((l) => l.text)).toEqual([
      'a',
      '',
      '',
      'b',
    ])
  })

  it('cuts lines longer than the limit into pieces, even without a newline yet', () => {
    const split = splitLogChunk(bytes('abcdefghij\nxyz'), false, 4)
    expect(split.lines.map((l) => l.text)).toEqual(['abcd', 'efgh', 'ij'])
    expect(split.consumed).toBe(11)
    const unterminated = splitLogChunk(bytes('abcdefghij'), false, 4)
    expect(unterminated.lines.map((l) => l.text)).toEqual(['abcd', 'efgh'])
    expect(unterminated.consumed).toBe(8)
    expect(splitLogChunk(bytes('abcd\n'), false, 4).lines.map((l) => l.text)).toEqual(['abcd'])
  })

  it('never cuts inside a UTF-8 character', () => {
    // 'é' is two bytes: a cut after byte 4 would fall between them.
    const split = splitLogChunk(bytes('abcé123\n'), false, 4)
    expect(split.lines.map((l) => l.text)).toEqual(['abc', 'é12', '3'])
  })

  it('defaults to 64 KiB lines', () => {
    const long = 'x'.repeat(MAX_LOG_LINE_BYTES + 10)
    const split = splitLogChunk(bytes(`${long}\n`), false)
    expect(split.lines.map((l) => l.text.length)).toEqual([MAX_LOG_LINE_BYTES, 10])
    expect(split.lines[1]!.end).toBe(MAX_LOG_LINE_BYTES + 11)
  })
})

const entry = (seq: number, ts: string, line = `line ${seq}`): LogEntry => ({
  seq,
  ts,
  line,
  end: seq * 10,
})

describe('log entries', () => {
  it('round-trip through a logs.jsonl line; anything else is no entry', () => {
    const text = formatLogEntry(entry(1, '2026-01-01T00:00:00.000Z', 'with "quotes"\tand tab'))
    expect(text.endsWith('\n')).toBe(true)
    expect(parseLogEntry(text.trimEnd())).toEqual(
      entry(1, '2026-01-01T00:00:00.000Z', 'with "quotes"\tand tab'),
    )
    for (const bad of ['not json', '{"seq":"1"}', '{"seq":3,"ts', 'null', '7']) {
      expect(parseLogEntry(bad)).toBeUndefined()
    }
  })
})

describe('logEntryMatches', () => {
  const entries = [1, 2, 3, 4, 5].map((seq) =>
    entry(seq, new Date(Date.UTC(2026, 0, 1, 0, 0, seq)).toISOString()),
  )
  const seqs = (query: LogQuery): number[] =>
    entries.filter((e) => logEntryMatches(e, logFilterOf(query))).map((e) => e.seq)

  it('keeps everything without a query', () => {
    expect(seqs({})).toEqual([1, 2, 3, 4, 5])
  })

  it('filters by afterSeq and since (a since that is not a time keeps everything)', () => {
    expect(seqs({ afterSeq: 3 })).toEqual([4, 5])
    expect(seqs({ since: '2026-01-01T00:00:04.000Z' })).toEqual([4, 5])
    expect(seqs({ since: '2026-01-01T00:00:02.000Z', afterSeq: 2 })).toEqual([3, 4, 5])
    expect(seqs({ since: 'not a time' })).toEqual([1, 2, 3, 4, 5])
  })

  it('gives LogLines without the offset', () => {
    expect(logLineOf(entries[0]!)).toEqual({
      seq: 1,
      ts: '2026-01-01T00:00:01.000Z',
      line: 'line 1',
    })
  })
})
