import { createReadStream, createWriteStream } from 'node:fs'
import { appendFile, open, rename, rm, stat } from 'node:fs/promises'
import { pipeline } from 'node:stream/promises'

/** Bytes read at a time looking for where a line begins. */
const PROBE_BYTES = 64 * 1024

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === 'ENOENT'
}

/**
 * Appends lines to a log kept in two files, `current` and `rotated`, each at most
 * `maxFileBytes`: when the next line would take `current` past it, `current` becomes `rotated`
 * (the older `rotated` goes) and a new `current` begins. The two files hold the newest lines;
 * a writer faster than the budget loses the oldest ones. A line larger than `maxFileBytes` is
 * written alone in a file, the one way a file exceeds it.
 *
 * The only writer of its files (the pump is serialised, and only the active driver pumps): it
 * keeps the size of `current` in memory after reading it once.
 */
export class RotatingLogWriter {
  private size: number | undefined

  constructor(
    private readonly current: string,
    private readonly rotated: string,
    private readonly maxFileBytes: number,
  ) {}

  /** Appends `lines`, each ending in a newline, in order. */
  async append(lines: readonly string[]): Promise<void> {
    if (lines.length === 0) return
    try {
      await this.appendNow(lines)
    } catch (error) {
      // Part of it may be written: read the size again next time.
      this.size = undefined
      throw error
    }
  }

  private async appendNow(lines: readonly string[]): Promise<void> {
    let size = this.size ?? (await this.currentSize())
    // The lines of each file, counting files begun by this call: the first is `current` as it
    // is. Only the last two files survive the call, so lines that would land in an earlier
    // one are never written (a flood costs at most two files' writing, not its whole size).
    const files: string[][] = [[]]
    for (const line of lines) {
      const bytes = Buffer.byteLength(line)
      if (size > 0 && size + bytes > this.maxFileBytes) {
        files.push([])
        size = 0
      }
      size += bytes
      files.at(-1)!.push(line)
    }
    const first = Math.max(0, files.length - 2)
    for (let f = first; f < files.length; f++) {
      if (f > 0) await this.rotate()
      if (files[f]!.length > 0) await appendFile(this.current, files[f]!.join(''))
    }
    this.size = size
  }

  /**
   * Cuts each file down to its newest `maxFileBytes` (from the first line that begins there):
   * for files written before there was a budget, or under a larger one. Copied a chunk at a
   * time into a new file that then takes the old one's place.
   */
  async trim(): Promise<void> {
    this.size = undefined
    for (const file of [this.current, this.rotated]) await this.trimFile(file)
  }

  private async trimFile(file: string): Promise<void> {
    const size = await stat(file).then(
      (info) => info.size,
      (error: unknown) => {
        if (isMissing(error)) return 0
        throw error
      },
    )
    if (size <= this.maxFileBytes) return
    const start = await lineStartFrom(file, size - this.maxFileBytes, size)
    const aside = `${file}.trim`
    try {
      await pipeline(createReadStream(file, { start }), createWriteStream(aside))
      await rename(aside, file)
    } finally {
      await rm(aside, { force: true })
    }
  }

  private async currentSize(): Promise<number> {
    try {
      return (await stat(this.current)).size
    } catch (error) {
      if (isMissing(error)) return 0
      throw error
    }
  }

  private async rotate(): Promise<void> {
    try {
      await rename(this.current, this.rotated)
    } catch (error) {
      if (!isMissing(error)) throw error
    }
  }
}

/** Where the first line at or after `from` begins (`size` when none does). */
async function lineStartFrom(file: string, from: number, size: number): Promise<number> {
  const handle = await open(file, 'r')
  try {
    const buffer = Buffer.alloc(PROBE_BYTES)
    // A line begins at `from` when the byte before it ends one.
    for (let position = Math.max(0, from - 1); position < size; position += buffer.length) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, position)
      if (bytesRead === 0) break
      const at = buffer.subarray(0, bytesRead).indexOf(0x0a)
      if (at >= 0) return position + at + 1
    }
    return size
  } finally {
    await handle.close()
  }
}
