import { appendFileSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { entriesForward, LogFollower } from './log-follower.js'
import { formatLogEntry } from './log-lines.js'

let dir: string
let files: { current: string; rotated: string }

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'podyard-follow-'))
  files = { current: path.join(dir, 'logs.jsonl'), rotated: path.join(dir, 'logs.1.jsonl') }
})

afterEach(() => rmSync(dir, { recursive: true, force: true }))

const text = (from: number, to: number, line = (seq: number) => `line ${seq}`) =>
  Array.from({ length: to - from + 1 }, (_, i) =>
    formatLogEntry({ seq: from + i, ts: 't', line: line(from + i), end: 0 }),
  ).join('')
const range = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i)

/** Reads until the end of the log, a batch at a time. */
async function seqsOf(follower: LogFollower): Promise<number[]> {
  const seqs = []
  for (let atEnd = false; !atEnd;) {
    const batch = await follower.read()
    seqs.push(...batch.entries.map((e) => e.seq))
    atEnd = batch.atEnd
  }
  return seqs
}

/** What the writer does at a rotation: current becomes rotated, a new current begins. */
function rotate(next: string): void {
  renameSync(files.current, files.rotated)
  writeFileSync(files.current, next)
}

describe('entriesForward', () => {
  it('reads from an offset in chunks, lines longer than a chunk whole, not a half-written end', async () => {
    const long = 'y'.repeat(5000)
    writeFileSync(files.current, `${text(1, 3)}${text(4, 4, () => long)}${text(5, 6)}{"seq":7`)
    const handle = await open(files.current, 'r')
    try {
      const found = []
      for await (const placed of entriesForward(handle, 0, 16)) found.push(placed)
      expect(found.map((p) => p.entry.seq)).toEqual(range(1, 6))
      expect(found[3]!.entry.line).toBe(long)
      const fromThird = []
      for await (const placed of entriesForward(handle, found[1]!.end, 16)) fromThird.push(placed)
      expect(fromThird.map((p) => p.entry.seq)).toEqual(range(3, 6))
      const atEnd = []
      for await (const placed of entriesForward(handle, found[5]!.end, 16)) atEnd.push(placed)
      expect(atEnd).toEqual([])
    } finally {
      await handle.close()
    }
  })
})

describe('LogFollower', () => {
  it('delivers what comes after afterSeq, then each new entry once', async () => {
    writeFileSync(files.current, text(1, 5))
    const follower = new LogFollower(files, 3, 32)
    expect(await seqsOf(follower)).toEqual([4, 5])
    expect(await seqsOf(follower)).toEqual([])
    appendFileSync(files.current, `${text(6, 7)}{"seq":8,"ts"`)
    expect(await seqsOf(follower)).toEqual([6, 7])
    expect(follower.lastSeq).toBe(7)
  })

  it('finds where to begin from the end when afterSeq is in the rotated file', async () => {
    writeFileSync(files.rotated, text(1, 10))
    writeFileSync(files.current, text(11, 12))
    expect(await seqsOf(new LogFollower(files, 8, 32))).toEqual(range(9, 12))
    expect(await seqsOf(new LogFollower(files, 0, 32))).toEqual(range(1, 12))
    expect(await seqsOf(new LogFollower(files, 12, 32))).toEqual([])
  })

  it('goes on across a rotation: the rest of its file, then the new one', async () => {
    writeFileSync(files.current, text(1, 4))
    const follower = new LogFollower(files, 0, 32)
    expect(await seqsOf(follower)).toEqual(range(1, 4))
    appendFileSync(files.current, text(5, 6))
    rotate(text(7, 8))
    expect(await seqsOf(follower)).toEqual(range(5, 8))
    appendFileSync(files.current, text(9, 9))
    expect(await seqsOf(follower)).toEqual([9])
  })

  it('left behind by two rotations, goes on with the oldest file there is', async () => {
    writeFileSync(files.current, text(1, 2))
    const follower = new LogFollower(files, 0, 32)
    expect(await seqsOf(follower)).toEqual([1, 2])
    appendFileSync(files.current, text(3, 4))
    rotate(text(5, 6))
    rotate(text(7, 8))
    // 3 and 4 went with the first rotated file.
    expect(await seqsOf(follower)).toEqual(range(5, 8))
  })

  it('reads about a chunk at a time', async () => {
    writeFileSync(files.current, text(1, 100))
    const follower = new LogFollower(files, 0, 256)
    const first = await follower.read()
    expect(first.atEnd).toBe(false)
    expect(first.entries.length).toBeGreaterThan(0)
    expect(first.entries.length).toBeLessThan(10)
    expect(first.entries.map((e) => e.seq)).toEqual(range(1, first.entries.length))
    expect(await seqsOf(follower)).toEqual(range(first.entries.length + 1, 100))
  })

  it('waits for a log that does not exist yet', async () => {
    const follower = new LogFollower(files, 0, 32)
    expect(await seqsOf(follower)).toEqual([])
    writeFileSync(files.current, text(1, 2))
    expect(await seqsOf(follower)).toEqual([1, 2])
  })
})
