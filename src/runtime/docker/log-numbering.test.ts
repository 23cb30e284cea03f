import { describe, expect, it } from 'vitest'
import type { DecodedLine } from './log-frames.js'
import { ContainerLogNumbers, LogNumbering, lostLinesNote } from './log-numbering.js'

/** Lines `from`..`to` of a container's output as a pass decodes them: positions from 1. */
function retained(from: number, to: number): DecodedLine[] {
  return Array.from({ length: to - from + 1 }, (_, k) => ({
    seq: k + 1,
    ts: new Date(1_800_000_000_000 + from + k).toISOString(),
    line: `line ${from + k}`,
    key: `1|${from + k}`,
    time: [1_800_000_000_000 + from + k, 0] as [number, number],
  }))
}

/** One pass over `lines`, fed in chunks of 100 as a stream would. */
function pass(numbers: ContainerLogNumbers, base: number, lines: DecodedLine[]) {
  const numbering = new LogNumbering(numbers, base)
  const out = []
  for (let i = 0; i < lines.length; i += 100) out.push(...numbering.push(lines.slice(i, i + 100)))
  out.push(...numbering.end())
  return { lines: out, start: numbering.start! }
}

const BASE = 40

describe('LogNumbering', () => {
  it('numbers from the base when nothing is known yet', () => {
    const { lines, start } = pass(new ContainerLogNumbers(), BASE, retained(1, 3000))
    expect(lines[0]).toMatchObject({ seq: BASE + 1, line: 'line 1' })
    expect(lines.at(-1)).toMatchObject({ seq: BASE + 3000, line: 'line 3000' })
    expect(start).toMatchObject({ firstSeq: BASE + 1, counted: true })
    expect(lostLinesNote(start, BASE, BASE)).toBeUndefined()
  })

  it('keeps every line its number when the oldest lines are deleted', () => {
    const numbers = new ContainerLogNumbers()
    pass(numbers, BASE, retained(1, 3000))
    // Docker deleted its older file (lines 1..1500) and went on to 4000.
    const { lines, start } = pass(numbers, BASE, retained(1501, 4000))
    expect(lines.map((l) => l.seq - BASE)).toEqual(Array.from({ length: 2500 }, (_, k) => 1501 + k))
    expect(lines.every((l) => l.line === `line ${l.seq - BASE}`)).toBe(true)
    expect(start).toMatchObject({ firstSeq: BASE + 1501, counted: true })
    // A reader who saw line 1000 is told of the 500 it will never see; one at 1600, of none.
    expect(lostLinesNote(start, BASE, BASE + 1000)).toMatchObject({
      seq: BASE + 1500,
      line: expect.stringMatching(/^\[podyard\] 500 log lines were lost here/),
    })
    expect(lostLinesNote(start, BASE, BASE + 1600)).toBeUndefined()
  })

  it('goes on after the newest line known when everything known was deleted', () => {
    const numbers = new ContainerLogNumbers()
    pass(numbers, BASE, retained(1, 500))
    const { lines, start } = pass(numbers, BASE, retained(2000, 2100))
    // One number left for the note; how many were lost is not known.
    expect(lines[0]).toMatchObject({ seq: BASE + 502, line: 'line 2000' })
    expect(start.counted).toBe(false)
    expect(lostLinesNote(start, BASE, BASE + 500)).toMatchObject({
      seq: BASE + 501,
      line: expect.stringMatching(/how many is not known$/),
    })
    // Known from then on: a later pass numbers the same lines the same.
    const again = pass(numbers, BASE, retained(2000, 2200))
    expect(again.lines[0]).toMatchObject({ seq: BASE + 502, line: 'line 2000' })
    expect(again.lines.at(-1)).toMatchObject({ seq: BASE + 702, line: 'line 2200' })
  })
})
