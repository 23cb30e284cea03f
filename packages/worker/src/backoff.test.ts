import { describe, expect, it } from 'vitest'
import { backoffDelayMs, MAX_RETRY_AFTER_MS, retryAfterMs } from './backoff.js'

describe('backoffDelayMs', () => {
  const highest = () => 0.999_999_999
  const lowest = () => 0

  it('doubles from 250 ms and stays at 5 s from the sixth retry on', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 20, 1000].map((retry) => backoffDelayMs(retry, highest))).toEqual([
      250, 500, 1_000, 2_000, 4_000, 5_000, 5_000, 5_000, 5_000,
    ])
  })

  it('draws each delay between half and all of its ceiling', () => {
    expect([1, 2, 6].map((retry) => backoffDelayMs(retry, lowest))).toEqual([125, 250, 2_500])
    expect(backoffDelayMs(3, () => 0.5)).toBe(750)
    for (let i = 0; i < 1_000; i++) {
      const delay = backoffDelayMs(4)
      expect(delay).toBeGreaterThanOrEqual(1_000)
      expect(delay).toBeLessThanOrEqual(2_000)
    }
  })

  it('treats a retry number below 1 as the first retry', () => {
    expect(backoffDelayMs(0, highest)).toBe(250)
  })
})

describe('retryAfterMs', () => {
  const now = Date.parse('2026-03-01T12:00:00Z')

  it('reads seconds, fractional or whole', () => {
    expect(retryAfterMs('2', now)).toBe(2_000)
    expect(retryAfterMs(' 0.5 ', now)).toBe(500)
    expect(retryAfterMs('0', now)).toBe(0)
    expect(retryAfterMs(['3', '9'], now)).toBe(3_000)
  })

  it('reads an HTTP date as the time until it, never negative', () => {
    expect(retryAfterMs('Sun, 01 Mar 2026 12:00:10 GMT', now)).toBe(10_000)
    expect(retryAfterMs('Sun, 01 Mar 2026 11:59:00 GMT', now)).toBe(0)
  })

  it('caps what it reads at 5 minutes', () => {
    expect(retryAfterMs('86400', now)).toBe(MAX_RETRY_AFTER_MS)
    expect(MAX_RETRY_AFTER_MS).toBe(300_000)
  })

  it('is undefined when absent or not understood', () => {
    for (const header of [undefined, '', '  ', '-1', 'soon', '1e3', '12abc']) {
      expect(retryAfterMs(header, now)).toBeUndefined()
    }
  })
})
