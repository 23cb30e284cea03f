import { describe, expect, it } from 'vitest'
import type { LogLine } from '../driver.js'
import { decodeLogFrames, LogFrameDecoder, selectLines } from './log-frames.js'

function frame(stream: 1 | 2, text: string): Buffer {
  const payload = Buffer.from(text)
  const header = Buffer.alloc(8)
  header[0] = stream
  header.writeUInt32BE(payload.length, 4)
  return Buffer.concat([header, payload])
}

/** The numbered line without what identifies it. */
const plain = ({ seq, ts, line }: LogLine): LogLine => ({ seq, ts, line })

const T1 = '2026-01-02T03:04:05.123456789Z'
const T2 = '2026-01-02T03:04:06.000000001Z'

describe('LogFrameDecoder', () => {
  it("knows the newest entry's time, also of an entry that ends no line (a progress bar)", () => {
    const decoder = new LogFrameDecoder()
    expect(decoder.newestFrameTime).toBeUndefined()
    expect(decoder.push(frame(1, `${T1} one\n`))).toHaveLength(1)
    expect(decoder.newestFrameTime).toEqual([Date.parse(T1), 456789])
    expect(decoder.push(frame(1, `${T2} 40%\r`))).toEqual([])
    expect(decoder.newestFrameTime).toEqual([Date.parse(T2), 1])
    // An older entry of the other stream keeps the newest.
    decoder.push(frame(2, `${T1} late\n`))
    expect(decoder.newestFrameTime).toEqual([Date.parse(T2), 1])
  })

  it('numbers stdout and stderr lines in stream order, with their Docker times', () => {
    const raw = Buffer.concat([
      frame(1, `${T1} one\n`),
      frame(2, `${T1} two\n`),
      frame(1, `${T2} three\n${T2} four\n`),
    ])
    expect(decodeLogFrames(raw).map(plain)).toEqual([
      { seq: 1, ts: '2026-01-02T03:04:05.123Z', line: 'one' },
      { seq: 2, ts: '2026-01-02T03:04:05.123Z', line: 'two' },
      { seq: 3, ts: '2026-01-02T03:04:06.000Z', line: 'three' },
      { seq: 4, ts: '2026-01-02T03:04:06.000Z', line: 'four' },
    ])
  })

  it('joins frames and lines split across chunks, and ends with the unterminated line', () => {
    const raw = Buffer.concat([frame(1, `${T1} hel`), frame(1, 'lo\r\n'), frame(1, `${T2} tail`)])
    const decoder = new LogFrameDecoder()
    const lines = []
    for (let i = 0; i < raw.length; i += 5) lines.push(...decoder.push(raw.subarray(i, i + 5)))
    expect(lines.map((l) => l.line)).toEqual(['hello'])
    expect(decoder.end().map(plain)).toEqual([
      { seq: 2, ts: '2026-01-02T03:04:06.000Z', line: 'tail' },
    ])
  })

  it('numbers after a base: where the container continues the workload log', () => {
    const raw = Buffer.concat([frame(1, `${T1} one\n`), frame(1, `${T2} two`)])
    expect(decodeLogFrames(raw, 41).map((l) => [l.seq, l.line])).toEqual([
      [42, 'one'],
      [43, 'two'],
    ])
  })

  it("drops the lines the engine sends again, stamped before their stream's last line", () => {
    const T0 = '2026-01-02T03:04:05.123456Z'
    const raw = Buffer.concat([
      frame(1, `${T1} one\n${T2} two\n`),
      // The engine's reader went back over a rotated file: one and two again.
      frame(1, `${T1} one\n${T2} two\n`),
      // The same time as the last line (lines read at once): kept.
      frame(1, `${T2} three\n`),
      // stderr's lines are stamped apart from stdout's: an earlier time there is not a repeat.
      frame(2, `${T0} err\n`),
      frame(1, '2026-01-02T03:04:06.0000001Z four\n'),
    ])
    expect(decodeLogFrames(raw).map((l) => [l.seq, l.line])).toEqual([
      [1, 'one'],
      [2, 'two'],
      [3, 'three'],
      [4, 'err'],
      [5, 'four'],
    ])
  })

  it('keeps a line without a timestamp whole', () => {
    expect(decodeLogFrames(frame(1, 'plain words\n'))[0]!.line).toBe('plain words')
  })
})

describe('selectLines', () => {
  const lines = [1, 2, 3, 4].map((seq) => ({
    seq,
    ts: `2026-01-02T03:04:0${seq}.000Z`,
    line: `l${seq}`,
  }))
  const seqs = (query: Parameters<typeof selectLines>[1]): number[] =>
    selectLines(lines, query).map((l) => l.seq)

  it('filters by afterSeq and since, then keeps the tail', () => {
    expect(seqs({})).toEqual([1, 2, 3, 4])
    expect(seqs({ afterSeq: 2 })).toEqual([3, 4])
    expect(seqs({ since: '2026-01-02T03:04:03.000Z' })).toEqual([3, 4])
    expect(seqs({ tail: 2 })).toEqual([3, 4])
    expect(seqs({ afterSeq: 1, tail: 1 })).toEqual([4])
    expect(seqs({ tail: 0 })).toEqual([])
  })
})
