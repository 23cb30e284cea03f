import { describe, expect, it } from 'vitest'
import {
  afterAttempt,
  attemptOutcome,
  attemptView,
  DEFAULT_WEBHOOK_RETRY_DELAY_MS,
  deliveryView,
  WEBHOOK_ERRORS,
  WEBHOOK_MAX_ATTEMPTS,
} from './webhook-delivery.js'

describe('webhook delivery rules', () => {
  it('counts only HTTP 200 as delivered', () => {
    expect(attemptOutcome({ httpStatus: 200 })).toBe('delivered')
    for (const httpStatus of [201, 204, 301, 302, 400, 404, 500, 503]) {
      expect(attemptOutcome({ httpStatus })).toBe('failed')
    }
    expect(attemptOutcome({ error: WEBHOOK_ERRORS.noAnswer, detail: 'ECONNREFUSED' })).toBe(
      'failed',
    )
  })

  it('tries three times in all (the first and 2 more), 10 s apart by default', () => {
    expect(WEBHOOK_MAX_ATTEMPTS).toBe(3)
    expect(DEFAULT_WEBHOOK_RETRY_DELAY_MS).toBe(10_000)
    expect(afterAttempt(1, 'failed', 1_000, 10_000)).toEqual({
      status: 'pending',
      nextAttemptAt: 11_000,
    })
    expect(afterAttempt(2, 'failed', 11_000, 10_000)).toEqual({
      status: 'pending',
      nextAttemptAt: 21_000,
    })
    expect(afterAttempt(3, 'failed', 21_000, 10_000)).toEqual({
      status: 'failed',
      nextAttemptAt: null,
    })
  })

  it('is delivered at whichever attempt gets a 200', () => {
    for (const attempt of [1, 2, 3]) {
      expect(afterAttempt(attempt, 'delivered', 5, 10_000)).toEqual({
        status: 'delivered',
        nextAttemptAt: null,
      })
    }
  })

  describe('what the account reads of an attempt', () => {
    const at = '2026-03-01T00:00:01.500Z'

    it('shows the status and duration of an answer', () => {
      expect(
        attemptView({ attempt: 1, at, durationMs: 12.6, httpStatus: 500, outcome: 'failed' }),
      ).toEqual({ attempt: 1, at, outcome: 'failed', httpStatus: 500, durationMs: 13 })
    })

    it('shows only the class of a failure without an answer, never its duration', () => {
      for (const error of Object.values(WEBHOOK_ERRORS)) {
        expect(
          attemptView({ attempt: 2, at, durationMs: 9_999, error, outcome: 'failed' }),
        ).toEqual({ attempt: 2, at, outcome: 'failed', error })
      }
    })

    it('never shows details an older row may hold', () => {
      const view = attemptView({
        attempt: 1,
        at,
        durationMs: 3,
        error: 'ECONNREFUSED: connect ECONNREFUSED 10.0.0.7:6379',
        outcome: 'failed',
      })
      expect(view).toEqual({ attempt: 1, at, outcome: 'failed', error: WEBHOOK_ERRORS.noAnswer })
    })

    it('leaves the account id out of a delivery', () => {
      const view = deliveryView({
        id: 1,
        jobId: 'j',
        endpointId: 'e',
        accountId: 'acct_1',
        url: 'https://hooks.example.com/x',
        jobStatus: 'COMPLETED',
        status: 'failed',
        createdAt: at,
        finishedAt: at,
        attempts: [],
      })
      expect(view).not.toHaveProperty('accountId')
      expect(view).toMatchObject({ id: 1, url: 'https://hooks.example.com/x', attempts: [] })
    })
  })
})
