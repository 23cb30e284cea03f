/**
 * Group commit for the hottest writes (the job queue's submissions and completions, pods'
 * system log lines). A write that arrives while the store is busy
 * with the previous batch waits for it and then goes out together with every other write that
 * arrived meanwhile, in one statement or transaction: on SQLite each commit costs far more than
 * the rows it writes (bench/README.md), and on PostgreSQL it saves round trips. An idle store
 * is written at once (one `setImmediate` later, which gathers the requests read in the same turn).
 *
 * Each caller's promise settles with its own result, only after its batch has committed. When a
 * batch fails as a whole, every write in it is retried on its own, so one bad write fails alone.
 */
export interface WriteBatcherOptions<I, O> {
  /** Writes one item (also the fallback when a batch fails). */
  writeOne(item: I): Promise<O>
  /** Writes several items atomically; the results in the items' order. */
  writeBatch(items: I[]): Promise<O[]>
  /** Largest batch (default 256). */
  maxBatch?: number
  /** Batches written at the same time (default 1: SQLite has one connection anyway). */
  maxInFlight?: number
}

interface Pending<I, O> {
  item: I
  resolve(result: O): void
  reject(error: unknown): void
}

export class WriteBatcher<I, O> {
  private pending: Pending<I, O>[] = []
  private inFlight = 0
  private scheduled = false
  private readonly maxBatch: number
  private readonly maxInFlight: number

  constructor(private readonly options: WriteBatcherOptions<I, O>) {
    this.maxBatch = options.maxBatch ?? 256
    this.maxInFlight = options.maxInFlight ?? 1
  }

  write(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ item, resolve, reject })
      this.schedule()
    })
  }

  private schedule(): void {
    if (this.scheduled || this.pending.length === 0 || this.inFlight >= this.maxInFlight) return
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      void this.flush()
    })
  }

  private async flush(): Promise<void> {
    const batch = this.pending.splice(0, this.maxBatch)
    if (batch.length === 0) return
    this.inFlight += 1
    try {
      const results = batch.length > 1 ? await this.tryBatch(batch) : undefined
      if (results !== undefined) {
        batch.forEach((entry, i) => entry.resolve(results[i]!))
      } else {
        for (const entry of batch) {
          try {
            entry.resolve(await this.options.writeOne(entry.item))
          } catch (error) {
            entry.reject(error)
          }
        }
      }
    } finally {
      this.inFlight -= 1
      this.schedule()
    }
  }

  private async tryBatch(batch: Pending<I, O>[]): Promise<O[] | undefined> {
    try {
      const results = await this.options.writeBatch(batch.map((entry) => entry.item))
      return results.length === batch.length ? results : undefined
    } catch {
      return undefined
    }
  }
}
