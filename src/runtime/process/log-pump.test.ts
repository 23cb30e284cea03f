import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../../shared/clock.js'
import { formatLogEntry } from './log-lines.js'
import { LogPump, readLastLogEntry, readLogEntries, readLogEntriesFrom } from './log-pump.js'

let dir: string
let output: string
let logs: string
const clock = new ManualClock('2026-03-01T10:00:00.000Z')

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'podyard-pump-'))
  output = path.join(dir, 'output.log')
  logs = path.join(dir, 'logs.jsonl')
})

afterEach(() => rmSync(dir, { recursive: true, force: true }))

describe('LogPump', () => {
  it('copies complete lines with the time they were read and where output.log continues', async () => {
    writeFileSync(output, 'one\ntwo\npart')
    const pump = new LogPump(output, logs, clock)
    expect(await pump.pump(false)).toBe(2)
    clock.advance(1000)
    appendFileSync(output, 'ial\n')
    expect(await pump.pump(false)).toBe(1)
    expect(await readLogEntries(logs)).toEqual([
      { seq: 1, ts: '2026-03-01T10:00:00.000Z', line: 'one', end: 4 },
      { seq: 2, ts: '2026-03-01T10:00:00.000Z', line: 'two', end: 8 },
      { seq: 3, ts: '2026-03-01T10:00:01.000Z', line: 'partial', end: 16 },
    ])
  })

  it('takes the unterminated last line only when final', async () => {
    writeFileSync(output, 'done\nno newline')
    const pump = new LogPump(output, logs, clock)
    await pump.pump(false)
    expect((await readLogEntries(logs)).map((e) => e.line)).toEqual(['done'])
    await pump.pump(true)
    await pump.pump(true)
    expect((await readLogEntries(logs)).map((e) => e.line)).toEqual(['done', 'no newline'])
  })

  it('resumes numbering and position from logs.jsonl in a new instance (a restarted server)', async () => {
    writeFileSync(output, 'a\nb\n')
    await new LogPump(output, logs, clock).pump(false)
    appendFileSync(output, 'c\n')
    const successor = new LogPump(output, logs, clock)
    expect(await successor.pump(false)).toBe(1)
    expect((await readLogEntries(logs)).map((e) => [e.seq, e.line])).toEqual([
      [1, 'a'],
      [2, 'b'],
      [3, 'c'],
    ])
  })

  it('cuts off an entry half written by a crash before appending', async () => {
    writeFileSync(output, 'a\nb\n')
    writeFileSync(logs, `${formatLogEntry({ seq: 1, ts: 't', line: 'a', end: 2 })}{"seq":2,"ts`)
    await new LogPump(output, logs, clock).pump(false)
    expect((await readLogEntries(logs)).map((e) => [e.seq, e.line])).toEqual([
      [1, 'a'],
      [2, 'b'],
    ])
    expect(readFileSync(logs, 'utf8').endsWith('\n')).toBe(true)
  })

  it('does nothing before the workload has written anything', async () => {
    const pump = new LogPump(output, logs, clock)
    expect(await pump.pump(true)).toBe(0)
    expect(await readLogEntries(logs)).toEqual([])
  })

  it('serialises concurrent pumps so no line is taken twice', async () => {
    writeFileSync(output, Array.from({ length: 200 }, (_, i) => `line ${i}\n`).join(''))
    const pump = new LogPump(output, logs, clock)
    await Promise.all([pump.pump(false), pump.pump(false), pump.pump(true)])
    const entries = await readLogEntries(logs)
    expect(entries.map((e) => e.seq)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1))
  })
})

describe('reading logs.jsonl', () => {
  it('finds the last entry even when it is larger than the first probe', async () => {
    const big = 'é'.repeat(50_000)
    writeFileSync(
      logs,
      formatLogEntry({ seq: 1, ts: 't', line: 'x', end: 2 }) +
        formatLogEntry({ seq: 2, ts: 't', line: big, end: 100_003 }),
    )
    expect(await readLastLogEntry(logs)).toEqual({ seq: 2, ts: 't', line: big, end: 100_003 })
    expect(await readLastLogEntry(path.join(dir, 'missing'))).toBeUndefined()
  })

  it('reads entries after a byte offset, stopping before an incomplete line', async () => {
    const first = formatLogEntry({ seq: 1, ts: 't', line: 'a', end: 2 })
    writeFileSync(logs, `${first}${formatLogEntry({ seq: 2, ts: 't', line: 'b', end: 4 })}{"seq"`)
    const all = await readLogEntriesFrom(logs, 0)
    expect(all.entries.map((e) => e.seq)).toEqual([1, 2])
    const rest = await readLogEntriesFrom(logs, Buffer.byteLength(first))
    expect(rest.entries.map((e) => e.seq)).toEqual([2])
    expect(rest.next).toBe(all.next)
    expect(await readLogEntriesFrom(logs, all.next)).toEqual({ entries: [], next: all.next })
  })
})
