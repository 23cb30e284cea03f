import type { PodEventRepo, PodLogLine } from './ports.js'

/** How often a followed system log is read again for new lines. */
export const EVENT_POLL_MS = 500

/**
 * The lines of a pod's or worker's system log after `afterSeq`, as they are written, until
 * `signal` aborts. The events live in the store, written by whichever replica acts, so they are
 * polled rather than pushed.
 */
export async function* followEvents(
  events: Pick<PodEventRepo, 'list'>,
  id: string,
  afterSeq: number,
  signal: AbortSignal,
): AsyncIterable<PodLogLine> {
  let last = afterSeq
  while (!signal.aborted) {
    for (const line of await events.list(id, { afterSeq: last })) {
      last = line.seq
      yield line
    }
    await new Promise<void>((resolve) => {
      // The listener goes with the wait: a follow lasting hours would otherwise leave one on the
      // signal per poll.
      const done = () => {
        clearTimeout(timer)
        signal.removeEventListener('abort', done)
        resolve()
      }
      const timer = setTimeout(done, EVENT_POLL_MS)
      signal.addEventListener('abort', done, { once: true })
    })
  }
}
