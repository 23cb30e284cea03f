import {
  appendFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../../shared/clock.js'
import { logBudgetOf, workloadLogFiles, type WorkloadLogFiles } from './log-files.js'
import { formatLogEntry } from './log-lines.js'
import { LogPump } from './log-pump.js'
import { readLogTail } from './log-tail.js'

let dir: string
let files: WorkloadLogFiles
const clock = new ManualClock('2026-03-01T10:00:00.000Z')
/** Large enough that the tests of plain pumping never meet it. */
const roomy = logBudgetOf(64 * 1024 * 1024)

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'podyard-pump-'))
  files = workloadLogFiles(dir)
})

afterEach(() => rmSync(dir, { recursive: true, force: true }))

const entries = () => readLogTail(files)
const lines = async () => (await entries()).map((e) => e.line)
const sizeOf = (file: string) => (existsSync(file) ? statSync(file).size : 0)
const logBytes = () =>
  sizeOf(files.output) + sizeOf(files.current) + sizeOf(files.rotated) + sizeOf(files.outputReset)

describe('LogPump', () => {
  it('copies complete lines with the time they were read and where output.log continues', async () => {
    writeFileSync(files.output, 'one\ntwo\npart')
    const pump = new LogPump(files, clock, roomy)
    expect(await pump.pump(false)).toBe(2)
    clock.advance(1000)
    appendFileSync(files.output, 'ial\n')
    expect(await pump.pump(false)).toBe(1)
    expect(await entries()).toEqual([
      { seq: 1, ts: '2026-03-01T10:00:00.000Z', line: 'one', end: 4 },
      { seq: 2, ts: '2026-03-01T10:00:00.000Z', line: 'two', end: 8 },
      { seq: 3, ts: '2026-03-01T10:00:01.000Z', line: 'partial', end: 16 },
    ])
  })

  it('takes the unterminated last line only when final', async () => {
    writeFileSync(files.output, 'done\nno newline')
    const pump = new LogPump(files, clock, roomy)
    await pump.pump(false)
    expect(await lines()).toEqual(['done'])
    await pump.pump(true)
    await pump.pump(true)
    expect(await lines()).toEqual(['done', 'no newline'])
  })

  it('resumes numbering and position from the log in a new instance (a restarted server)', async () => {
    writeFileSync(files.output, 'a\nb\n')
    await new LogPump(files, clock, roomy).pump(false)
    appendFileSync(files.output, 'c\n')
    const successor = new LogPump(files, clock, roomy)
    expect(await successor.pump(false)).toBe(1)
    expect((await entries()).map((e) => [e.seq, e.line])).toEqual([
      [1, 'a'],
      [2, 'b'],
      [3, 'c'],
    ])
  })

  it('cuts off an entry half written by a crash before appending', async () => {
    writeFileSync(files.output, 'a\nb\n')
    writeFileSync(
      files.current,
      `${formatLogEntry({ seq: 1, ts: 't', line: 'a', end: 2 })}{"seq":2,"ts`,
    )
    await new LogPump(files, clock, roomy).pump(false)
    expect((await entries()).map((e) => [e.seq, e.line])).toEqual([
      [1, 'a'],
      [2, 'b'],
    ])
    expect(readFileSync(files.current, 'utf8').endsWith('\n')).toBe(true)
  })

  it('does nothing before the workload has written anything', async () => {
    const pump = new LogPump(files, clock, roomy)
    expect(await pump.pump(true)).toBe(0)
    expect(await entries()).toEqual([])
  })

  it('serialises concurrent pumps so no line is taken twice', async () => {
    writeFileSync(files.output, Array.from({ length: 200 }, (_, i) => `line ${i}\n`).join(''))
    const pump = new LogPump(files, clock, roomy)
    await Promise.all([pump.pump(false), pump.pump(false), pump.pump(true)])
    expect((await entries()).map((e) => e.seq)).toEqual(
      Array.from({ length: 200 }, (_, i) => i + 1),
    )
  })
})

describe('LogPump within a budget', () => {
  // 40 000 bytes: logs.jsonl up to 15 000 bytes, output.log emptied once 5 000 bytes are read,
  // and cut to its newest 10 000 bytes past that.
  const budget = logBudgetOf(40_000)
  /** 201-byte lines: `0042 xxx...x\n`. */
  const wide = (from: number, count: number) =>
    Array.from(
      { length: count },
      (_, i) => `${String(from + i).padStart(4, '0')} ${'x'.repeat(195)}\n`,
    ).join('')

  it('empties output.log once it has read half its budget, and a restarted server starts it over', async () => {
    writeFileSync(files.output, wide(1, 30))
    expect(await new LogPump(files, clock, budget).pump(false)).toBe(30)
    expect(statSync(files.output).size).toBe(0)
    // More than was read before comes while no server runs: all of it is read, from the start.
    appendFileSync(files.output, wide(31, 40))
    expect(await new LogPump(files, clock, budget).pump(false)).toBe(40)
    expect((await lines()).map((line) => Number(line.slice(0, 4))).slice(-3)).toEqual([68, 69, 70])
    expect((await entries()).map((e) => e.seq).slice(-3)).toEqual([68, 69, 70])
  })

  it('leaves output.log as it is while a line is still being written', async () => {
    writeFileSync(files.output, `${wide(1, 30)}half a li`)
    await new LogPump(files, clock, budget).pump(false)
    expect(readFileSync(files.output, 'utf8').endsWith('half a li')).toBe(true)
  })

  it('past its budget keeps the newest output, says how much was left out, and resumes', async () => {
    writeFileSync(files.output, wide(1, 100))
    const pump = new LogPump(files, clock, budget)
    await pump.pump(false)
    expect(statSync(files.output).size).toBe(0)
    const kept = await lines()
    // The newest 10 000 bytes: the line cut at their start is left out whole.
    expect(kept[0]).toBe(
      `[podyard] ${100 * 201 - 10_000} bytes of output left out: written faster than the log keeps (its budget is 40000 bytes)`,
    )
    const numbers = kept.slice(1).map((line) => Number(line.slice(0, 4)))
    expect(numbers).toEqual(Array.from({ length: 49 }, (_, i) => 52 + i))
    appendFileSync(files.output, wide(101, 1))
    expect(await new LogPump(files, clock, budget).pump(false)).toBe(1)
    expect((await lines()).at(-1)!.slice(0, 4)).toBe('0101')
  })

  it('cuts a log written before the budget down to it at its first pump', async () => {
    writeFileSync(
      files.current,
      Array.from({ length: 2000 }, (_, i) =>
        formatLogEntry({ seq: i + 1, ts: 't', line: `old ${i + 1}`, end: (i + 1) * 201 }),
      ).join(''),
    )
    writeFileSync(files.output, wide(1, 2000) + wide(2001, 2))
    expect(logBytes()).toBeGreaterThan(400_000)
    await new LogPump(files, clock, budget).pump(false)
    expect(logBytes()).toBeLessThanOrEqual(40_000)
    const kept = await entries()
    expect(kept.at(-1)!.seq).toBe(2002)
    expect(kept.at(-1)!.line.slice(0, 4)).toBe('2002')
    expect(kept[0]!.line).toMatch(/^old \d+$/)
  })

  it('keeps a flood within the budget, with the newest lines', async () => {
    const pump = new LogPump(files, clock, budget)
    for (let round = 0; round < 50; round++) {
      appendFileSync(files.output, wide(round * 30 + 1, 30))
      await pump.pump(false)
      expect(logBytes()).toBeLessThanOrEqual(40_000)
    }
    const kept = (await lines()).map((line) => Number(line.slice(0, 4)))
    expect(kept.at(-1)).toBe(1500)
    // Consecutive: nothing is lost between the lines kept.
    expect(kept).toEqual(Array.from({ length: kept.length }, (_, i) => 1500 - kept.length + 1 + i))
  })
})
