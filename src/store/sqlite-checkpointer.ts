import { closeSync, openSync } from 'node:fs'
import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'

/** How often the checkpointer's thread looks at the WAL while something is written. */
export const CHECKPOINT_INTERVAL_MS = 50
/**
 * While nothing is written, the thread looks less and less often, up to this: an idle server's
 * thread then wakes once a second instead of twenty times (the first write brings it back to
 * CHECKPOINT_INTERVAL_MS; the server's own fallback checkpoint covers a burst meanwhile).
 */
export const IDLE_CHECK_MAX_MS = 1_000
/**
 * The thread checkpoints once the WAL holds this many pages not yet copied (SQLite's own
 * automatic threshold), or once the oldest of them has waited CHECKPOINT_MAX_AGE_MS. Not at
 * every change: after a complete checkpoint the next commit starts the WAL over, and SQLite
 * syncs the new WAL's header inside that commit, on the server's event loop. Checkpointing a
 * WAL of a few pages every 50 ms made nearly every commit of a lightly loaded server sync the
 * disk, and wait for everything the host had queued for it (a tenant filling its disk).
 */
export const CHECKPOINT_MIN_PAGES = 1_000
export const CHECKPOINT_MAX_AGE_MS = 10_000
/**
 * The server's own connection checkpoints only past this many WAL pages (16 MiB): a safety net
 * for when the thread falls behind; SQLite's default is 1 000.
 */
export const FALLBACK_AUTOCHECKPOINT_PAGES = 4_000

/**
 * The thread's code (CommonJS, run with `eval`, so it needs no file of its own next to either
 * the TypeScript sources or the built `dist/`): its own better-sqlite3 connection to the same
 * file, a PASSIVE checkpoint when enough is waiting (it never waits for the writer nor blocks
 * it), and a clean close when told to stop. How much is waiting it reads from the WAL index
 * (`<file>-shm`, SQLite's documented format: the header's mxFrame at byte 16, in the host's
 * byte order, and the checkpoint's nBackfill at byte 96), through a descriptor the checkpointer
 * opened once (`indexFd`; see `SqliteCheckpointer.closeIndex`); where that cannot be read it
 * checkpoints at every change, as SQLite would.
 */
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const { readSync } = require('node:fs')
const { endianness } = require('node:os')
const Database = require(workerData.driver)
const db = new Database(workerData.file)
db.pragma('busy_timeout = 1000')
db.pragma('synchronous = NORMAL')
const header = Buffer.alloc(100)
const readU32 = endianness() === 'LE' ? (at) => header.readUInt32LE(at) : (at) => header.readUInt32BE(at)
// Pages in the WAL not yet copied into the database file; undefined when the index is unreadable.
function waitingPages() {
  if (workerData.indexFd === undefined) return undefined
  try {
    if (readSync(workerData.indexFd, header, 0, header.length, 0) < header.length) return undefined
    return Math.max(0, readU32(16) - readU32(96))
  } catch {
    return undefined
  }
}
// data_version moves when another connection commits.
let version = -1
let waitingSince = 0
// Doubles while nothing changes, up to idleMaxMs; back to intervalMs at the first change.
let delay = workerData.intervalMs
function check() {
  try {
    const now = db.pragma('data_version', { simple: true })
    const changed = now !== version
    version = now
    delay = changed ? workerData.intervalMs : Math.min(delay * 2, workerData.idleMaxMs)
    const waiting = waitingPages()
    if (waiting === 0) {
      waitingSince = 0
      return
    }
    if (waiting === undefined ? !changed : waiting < workerData.minPages) {
      if (waitingSince === 0) waitingSince = Date.now()
      if (Date.now() - waitingSince < workerData.maxAgeMs) return
    }
    db.pragma('wal_checkpoint(PASSIVE)')
    waitingSince = 0
  } catch (error) {
    parentPort.postMessage({ error: String(error && error.message || error) })
  }
}
let timer = setTimeout(function tick() {
  check()
  timer = setTimeout(tick, delay)
}, delay)
parentPort.on('message', () => {
  clearTimeout(timer)
  db.close()
  parentPort.close()
})
`

/**
 * Checkpoints a WAL-mode SQLite file from a thread of its own (docs/production.md, "SQLite"). A
 * checkpoint copies the pages written to the WAL back into the database file; run from the
 * server's connection (SQLite's automatic checkpoint, every 1 000 pages) it is done inside a
 * commit, on the event loop, at 2 to 8 % of the server's CPU under load (bench/README.md, step
 * 23). Here it runs beside the event loop, and the server's connection keeps a far higher
 * automatic threshold (`FALLBACK_AUTOCHECKPOINT_PAGES`) in case the thread falls behind.
 */
export class SqliteCheckpointer {
  private readonly worker: Worker
  private readonly exited: Promise<void>
  private indexFd: number | undefined

  constructor(
    file: string,
    options: {
      intervalMs?: number
      maxAgeMs?: number
      onError?: (message: string) => void
    } = {},
  ) {
    // The file is in WAL mode and has been read, so its index exists (else none is read).
    const driver = createRequire(import.meta.url).resolve('better-sqlite3')
    this.indexFd = openIndex(`${file}-shm`)
    this.worker = new Worker(THREAD_SOURCE, {
      eval: true,
      workerData: {
        file,
        driver,
        indexFd: this.indexFd,
        intervalMs: options.intervalMs ?? CHECKPOINT_INTERVAL_MS,
        idleMaxMs: IDLE_CHECK_MAX_MS,
        minPages: CHECKPOINT_MIN_PAGES,
        maxAgeMs: options.maxAgeMs ?? CHECKPOINT_MAX_AGE_MS,
      },
    })
    // It never keeps the process alive; closing the store stops it.
    this.worker.unref()
    this.worker.on('message', (message: { error?: string }) => {
      if (message.error !== undefined) options.onError?.(message.error)
    })
    this.worker.on('error', (error) => options.onError?.(error.message))
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()))
  }

  /**
   * Stops the thread after its current checkpoint and closes its connection; the WAL index's
   * descriptor stays open until `closeIndex`.
   */
  async stop(): Promise<void> {
    // Referenced again while it stops: otherwise a process with nothing else left to do would
    // end before the thread's exit arrives, with this wait (and its caller) unsettled.
    this.worker.ref()
    this.worker.postMessage('stop')
    await this.exited
  }

  /**
   * Closes the WAL index's descriptor: only once the stopped thread's and the caller's own
   * connections to the file are closed. SQLite's locks are POSIX record locks, and closing any
   * descriptor of a file drops every lock the process holds on it: closed while a connection of
   * this process is open, it would drop the lock that tells other processes the index is in use,
   * and the next one to open the database would start the index over under this process's
   * mapping of it (which then dies of SIGBUS). The thread reads through this one descriptor for
   * the same reason, instead of opening the file at each look.
   */
  closeIndex(): void {
    if (this.indexFd === undefined) return
    closeSync(this.indexFd)
    this.indexFd = undefined
  }
}

/** A descriptor of the WAL index, or undefined where it cannot be opened (then none is read). */
function openIndex(indexFile: string): number | undefined {
  try {
    return openSync(indexFile, 'r')
  } catch {
    return undefined
  }
}
