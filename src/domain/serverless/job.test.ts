import { describe, expect, it } from 'vitest'
import {
  DEFAULT_EXECUTION_TIMEOUT_MS,
  DEFAULT_TTL_MS,
  JOB_STATUSES,
  MAX_EXECUTION_TIMEOUT_MS,
  MAX_TTL_MS,
  MIN_EXECUTION_TIMEOUT_MS,
  MIN_TTL_MS,
  RUN_RESULT_RETENTION_MS,
  SYNC_RESULT_RETENTION_MS,
  isTerminal,
  jobTimings,
  newJob,
  nextStatus,
  resolvePolicy,
  resultRetentionMs,
  retried,
  type JobEvent,
} from './job.js'

describe('policy bounds', () => {
  it('are the documented values', () => {
    expect(MIN_EXECUTION_TIMEOUT_MS).toBe(5_000)
    expect(MAX_EXECUTION_TIMEOUT_MS).toBe(604_800_000)
    expect(DEFAULT_EXECUTION_TIMEOUT_MS).toBe(600_000)
    expect(MIN_TTL_MS).toBe(10_000)
    expect(MAX_TTL_MS).toBe(604_800_000)
    expect(DEFAULT_TTL_MS).toBe(86_400_000)
    expect(RUN_RESULT_RETENTION_MS).toBe(1_800_000)
    expect(SYNC_RESULT_RETENTION_MS).toBe(60_000)
    expect(resultRetentionMs(true)).toBe(60_000)
    expect(resultRetentionMs(false)).toBe(1_800_000)
  })

  it('fills in defaults', () => {
    expect(resolvePolicy(undefined)).toEqual({
      policy: { executionTimeout: 600_000, ttl: 86_400_000, lowPriority: false },
      problems: [],
    })
    expect(resolvePolicy({}, { defaultExecutionTimeout: 30_000 }).policy?.executionTimeout).toBe(
      30_000,
    )
    expect(resolvePolicy({ lowPriority: true }).policy?.lowPriority).toBe(true)
  })

  it.each([
    ['executionTimeout', MIN_EXECUTION_TIMEOUT_MS, true],
    ['executionTimeout', MIN_EXECUTION_TIMEOUT_MS - 1, false],
    ['executionTimeout', MAX_EXECUTION_TIMEOUT_MS, true],
    ['executionTimeout', MAX_EXECUTION_TIMEOUT_MS + 1, false],
    ['ttl', MIN_TTL_MS, true],
    ['ttl', MIN_TTL_MS - 1, false],
    ['ttl', MAX_TTL_MS, true],
    ['ttl', MAX_TTL_MS + 1, false],
  ] as const)('%s = %d is accepted: %s', (field, value, ok) => {
    const result = resolvePolicy({ [field]: value })
    if (ok) {
      expect(result.problems).toEqual([])
      expect(result.policy?.[field]).toBe(value)
    } else {
      const [min, max] =
        field === 'ttl'
          ? [MIN_TTL_MS, MAX_TTL_MS]
          : [MIN_EXECUTION_TIMEOUT_MS, MAX_EXECUTION_TIMEOUT_MS]
      expect(result.policy).toBeUndefined()
      expect(result.problems).toEqual([`body.policy.${field}: must be between ${min} and ${max}`])
    }
  })

  it('names every bad field', () => {
    expect(
      resolvePolicy({ ttl: 1.5, executionTimeout: '10', lowPriority: 'yes' }).problems,
    ).toEqual([
      'body.policy.executionTimeout: must be an integer number of milliseconds, got "10"',
      'body.policy.ttl: must be an integer number of milliseconds, got 1.5',
      'body.policy.lowPriority: must be a boolean, got "yes"',
    ])
    expect(resolvePolicy([], { field: 'policy' }).problems).toEqual(['policy: must be an object'])
    expect(resolvePolicy({ ttl: 5_000 }, { field: 'policy' }).problems).toEqual([
      'policy.ttl: must be between 10000 and 604800000',
    ])
  })
})

describe('the job state machine', () => {
  const allowed: Record<JobEvent, string> = {
    take: 'IN_QUEUE>IN_PROGRESS',
    progress: 'IN_PROGRESS>IN_PROGRESS',
    stream: 'IN_PROGRESS>IN_PROGRESS',
    complete: 'IN_PROGRESS>COMPLETED',
    fail: 'IN_PROGRESS>FAILED',
    timeout: 'IN_PROGRESS>TIMED_OUT',
    leaseLost: 'IN_PROGRESS>IN_QUEUE',
    cancel: 'IN_QUEUE>CANCELLED IN_PROGRESS>CANCELLED',
    retry: 'FAILED>IN_QUEUE TIMED_OUT>IN_QUEUE',
  }

  it.each(Object.entries(allowed))('%s moves only %s', (event, moves) => {
    const actual = JOB_STATUSES.flatMap((from) => {
      const to = nextStatus(from, event as JobEvent)
      return to === undefined ? [] : [`${from}>${to}`]
    })
    expect(actual.join(' ')).toBe(moves)
  })

  it('knows the terminal statuses', () => {
    expect(JOB_STATUSES.filter(isTerminal)).toEqual([
      'COMPLETED',
      'FAILED',
      'CANCELLED',
      'TIMED_OUT',
    ])
  })

  it('retries with the same id and input, output cleared, counted', () => {
    const job = {
      ...newJob({
        id: 'j1',
        endpointId: 'ep',
        accountId: 'acct',
        input: { a: 1 },
        policy: { executionTimeout: 600_000, ttl: 86_400_000, lowPriority: false },
        sync: false,
        createdAt: new Date('2026-01-01T00:00:00.000Z'),
      }),
      status: 'FAILED' as const,
      output: { partial: true },
      error: 'boom',
      workerId: 'w1',
      startedAt: '2026-01-01T00:00:01.000Z',
      completedAt: '2026-01-01T00:00:02.000Z',
    }
    const again = retried(job)!
    expect(again).toMatchObject({ id: 'j1', input: { a: 1 }, status: 'IN_QUEUE', retries: 1 })
    expect(again.output).toBeUndefined()
    expect(again.error).toBeUndefined()
    expect(again.workerId).toBeUndefined()
    expect(retried({ ...job, status: 'COMPLETED' })).toBeUndefined()
  })

  it('counts the ttl from submission and times the job', () => {
    const job = newJob({
      id: 'j1',
      endpointId: 'ep',
      accountId: 'acct',
      input: {},
      policy: { executionTimeout: 600_000, ttl: 10_000, lowPriority: false },
      sync: true,
      createdAt: new Date('2026-01-01T00:00:00.000Z'),
    })
    expect(job.expiresAt).toBe('2026-01-01T00:00:10.000Z')
    expect(jobTimings(job, new Date('2026-01-01T00:00:03.000Z'))).toEqual({
      delayTime: 3_000,
      executionTime: 0,
    })
    expect(
      jobTimings(
        { ...job, startedAt: '2026-01-01T00:00:01.000Z', completedAt: '2026-01-01T00:00:04.500Z' },
        new Date('2026-01-01T00:01:00.000Z'),
      ),
    ).toEqual({ delayTime: 1_000, executionTime: 3_500 })
  })
})
