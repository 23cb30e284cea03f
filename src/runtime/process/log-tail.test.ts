import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { open, type FileHandle } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { formatLogEntry, type LogEntry } from './log-lines.js'
import { entriesBackward, readLastLogEntry, readLogTail } from './log-tail.js'

let dir: string
let files: { current: string; rotated: string }

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'podyard-tail-'))
  files = { current: path.join(dir, 'logs.jsonl'), rotated: path.join(dir, 'logs.1.jsonl') }
})

afterEach(() => rmSync(dir, { recursive: true, force: true }))

const entry = (seq: number, line = `line ${seq}`): LogEntry => ({
  seq,
  ts: new Date(Date.UTC(2026, 0, 1, 0, 0, seq)).toISOString(),
  line,
  end: seq * 10,
})
const text = (seqs: number[]) => seqs.map((seq) => formatLogEntry(entry(seq))).join('')
const range = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i)

async function backward(file: string, chunkBytes: number) {
  const handle = await open(file, 'r')
  try {
    const found = []
    for await (const placed of entriesBackward(handle, chunkBytes)) found.push(placed)
    return found
  } finally {
    await handle.close()
  }
}

describe('entriesBackward', () => {
  it('finds every line whatever the chunk size, with where each ends', async () => {
    const content = text(range(1, 30))
    writeFileSync(files.current, content)
    const ends = range(1, 30).map((seq) => Buffer.byteLength(text(range(1, seq))))
    // Chunks smaller than a line, a line and a bit, and larger than the file: line boundaries
    // fall anywhere in a chunk, and on its edges.
    for (const chunkBytes of [1, 7, 64, 65, 100, 4096, 1 << 20]) {
      const found = await backward(files.current, chunkBytes)
      expect(found.map((p) => p.entry.seq)).toEqual(range(1, 30).reverse())
      expect(found.map((p) => p.end)).toEqual([...ends].reverse())
    }
  })

  it('puts together a line longer than the chunk', async () => {
    const long = 'é'.repeat(10_000)
    writeFileSync(
      files.current,
      formatLogEntry(entry(1)) + formatLogEntry(entry(2, long)) + formatLogEntry(entry(3)),
    )
    const found = await backward(files.current, 256)
    expect(found.map((p) => [p.entry.seq, p.entry.line.length])).toEqual([
      [3, 'line 3'.length],
      [2, 10_000],
      [1, 'line 1'.length],
    ])
  })

  it('leaves out a half-written last line and unreadable lines', async () => {
    writeFileSync(files.current, `${text([1])}not json\n${text([3])}{"seq":4,"ts":"2026-`)
    for (const chunkBytes of [3, 16, 4096]) {
      const found = await backward(files.current, chunkBytes)
      expect(found.map((p) => p.entry.seq)).toEqual([3, 1])
    }
    writeFileSync(files.current, '{"seq":1,"ts"')
    expect(await backward(files.current, 4)).toEqual([])
    writeFileSync(files.current, '')
    expect(await backward(files.current, 4)).toEqual([])
  })
})

describe('readLogTail', () => {
  it('takes the last lines across the rotation boundary, oldest first', async () => {
    writeFileSync(files.rotated, text(range(1, 10)))
    writeFileSync(files.current, text(range(11, 13)))
    const seqs = async (query: Parameters<typeof readLogTail>[1]) =>
      (await readLogTail(files, query, 32)).map((e) => e.seq)
    expect(await seqs({ tail: 2 })).toEqual([12, 13])
    expect(await seqs({ tail: 5 })).toEqual([9, 10, 11, 12, 13])
    expect(await seqs({})).toEqual(range(1, 13))
    expect(await seqs({ tail: 0 })).toEqual([])
    expect(await seqs({ afterSeq: 8 })).toEqual(range(9, 13))
    expect(await seqs({ afterSeq: 8, tail: 3 })).toEqual([11, 12, 13])
    expect(await seqs({ since: entry(12).ts })).toEqual([12, 13])
    expect(await seqs({ since: entry(2).ts, afterSeq: 4, tail: 30 })).toEqual(range(5, 13))
    expect(await seqs({ since: 'not a time', tail: 3 })).toEqual([11, 12, 13])
  })

  it('reads no further back than it needs: the tail of a large log costs a few chunks', async () => {
    writeFileSync(files.current, `${'x'.repeat(1_000_000)}\n${text(range(1, 5))}`)
    expect((await readLogTail(files, { tail: 2 }, 64)).map((e) => e.seq)).toEqual([4, 5])
    const handle = await open(files.current, 'r')
    let bytesRead = 0
    const counting = {
      stat: () => handle.stat(),
      read: (buffer: Buffer, offset: number, length: number, position: number) => {
        bytesRead += length
        return handle.read(buffer, offset, length, position)
      },
    } as unknown as FileHandle
    try {
      const seqs = []
      for await (const { entry } of entriesBackward(counting, 64)) {
        seqs.push(entry.seq)
        if (seqs.length === 2) break
      }
      expect(seqs).toEqual([5, 4])
      expect(bytesRead).toBeLessThanOrEqual(4 * 64)
    } finally {
      await handle.close()
    }
  })

  it('takes a file seen twice during a rotation once, and a log without files as empty', async () => {
    writeFileSync(files.current, text(range(5, 8)))
    writeFileSync(files.rotated, text(range(5, 8)))
    expect((await readLogTail(files, {}, 16)).map((e) => e.seq)).toEqual(range(5, 8))
    rmSync(files.current)
    rmSync(files.rotated)
    expect(await readLogTail(files, { tail: 3 })).toEqual([])
    expect(await readLastLogEntry(files)).toBeUndefined()
  })

  it('finds the last entry in the rotated file when the current one is still empty', async () => {
    writeFileSync(files.rotated, text(range(1, 4)))
    writeFileSync(files.current, '')
    expect(await readLastLogEntry(files)).toEqual(entry(4))
  })
})
