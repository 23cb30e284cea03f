import { constants, close, fstat, open, read, type Stats } from 'node:fs'
import type { Logger } from 'pino'
import { parseXidEvents, type XidEvent } from './nvidia-health-sources.js'

/** How often the source is read for new lines. */
const POLL_MS = 1000
/** After the source could not be opened, the next try comes this much later. */
const REOPEN_MS = 5000
/** Reads of one poll at most: /dev/kmsg gives one record per read. */
const READS_PER_POLL = 1000
const CHUNK_BYTES = 64 * 1024

/** A /dev/kmsg record: "priority,sequence,microseconds since boot,flags;message". */
const KMSG_RECORD = /^\d+,\d+,\d+,[^;]*;(.*)$/

/** The message of a kernel log line; lines in `dmesg` or journal form pass as they are. */
export function kernelMessageOf(line: string): string {
  return KMSG_RECORD.exec(line)?.[1] ?? line
}

export interface KernelLogFollowerOptions {
  /** /dev/kmsg, a FIFO something writes kernel lines into, or a file followed from its end. */
  path: string
  logger: Logger
  onXid: (event: XidEvent) => void
  /** Why the source cannot be read; null once it can. */
  onProblem: (problem: string | null) => void
  pollMs?: number
}

/**
 * Follows the kernel log for the NVIDIA driver's XID reports (docs/gpus.md, "XID errors from
 * the kernel log"): nvidia-smi has no query for them. The source is opened non-blocking and
 * read every second until it has nothing more, so that no thread waits on it; a regular file
 * is read from where it ended when opened, /dev/kmsg from the records logged since then.
 */
export class KernelLogFollower {
  private fd: number | undefined
  private position: number | null = null
  private partial = ''
  private timer: NodeJS.Timeout | undefined
  private stopped = true

  constructor(private readonly options: KernelLogFollowerOptions) {}

  start(): void {
    if (!this.stopped) return
    this.stopped = false
    this.schedule(0)
  }

  stop(): void {
    this.stopped = true
    clearTimeout(this.timer)
    if (this.fd !== undefined) close(this.fd, () => undefined)
    this.fd = undefined
  }

  private schedule(ms: number): void {
    if (this.stopped) return
    this.timer = setTimeout(() => void this.poll(), ms)
    this.timer.unref()
  }

  private async poll(): Promise<void> {
    if (this.fd === undefined) {
      try {
        await this.open()
        this.options.onProblem(null)
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code ?? String(error)
        const hint = code === 'EACCES' || code === 'EPERM' ? ' (/dev/kmsg needs root)' : ''
        this.options.onProblem(
          `the kernel log ${this.options.path} cannot be read (${code})${hint}: GPU XID errors are not seen (gpus.kernelLog, docs/gpus.md)`,
        )
        this.schedule(REOPEN_MS)
        return
      }
    }
    await this.readAvailable()
    this.schedule(this.options.pollMs ?? POLL_MS)
  }

  private async open(): Promise<void> {
    const fd = await new Promise<number>((resolve, reject) =>
      open(this.options.path, constants.O_RDONLY | constants.O_NONBLOCK, (error, opened) =>
        error ? reject(error) : resolve(opened),
      ),
    )
    const stats = await new Promise<Stats>((resolve, reject) =>
      fstat(fd, (error, s) => (error ? reject(error) : resolve(s))),
    )
    if (this.stopped) {
      close(fd, () => undefined)
      return
    }
    this.fd = fd
    this.position = stats.isFile() ? stats.size : null
    this.partial = ''
    // /dev/kmsg: the ring buffer's records were logged before the server started (those XIDs
    // were judged, or not, by the server that ran then): read through to its end, unread.
    // Their times could not tell them apart: the kernel's clock is not the one uptime reads.
    if (stats.isCharacterDevice()) await this.readAvailable(() => undefined, Infinity)
  }

  /**
   * Reads what the source has now, each chunk to `take` (its lines' XIDs by default), in at
   * most `reads` reads (the rest at the next poll).
   */
  private async readAvailable(
    take = (text: string) => this.take(text),
    reads = READS_PER_POLL,
  ): Promise<void> {
    const buffer = Buffer.alloc(CHUNK_BYTES)
    for (let i = 0; i < reads && this.fd !== undefined; i++) {
      let bytes: number
      try {
        bytes = await new Promise<number>((resolve, reject) =>
          read(this.fd!, buffer, 0, buffer.length, this.position, (error, n) =>
            error ? reject(error) : resolve(n),
          ),
        )
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code
        if (code === 'EAGAIN') return
        // /dev/kmsg: records were overwritten before being read; the next read goes on.
        if (code === 'EPIPE') continue
        this.options.logger.warn(
          { err: error, path: this.options.path },
          'reading the kernel log failed',
        )
        this.reopen()
        return
      }
      if (bytes === 0) {
        await this.checkTruncated()
        return
      }
      if (this.position !== null) this.position += bytes
      take(buffer.toString('utf8', 0, bytes))
    }
  }

  /** A file that got shorter was rotated or emptied: read it again from its start. */
  private async checkTruncated(): Promise<void> {
    if (this.position === null || this.fd === undefined) return
    const size = await new Promise<number>((resolve) =>
      fstat(this.fd!, (error, s) => resolve(error ? this.position! : s.size)),
    )
    if (size < this.position) this.position = 0
  }

  private reopen(): void {
    if (this.fd !== undefined) close(this.fd, () => undefined)
    this.fd = undefined
  }

  private take(text: string): void {
    const lines = (this.partial + text).split('\n')
    this.partial = lines.pop() ?? ''
    const messages = lines.map((line) => kernelMessageOf(line))
    for (const event of parseXidEvents(messages.join('\n'))) this.options.onXid(event)
  }
}
