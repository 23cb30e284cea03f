/**
 * How long a count of an endpoint's jobs is reused while nothing was written to the endpoint
 * in this process: other replicas' writes show within this.
 */
export const COUNTS_FRESH_MS = 1_000
/**
 * A count of this many jobs or more is also reused, writes or not, for 1 s per 100 000 jobs it
 * counted (COUNTS_REUSE_MS_PER_JOB). Counting reads an index entry per job, about 16 ms per
 * 100 000 on SQLite (which holds the event loop) and 30 ms on PostgreSQL, so `/health` spends at
 * most about 2 % of the loop counting, however many jobs are stored and however often it is
 * called. Smaller counts are read again after every write in this process: they are exact.
 */
export const LARGE_COUNT = 10_000
export const COUNTS_REUSE_MS_PER_JOB = 0.01

interface Entry<T> {
  /** The read in flight, or done: callers meanwhile share it. */
  value: Promise<T>
  /** When the read started (performance.now(), ms). */
  startedAt: number
  /** Jobs the read counted; undefined while in flight. */
  counted?: number
  /** A write in this process since the read started. */
  written: boolean
}

/**
 * The job counts of `/health` per endpoint (docs/job-api.md, "/health"): one read at a time,
 * shared by every caller meanwhile, and reused as COUNTS_FRESH_MS and LARGE_COUNT say.
 */
export class CountsCache<T> {
  private readonly entries = new Map<string, Entry<T>>()

  constructor(
    /** The jobs a value counted. */
    private readonly jobsIn: (value: T) => number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** A write to the endpoint's jobs in this process. */
  written(endpointId: string): void {
    const entry = this.entries.get(endpointId)
    if (entry) entry.written = true
  }

  get(endpointId: string, read: () => Promise<T>): Promise<T> {
    const entry = this.entries.get(endpointId)
    if (entry && this.reusable(entry)) return entry.value
    const fresh: Entry<T> = { value: read(), startedAt: this.now(), written: false }
    this.entries.set(endpointId, fresh)
    fresh.value.then(
      (value) => {
        fresh.counted = this.jobsIn(value)
      },
      () => {
        if (this.entries.get(endpointId) === fresh) this.entries.delete(endpointId)
      },
    )
    return fresh.value
  }

  private reusable(entry: Entry<T>): boolean {
    // A read still in flight is shared, unless it may have missed a write since it started.
    if (entry.counted === undefined) return !entry.written
    const age = this.now() - entry.startedAt
    if (entry.counted >= LARGE_COUNT && age < entry.counted * COUNTS_REUSE_MS_PER_JOB) return true
    return !entry.written && age < COUNTS_FRESH_MS
  }
}
