import { isTerminal, type Job, type JobStatus, type JobView } from '../domain/serverless/job.js'
import type { WakeUps } from './wake-ups.js'

/**
 * The queue's long polls (docs/serverless-queue.md, "Long-poll wake-ups"): who waits on which
 * key, the workers waiting on an empty queue that a submission may hand its job to, and the
 * waits themselves. A write in this process tells the waits of its key directly (`wake`); other
 * replicas' writes reach them through WakeUps, and every wait also re-checks the store.
 */

export const workKey = (endpointId: string) => `work:${endpointId}`
export const jobKey = (endpointId: string, jobId: string) => `job:${endpointId}:${jobId}`

/** What a write in this process left a job as, for the waits on its key. */
export interface Written {
  status: JobStatus
  version: number
  /** The whole job, when the write has it at hand (a completion). */
  view?: JobView
}

/** A long poll's watch on a key (`waitFor`), told directly of the writes in this process. */
interface Watch {
  changed: boolean
  /**
   * Only the job's end matters (`waitForEnd`): a write that leaves it unfinished moves `baseline`
   * (the version the store is compared with) instead of ending the wait.
   */
  endOnly?: boolean
  baseline?: number
  /** The job as the write that ended the wait left it, when that write said. */
  job?: JobView
}

/**
 * What a long poll's re-check of `waitToTake` found: a job to take, none, or that the worker
 * is retired (the store knows it as gone for good: it takes nothing, whatever is queued).
 */
export type WorkCheck = 'work' | 'none' | 'retired'

/** A worker waiting in `waitToTake` while the queue is empty, ready for a job handed over. */
export interface IdleTaker {
  workerId: string
  leaseMs: number
  /** Its own wake-up key: a hand-off wakes it alone. */
  key: string
  signal?: AbortSignal
  /** Set when a submission claims it: the job once stored, undefined if storing it failed. */
  handOff?: Promise<Job | undefined>
}

export class JobWaits {
  /** The long polls waiting on each key (`waitFor`). */
  private readonly watching = new Map<string, Set<Watch>>()
  /** Per endpoint, the workers waiting in `waitToTake` on an empty queue, longest first. */
  private readonly idleTakers = new Map<string, Set<IdleTaker>>()
  private takerSerial = 0

  constructor(
    readonly wakeUps: WakeUps,
    private readonly pollIntervalMs: number,
  ) {}

  /**
   * Wakes the long polls of `key` after a commit in this process. Their waits are told directly
   * that something changed, so they need not re-read the store to find out (bench/README.md,
   * step 10); a wake-up from another replica, or a poll's timer, still makes them re-read.
   */
  wake(key: string, written?: Written): void {
    const watching = this.watching.get(key)
    if (watching !== undefined) {
      for (const watch of watching) {
        if (watch.endOnly && written !== undefined && !isTerminal(written.status)) {
          watch.baseline = written.version
        } else {
          watch.changed = true
          watch.job = written?.view
        }
      }
    }
    this.wakeUps.notify(key)
  }

  /**
   * Waits until `check` or a write in this process to `key` (see `wake`); a notification of
   * `alsoWakeOn` makes it check again too.
   */
  private async waitFor(
    key: string,
    check: () => Promise<boolean>,
    timeoutMs: number,
    signal?: AbortSignal,
    watch: Watch = { changed: false },
    alsoWakeOn?: string,
  ): Promise<boolean> {
    let watching = this.watching.get(key)
    if (watching === undefined) {
      watching = new Set()
      this.watching.set(key, watching)
    }
    watching.add(watch)
    try {
      return await this.wakeUps.waitUntil(
        alsoWakeOn === undefined ? key : [key, alsoWakeOn],
        async () => watch.changed || (await check()),
        timeoutMs,
        this.pollIntervalMs,
        signal,
      )
    } finally {
      watching.delete(watch)
      if (watching.size === 0) this.watching.delete(key)
    }
  }

  /** Until `check` says so (no direct wake-ups: the writes of `key` only notify). */
  waitUntil(
    key: string,
    check: () => Promise<boolean>,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<boolean> {
    return this.wakeUps.waitUntil(key, check, timeoutMs, this.pollIntervalMs, signal)
  }

  /** Until the job's version is not `baseline` (the job's key woke, or `version` says so). */
  waitForChange(
    key: string,
    version: () => Promise<number | undefined>,
    baseline: number,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<boolean> {
    return this.waitFor(key, async () => (await version()) !== baseline, timeoutMs, signal)
  }

  /**
   * `waitForChange` for a waiter that wants the job's end (JobQueue.waitForEnd): resolves with
   * the job when the write that finished it here handed it over, else as `waitForChange`.
   */
  async waitForEnd(
    key: string,
    version: () => Promise<number | undefined>,
    sinceVersion: number,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<JobView | boolean> {
    const watch: Watch = { changed: false, endOnly: true, baseline: sinceVersion }
    const changed = await this.waitFor(
      key,
      async () => (await version()) !== watch.baseline,
      timeoutMs,
      signal,
      watch,
    )
    return changed && watch.changed && watch.job !== undefined ? watch.job : changed
  }

  /**
   * The worker that has waited longest in `waitToTake` on the endpoint and can still answer,
   * taken off the list; undefined when none waits.
   */
  claimIdleTaker(endpointId: string): IdleTaker | undefined {
    const takers = this.idleTakers.get(endpointId)
    if (takers === undefined) return undefined
    for (const taker of takers) {
      takers.delete(taker)
      if (!taker.signal?.aborted) {
        if (takers.size === 0) this.idleTakers.delete(endpointId)
        return taker
      }
    }
    this.idleTakers.delete(endpointId)
    return undefined
  }

  /**
   * JobQueue.waitToTake, with `workFor` to read whether the endpoint has a job to take, or the
   * worker is retired: then it waits as on an empty queue, never listed for a hand-off, until
   * its wait ends (so that a lost worker that still calls neither spins nor is handed a job).
   */
  async waitToTake(
    endpointId: string,
    taker: { workerId: string; leaseMs: number; max: number; holdsNothing?: boolean },
    timeoutMs: number,
    signal: AbortSignal | undefined,
    workFor: () => Promise<WorkCheck>,
  ): Promise<Job | boolean> {
    const idle: IdleTaker = {
      workerId: taker.workerId,
      leaseMs: taker.leaseMs,
      key: `taker:${endpointId}:${taker.workerId}:${++this.takerSerial}`,
      ...(signal ? { signal } : {}),
    }
    // A worker that takes one job at a time is handed one, and so is a batch taker that holds
    // none (an idle worker, or one that has caught up): once it holds that job it is woken
    // instead, and takes every job that arrived meanwhile in one take. Handing a busy batch
    // taker one job per take and per result post would cost the server more than the take
    // saved (bench/README.md, step 24).
    const handsOff = taker.max === 1 || taker.holdsNothing === true
    const unlist = () => {
      const takers = this.idleTakers.get(endpointId)
      if (takers?.delete(idle) && takers.size === 0) this.idleTakers.delete(endpointId)
    }
    try {
      const work = await this.waitFor(
        workKey(endpointId),
        async () => {
          if (idle.handOff !== undefined) return true
          const found = await workFor()
          // Listed only while the queue, as last read, has nothing for it (and not once aborted).
          if (found !== 'none' || signal?.aborted) unlist()
          else if (handsOff && idle.handOff === undefined) this.listIdleTaker(endpointId, idle)
          // Claimed while it read: done waiting either way.
          return found === 'work' || idle.handOff !== undefined
        },
        timeoutMs,
        signal,
        undefined,
        idle.key,
      )
      // A job claimed for it just as the wait ended is still its job (a claim unlists it).
      const handed = idle.handOff === undefined ? undefined : await idle.handOff
      return handed ?? work
    } finally {
      unlist()
    }
  }

  private listIdleTaker(endpointId: string, taker: IdleTaker): void {
    let takers = this.idleTakers.get(endpointId)
    if (takers === undefined) {
      takers = new Set()
      this.idleTakers.set(endpointId, takers)
    }
    takers.add(taker)
  }
}
