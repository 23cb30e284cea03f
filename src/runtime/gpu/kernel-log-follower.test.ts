import { execFileSync } from 'node:child_process'
import { accessSync, closeSync, constants, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pino from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import type { XidEvent } from './nvidia-health-sources.js'
import { KernelLogFollower } from './kernel-log-follower.js'

/**
 * The two kernel log sources other than a plain file (docs/gpus.md, "XID errors from the
 * kernel log"): a FIFO something writes kernel lines into, and /dev/kmsg itself.
 */

async function until<T>(what: string, probe: () => T | undefined, ms = 5_000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const value = probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

function follow(source: string) {
  const xids: XidEvent[] = []
  const problems: (string | null)[] = []
  const follower = new KernelLogFollower({
    path: source,
    logger: pino({ level: 'silent' }),
    onXid: (event) => xids.push(event),
    onProblem: (problem) => problems.push(problem),
    pollMs: 20,
  })
  follower.start()
  return { follower, xids, problems }
}

const xidLine = (bus: string, xid: number, detail: string) =>
  `NVRM: Xid (PCI:${bus}): ${xid}, ${detail}`

describe('the kernel log follower', () => {
  let dir: string | undefined
  let stop: (() => void) | undefined
  afterEach(() => {
    stop?.()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('reads a FIFO as lines come, and again after its writer closed and another opened it', async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-kmsg-fifo-'))
    const fifo = path.join(dir, 'kernel.fifo')
    execFileSync('mkfifo', [fifo])
    const { follower, xids, problems } = follow(fifo)
    stop = () => follower.stop()
    // A writer can open a FIFO without blocking only once its reader has (ENXIO before).
    const openWriter = () =>
      until('the follower to open the FIFO', () => {
        try {
          return openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK)
        } catch {
          return undefined
        }
      })
    let writer = await openWriter()
    writeSync(
      writer,
      `kernel: something else\n${xidLine('0000:3b:00', 79, 'pid=1, GPU has fallen off the bus.')}\n`,
    )
    await until('the first XID', () => (xids.length >= 1 ? true : undefined))
    closeSync(writer)
    // No writer: the follower reads end-of-file, and goes on when the next one writes.
    await new Promise((resolve) => setTimeout(resolve, 100))
    writer = await openWriter()
    // Half a line, then the rest: one event, whole.
    writeSync(writer, 'NVRM: Xid (PCI:0000:19:00): 13, pid=7, ')
    await new Promise((resolve) => setTimeout(resolve, 60))
    writeSync(writer, 'Graphics Exception\n')
    await until('the second XID', () => (xids.length >= 2 ? true : undefined))
    closeSync(writer)
    expect(xids).toEqual([
      { busId: '3B:00', xid: 79, detail: 'pid=1, GPU has fallen off the bus.' },
      { busId: '19:00', xid: 13, detail: 'pid=7, Graphics Exception' },
    ])
    expect(problems).toEqual([null])
  })

  // Writing into the host's kernel log is for machines that exist to run tests (CI turns it
  // on): the line is an application's XID (a warning) of a bus id no GPU has.
  const kmsgWritable = (() => {
    try {
      accessSync('/dev/kmsg', constants.R_OK | constants.W_OK)
      return process.env.PODYARD_TEST_KMSG === '1'
    } catch {
      return false
    }
  })()

  it.runIf(kmsgWritable)(
    'reads /dev/kmsg records logged after it opened it, not those before',
    async () => {
      const before = `podyard test ${process.pid} before`
      writeFileToKmsg(xidLine('0000:fe:1f', 13, before))
      const { follower, xids, problems } = follow('/dev/kmsg')
      stop = () => follower.stop()
      await until('the follower to open /dev/kmsg', () => (problems.length > 0 ? true : undefined))
      expect(problems).toEqual([null])
      // Let it read the ring buffer up to now (its older records are skipped by time).
      await new Promise((resolve) => setTimeout(resolve, 300))
      const after = `podyard test ${process.pid} after`
      writeFileToKmsg(xidLine('0000:fe:1f', 13, after))
      await until('the XID written after opening', () =>
        xids.some((x) => x.detail === after) ? true : undefined,
      )
      const ours = xids.filter((x) => x.detail.startsWith(`podyard test ${process.pid}`))
      expect(ours).toEqual([{ busId: 'FE:1F', xid: 13, detail: after }])
    },
  )
})

function writeFileToKmsg(message: string): void {
  const fd = openSync('/dev/kmsg', constants.O_WRONLY)
  try {
    // `<4>`: the kernel's warning priority, as the NVIDIA driver logs XIDs.
    writeSync(fd, `<4>${message}\n`)
  } finally {
    closeSync(fd)
  }
}
