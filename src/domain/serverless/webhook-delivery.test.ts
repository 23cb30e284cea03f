import { describe, expect, it } from 'vitest'
import {
  afterAttempt,
  attemptOutcome,
  DEFAULT_WEBHOOK_RETRY_DELAY_MS,
  WEBHOOK_MAX_ATTEMPTS,
} from './webhook-delivery.js'

describe('webhook delivery rules', () => {
  it('counts only HTTP 200 as delivered', () => {
    expect(attemptOutcome({ httpStatus: 200 })).toBe('delivered')
    for (const httpStatus of [201, 204, 301, 302, 400, 404, 500, 503]) {
      expect(attemptOutcome({ httpStatus })).toBe('failed')
    }
    expect(attemptOutcome({ error: 'ECONNREFUSED' })).toBe('failed')
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
})
