import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'

/** How often the checkpointer's thread copies the WAL back into the database file. */
export const CHECKPOINT_INTERVAL_MS = 50
/**
 * While nothing is written, the thread looks less and less often, up to this: an idle server's
 * thread then wakes once a second instead of twenty times (the first write brings it back to
 * CHECKPOINT_INTERVAL_MS; the server's own fallback checkpoint covers a burst meanwhile).
 */
export const IDLE_CHECK_MAX_MS = 1_000
/**
 * The server's own connection checkpoints only past this many WAL pages (16 MiB): a safety net
 * for when the thread falls behind; SQLite's default is 1 000.
 */
export const FALLBACK_AUTOCHECKPOINT_PAGES = 4_000

/**
 * The thread's code (CommonJS, run with `eval`, so it needs no file of its own next to either
 * the TypeScript sources or the built `dist/`): its own better-sqlite3 connection to the same
 * file, a PASSIVE checkpoint every interval in which something was written (it never waits for
 * the writer nor blocks it), and a clean close when told to stop.
 */
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.driver)
const db = new Database(workerData.file)
db.pragma('busy_timeout = 1000')
db.pragma('synchronous = NORMAL')
// data_version moves when another connection commits: an idle server's file is left alone,
// unless the last checkpoint could not copy everything (a reader held the WAL).
let version = -1
let complete = false
// Doubles while nothing changes, up to idleMaxMs; back to intervalMs at the first change.
let delay = workerData.intervalMs
function check() {
  try {
    const now = db.pragma('data_version', { simple: true })
    if (now === version && complete) {
      delay = Math.min(delay * 2, workerData.idleMaxMs)
      return
    }
    delay = workerData.intervalMs
    version = now
    const [result] = db.pragma('wal_checkpoint(PASSIVE)')
    complete = result !== undefined && result.busy === 0 && result.checkpointed === result.log
  } catch (error) {
    complete = false
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

  constructor(
    file: string,
    options: { intervalMs?: number; onError?: (message: string) => void } = {},
  ) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3')
    this.worker = new Worker(THREAD_SOURCE, {
      eval: true,
      workerData: {
        file,
        driver,
        intervalMs: options.intervalMs ?? CHECKPOINT_INTERVAL_MS,
        idleMaxMs: IDLE_CHECK_MAX_MS,
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

  /** Stops the thread after its current checkpoint and closes its connection. */
  async close(): Promise<void> {
    // Referenced again while it stops: otherwise a process with nothing else left to do would
    // end before the thread's exit arrives, with this wait (and its caller) unsettled.
    this.worker.ref()
    this.worker.postMessage('stop')
    await this.exited
  }
}
