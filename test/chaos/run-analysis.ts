/**
 * What the chaos suite concludes from the handlers' own records (docs/serverless-queue.md,
 * "Guarantees"). Every handler writes a line when it starts a job, when it ends it (its result
 * is then the worker's to deliver) and when it gives it up (the platform stopped it); the rig
 * records when it killed a process. Pure, so that its verdicts are unit-tested.
 */

export interface RunEvent {
  kind: 'start' | 'end' | 'abort'
  jobId: string
  /** ms since the epoch, from the machine's clock (all processes share it). */
  at: number
  pid: number
}

export interface Run {
  pid: number
  start: number
  /** When it ended, gave up, or its process was killed; undefined when nobody knows. */
  stop: number | undefined
  how: 'ended' | 'aborted' | 'killed' | 'unknown'
}

export interface RunVerdict {
  accepted: number
  completed: number
  /** Accepted jobs that did not end COMPLETED, with what they ended as. */
  lost: Array<{ jobId: string; status: string }>
  /** Accepted jobs that no handler ever started yet ended COMPLETED (should not exist). */
  completedUnrun: string[]
  /** Jobs two of whose runs were under way at the same moment. */
  overlapping: string[]
  /** Runs beyond the first of each job. */
  extraRuns: number
  /**
   * Extra runs whose previous run was cut short by a crash of its process, or whose process was
   * killed after its handler returned, before the job ran again (its result undelivered).
   */
  explainedByCrash: number
  /** Extra runs after a run that ended, gave up or stopped for a reason that is not a crash. */
  unexplained: Array<{ jobId: string; after: Run['how'] }>
}

/** The runs of each job, in the order they started. */
export function runsOf(events: RunEvent[], kills: ReadonlyMap<number, number>): Map<string, Run[]> {
  const open = new Map<string, Run>()
  const runs = new Map<string, Run[]>()
  const key = (jobId: string, pid: number) => `${pid}\u0000${jobId}`
  for (const event of [...events].sort((a, b) => a.at - b.at)) {
    if (event.kind === 'start') {
      const run: Run = { pid: event.pid, start: event.at, stop: undefined, how: 'unknown' }
      open.set(key(event.jobId, event.pid), run)
      runs.set(event.jobId, [...(runs.get(event.jobId) ?? []), run])
      continue
    }
    const run = open.get(key(event.jobId, event.pid))
    if (run === undefined) continue
    open.delete(key(event.jobId, event.pid))
    run.stop = event.at
    run.how = event.kind === 'end' ? 'ended' : 'aborted'
  }
  for (const run of open.values()) {
    const killedAt = kills.get(run.pid)
    if (killedAt !== undefined && killedAt >= run.start) {
      run.stop = killedAt
      run.how = 'killed'
    }
  }
  return runs
}

/**
 * Whether `previous` ended (its handler returned) but its process was killed before the job ran
 * again (`next`): the worker posts a result after its handler returns, so the process may have
 * died with the result undelivered, and the job was not finished (docs/serverless-queue.md,
 * "Guarantees", 4). The rig picks a busy worker and then kills it: the run may end in between.
 */
function killedBeforeDelivery(
  previous: Run,
  next: Run,
  kills: ReadonlyMap<number, number>,
): boolean {
  const killedAt = kills.get(previous.pid)
  return (
    previous.how === 'ended' &&
    killedAt !== undefined &&
    killedAt >= previous.stop! &&
    killedAt <= next.start
  )
}

export function judgeRuns(input: {
  accepted: ReadonlySet<string>
  /** Final status of each accepted job the platform still knows. */
  statuses: ReadonlyMap<string, string>
  events: RunEvent[]
  kills: ReadonlyMap<number, number>
}): RunVerdict {
  const runs = runsOf(input.events, input.kills)
  const lost: RunVerdict['lost'] = []
  const completedUnrun: string[] = []
  let completed = 0
  for (const jobId of input.accepted) {
    const status = input.statuses.get(jobId) ?? 'MISSING'
    if (status !== 'COMPLETED') lost.push({ jobId, status })
    else {
      completed += 1
      if (!runs.has(jobId)) completedUnrun.push(jobId)
    }
  }
  const overlapping: string[] = []
  const unexplained: RunVerdict['unexplained'] = []
  let extraRuns = 0
  let explainedByCrash = 0
  for (const [jobId, jobRuns] of runs) {
    let overlaps = false
    for (let i = 1; i < jobRuns.length; i++) {
      const previous = jobRuns[i - 1]!
      const run = jobRuns[i]!
      extraRuns += 1
      if (previous.how === 'killed' || killedBeforeDelivery(previous, run, input.kills)) {
        explainedByCrash += 1
      } else unexplained.push({ jobId, after: previous.how })
      // A run without a known stop may still be going: it overlaps whatever started after it.
      for (const earlier of jobRuns.slice(0, i)) {
        if (earlier.stop === undefined || earlier.stop > run.start) overlaps = true
      }
    }
    if (overlaps) overlapping.push(jobId)
  }
  return {
    accepted: input.accepted.size,
    completed,
    lost,
    completedUnrun,
    overlapping,
    extraRuns,
    explainedByCrash,
    unexplained,
  }
}
