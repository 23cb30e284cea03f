import { describe, expect, it } from 'vitest'
import { judgeRuns, type RunEvent } from './run-analysis.js'

const start = (jobId: string, at: number, pid = 1): RunEvent => ({ kind: 'start', jobId, at, pid })
const end = (jobId: string, at: number, pid = 1): RunEvent => ({ kind: 'end', jobId, at, pid })
const abort = (jobId: string, at: number, pid = 1): RunEvent => ({ kind: 'abort', jobId, at, pid })

describe('the chaos suite’s verdict on the handlers’ records', () => {
  it('passes jobs that ran once, and counts a re-run after a crash as explained', () => {
    const verdict = judgeRuns({
      accepted: new Set(['a', 'b']),
      statuses: new Map([
        ['a', 'COMPLETED'],
        ['b', 'COMPLETED'],
      ]),
      events: [start('a', 10), end('a', 20), start('b', 15, 7), start('b', 40, 2), end('b', 50, 2)],
      kills: new Map([[7, 30]]),
    })
    expect(verdict).toEqual({
      accepted: 2,
      completed: 2,
      lost: [],
      completedUnrun: [],
      overlapping: [],
      extraRuns: 1,
      explainedByCrash: 1,
      unexplained: [],
    })
  })

  it('names lost jobs, overlapping runs and re-runs no crash explains', () => {
    const verdict = judgeRuns({
      accepted: new Set(['lost', 'gone', 'twice', 'overlap', 'ghost', 'after-abort']),
      statuses: new Map([
        ['lost', 'FAILED'],
        ['twice', 'COMPLETED'],
        ['overlap', 'COMPLETED'],
        ['ghost', 'COMPLETED'],
        ['after-abort', 'COMPLETED'],
      ]),
      events: [
        start('lost', 1),
        end('lost', 2),
        start('twice', 10),
        end('twice', 20),
        start('twice', 30, 2),
        end('twice', 40, 2),
        // Still running (no end, its process alive) when another worker starts it.
        start('overlap', 10, 3),
        start('overlap', 25, 4),
        end('overlap', 35, 4),
        start('after-abort', 10),
        abort('after-abort', 12),
        start('after-abort', 13, 5),
        end('after-abort', 20, 5),
      ],
      kills: new Map([[3, 30]]),
    })
    expect(verdict.lost).toEqual([
      { jobId: 'lost', status: 'FAILED' },
      { jobId: 'gone', status: 'MISSING' },
    ])
    expect(verdict.completedUnrun).toEqual(['ghost'])
    expect(verdict.overlapping).toEqual(['overlap'])
    expect(verdict.extraRuns).toBe(3)
    expect(verdict.explainedByCrash).toBe(1)
    expect(verdict.unexplained).toEqual([
      { jobId: 'twice', after: 'ended' },
      { jobId: 'after-abort', after: 'aborted' },
    ])
  })

  it('explains a re-run after a run that ended when its process was killed before the job ran again', () => {
    // The rig saw the worker busy and killed it; the handler returned in between, and its result
    // died with the process. A kill after the next run began explains nothing.
    const verdict = judgeRuns({
      accepted: new Set(['undelivered', 'late-kill']),
      statuses: new Map([
        ['undelivered', 'COMPLETED'],
        ['late-kill', 'COMPLETED'],
      ]),
      events: [
        start('undelivered', 10, 1),
        end('undelivered', 20, 1),
        start('undelivered', 90, 2),
        end('undelivered', 95, 2),
        start('late-kill', 10, 3),
        end('late-kill', 20, 3),
        start('late-kill', 40, 4),
        end('late-kill', 45, 4),
      ],
      kills: new Map([
        [1, 21],
        [3, 50],
      ]),
    })
    expect(verdict.extraRuns).toBe(2)
    expect(verdict.explainedByCrash).toBe(1)
    expect(verdict.unexplained).toEqual([{ jobId: 'late-kill', after: 'ended' }])
  })

  it('takes a run of a process that was never killed and never ended as possibly still going', () => {
    const verdict = judgeRuns({
      accepted: new Set(['j']),
      statuses: new Map([['j', 'COMPLETED']]),
      events: [start('j', 1, 1), start('j', 100, 2), end('j', 110, 2)],
      kills: new Map(),
    })
    expect(verdict.overlapping).toEqual(['j'])
    expect(verdict.unexplained).toEqual([{ jobId: 'j', after: 'unknown' }])
  })
})
