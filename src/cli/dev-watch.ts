import { createHash } from 'node:crypto'
import { readFileSync, watch, type FSWatcher } from 'node:fs'
import path from 'node:path'
import { HANDLER_EXTENSIONS, TEST_INPUT_FILE } from './dev-worker.js'

/** Folders a `--watch` of the handler's folder ignores. */
const IGNORED_SEGMENTS = new Set(['node_modules', '.git', '__pycache__', '.podyard', 'dist'])
/**
 * The files whose change restarts the worker under `--watch`: code and configuration, not what
 * a handler writes (outputs, logs, pid files), which would restart it in a loop.
 */
const WATCHED_EXTENSIONS = new Set([
  ...HANDLER_EXTENSIONS,
  '.json',
  '.yaml',
  '.yml',
  '.toml',
  '.txt',
])
/** Editors save in several writes (or write and rename): one restart for them all. */
const DEBOUNCE_MS = 150

/** Under `--watch`: whether a change to `name` (relative to `folder`) restarts the worker. */
export function restartsOnChange(name: string, folder: string, dataDir: string): boolean {
  const full = path.resolve(folder, name)
  const data = path.resolve(dataDir)
  if (full === data || full.startsWith(`${data}${path.sep}`)) return false
  const segments = name.split(/[\\/]/)
  if (segments.some((segment) => IGNORED_SEGMENTS.has(segment) || segment.startsWith('.'))) {
    return false
  }
  // The test job is input, not code: it runs once at start.
  if (full === path.join(folder, TEST_INPUT_FILE)) return false
  return WATCHED_EXTENSIONS.has(path.extname(name).toLowerCase())
}

export interface HandlerWatchOptions {
  /** The handler file, absolute. */
  file: string
  /** `--watch`: the file's folder and below, else the file alone. */
  folder: boolean
  /** The platform's data directory, which may sit in the folder and is never watched. */
  dataDir: string
  /** A change that restarts the worker: the name changed (relative to the folder), if known. */
  onChange(name: string | undefined): void
}

/**
 * Watches the handler (or its folder) for changes that restart its worker. The file alone is
 * watched through its folder, so that an editor's save by rename is seen, and a change counts
 * only when the content differs (a touch, or a save of the same text, restarts nothing).
 */
export class HandlerWatch {
  private watcher: FSWatcher | undefined
  private debounce: NodeJS.Timeout | undefined
  private lastContent: string | undefined

  constructor(private readonly options: HandlerWatchOptions) {}

  start(): void {
    const { file, folder: wholeFolder, dataDir } = this.options
    const folder = path.dirname(file)
    this.lastContent = this.fingerprint()
    this.watcher = watch(folder, { recursive: wholeFolder }, (_event, changed) => {
      const name = changed?.toString()
      if (name !== undefined) {
        if (!wholeFolder && name !== path.basename(file)) return
        if (wholeFolder && !restartsOnChange(name, folder, dataDir)) return
      }
      clearTimeout(this.debounce)
      this.debounce = setTimeout(() => this.settled(name), DEBOUNCE_MS)
    })
  }

  close(): void {
    clearTimeout(this.debounce)
    this.watcher?.close()
  }

  private settled(name: string | undefined): void {
    if (!this.options.folder) {
      const content = this.fingerprint()
      // Missing mid-save, or the same text again: nothing to restart for.
      if (content === undefined || content === this.lastContent) return
      this.lastContent = content
    }
    this.options.onChange(name)
  }

  /** What the file holds now; undefined while it is missing. */
  private fingerprint(): string | undefined {
    try {
      return createHash('sha256').update(readFileSync(this.options.file)).digest('hex')
    } catch {
      return undefined
    }
  }
}
