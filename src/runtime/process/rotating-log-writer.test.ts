import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { RotatingLogWriter } from './rotating-log-writer.js'

let dir: string
let current: string
let rotated: string

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'podyard-rotate-'))
  current = path.join(dir, 'logs.jsonl')
  rotated = path.join(dir, 'logs.1.jsonl')
})

afterEach(() => rmSync(dir, { recursive: true, force: true }))

/** Ten-byte lines: `line 0001\n`. */
const lines = (from: number, count: number) =>
  Array.from({ length: count }, (_, i) => `line ${String(from + i).padStart(4, '0')}\n`)
const read = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8') : '')

describe('RotatingLogWriter', () => {
  it('appends until the next line would pass the size, then starts a new file', async () => {
    const writer = new RotatingLogWriter(current, rotated, 35)
    await writer.append(lines(1, 3))
    expect(read(current)).toBe(lines(1, 3).join(''))
    expect(existsSync(rotated)).toBe(false)
    await writer.append(lines(4, 1))
    // 40 bytes would pass 35: line 4 begins a new file, the three before are the rotated one.
    expect(read(rotated)).toBe(lines(1, 3).join(''))
    expect(read(current)).toBe(lines(4, 1).join(''))
    await writer.append(lines(5, 3))
    expect(read(rotated)).toBe(lines(4, 3).join(''))
    expect(read(current)).toBe(lines(7, 1).join(''))
  })

  it('keeps the newest lines of a flood within two files', async () => {
    const writer = new RotatingLogWriter(current, rotated, 100)
    await writer.append(lines(1, 5))
    await writer.append(lines(6, 1000))
    // Ten lines a file (1..10, 11..20, ...): the last one holds 1001..1005, the one before it
    // 991..1000; the 99 files before those were never written.
    expect(read(current)).toBe(lines(1001, 5).join(''))
    expect(read(rotated)).toBe(lines(991, 10).join(''))
    expect(statSync(current).size + statSync(rotated).size).toBeLessThanOrEqual(200)
  })

  it('continues a file it did not write (a restarted server) at its size', async () => {
    writeFileSync(current, lines(1, 2).join(''))
    const writer = new RotatingLogWriter(current, rotated, 30)
    await writer.append(lines(3, 2))
    expect(read(rotated)).toBe(lines(1, 3).join(''))
    expect(read(current)).toBe(lines(4, 1).join(''))
  })

  it('writes a line larger than a file alone in one', async () => {
    const writer = new RotatingLogWriter(current, rotated, 25)
    const big = `${'x'.repeat(59)}\n`
    await writer.append([...lines(1, 1), big, ...lines(2, 1)])
    expect(read(rotated)).toBe(big)
    expect(read(current)).toBe(lines(2, 1).join(''))
  })

  it('cuts files written before the budget down to their newest whole lines', async () => {
    writeFileSync(rotated, lines(1, 100).join(''))
    writeFileSync(current, lines(101, 3).join(''))
    const writer = new RotatingLogWriter(current, rotated, 35)
    await writer.trim()
    expect(read(rotated)).toBe(lines(98, 3).join(''))
    expect(read(current)).toBe(lines(101, 3).join(''))
    writeFileSync(current, lines(101, 50).join(''))
    await writer.trim()
    expect(read(current)).toBe(lines(148, 3).join(''))
    await writer.append(lines(151, 1))
    expect(read(current)).toBe(lines(151, 1).join(''))
    expect(read(rotated)).toBe(lines(148, 3).join(''))
  })

  it('appends nothing for no lines, and makes no file', async () => {
    await new RotatingLogWriter(current, rotated, 25).append([])
    expect(existsSync(current)).toBe(false)
  })
})
