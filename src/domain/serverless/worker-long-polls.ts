/**
 * The worker long polls (take, job-stop) in flight, so that they can be ended early: when the
 * platform stops their worker, and all of them when the server closes.
 */
export class WorkerLongPolls {
  /** Aborted when the server closes: every long poll answers at once with what it has. */
  private readonly closer = new AbortController()
  private readonly polls = new Set<{
    key: string
    controller: AbortController
    /** Resolves once the poll has answered: whatever it took is stored and handed over. */
    settled: Promise<void>
  }>()

  /** Aborted once the server is closing. */
  get closing(): AbortSignal {
    return this.closer.signal
  }

  /** Ends the worker's long polls now; resolves once they have answered. */
  async end(endpointId: string, workerId: string): Promise<void> {
    const key = `${endpointId}\u0000${workerId}`
    const ending: Array<Promise<void>> = []
    for (const poll of this.polls) {
      if (poll.key !== key) continue
      poll.controller.abort()
      ending.push(poll.settled)
    }
    await Promise.all(ending)
  }

  /** The server is closing: every long poll answers now instead of holding the close up. */
  close(): void {
    this.closer.abort()
  }

  /**
   * Runs `work` as one of the worker's long polls: its signal aborts when the worker hangs up
   * (`hangUp`), when `end` names the worker, or when the server closes.
   */
  async run<T>(
    endpointId: string,
    workerId: string,
    hangUp: AbortSignal | undefined,
    work: (signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    let settle!: () => void
    const poll = {
      key: `${endpointId}\u0000${workerId}`,
      controller: new AbortController(),
      settled: new Promise<void>((resolve) => (settle = resolve)),
    }
    const end = () => poll.controller.abort()
    hangUp?.addEventListener('abort', end, { once: true })
    this.closer.signal.addEventListener('abort', end, { once: true })
    if (hangUp?.aborted || this.closer.signal.aborted) end()
    this.polls.add(poll)
    try {
      return await work(poll.controller.signal)
    } finally {
      this.polls.delete(poll)
      settle()
      hangUp?.removeEventListener('abort', end)
      this.closer.signal.removeEventListener('abort', end)
    }
  }
}
