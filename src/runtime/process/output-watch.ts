import { watch, type FSWatcher } from 'node:fs'

/**
 * Calls `onChange` when `file` changes: at once after a quiet spell, then at most once per
 * `intervalMs` while it keeps changing (a chatty workload is read in batches). Through inotify
 * (fs.watch), so a file nobody writes costs nothing; where a watch cannot be had (the user's
 * inotify watches used up, the file missing), it looks every `intervalMs` instead. Returns the
 * function that stops it.
 */
export function watchOutput(file: string, intervalMs: number, onChange: () => void): () => void {
  let stopped = false
  let lastCall = -Infinity
  let timer: NodeJS.Timeout | undefined
  let watcher: FSWatcher | undefined
  let poll: NodeJS.Timeout | undefined

  const call = () => {
    timer = undefined
    if (stopped) return
    lastCall = performance.now()
    onChange()
  }
  const changed = () => {
    if (stopped || timer) return
    const wait = lastCall + intervalMs - performance.now()
    if (wait <= 0) return call()
    timer = setTimeout(call, wait)
    timer.unref()
  }
  const startPolling = () => {
    if (stopped || poll) return
    poll = setInterval(changed, intervalMs)
    poll.unref()
  }
  try {
    watcher = watch(file, { persistent: false }, changed)
    watcher.on('error', () => {
      watcher?.close()
      watcher = undefined
      startPolling()
    })
  } catch {
    startPolling()
  }
  return () => {
    stopped = true
    watcher?.close()
    clearTimeout(timer)
    clearInterval(poll)
  }
}
