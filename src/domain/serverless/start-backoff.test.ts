import { describe, expect, it } from 'vitest'
import { afterFailure, backoffDelayMs, mayStart } from './start-backoff.js'

describe('start backoff', () => {
  it('waits 1 s after a failure, doubling per failure in a row, at most 60 s', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 100].map((n) => backoffDelayMs(n))).toEqual([
      1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000,
    ])
    expect(backoffDelayMs(3, { initialMs: 500, maxMs: 1500 })).toBe(1500)
  })

  it('counts failures in a row and lets a start through once nextStartAt is reached', () => {
    const at = Date.parse('2026-03-01T12:00:00.000Z')
    const failure = { endpointId: 'ep', workerId: 'w1', reason: 'exited with code 1' }
    const first = afterFailure(undefined, failure, at)
    const second = afterFailure(first, { ...failure, workerId: 'w2' }, at + 1000)
    expect(second).toEqual({
      endpointId: 'ep',
      failures: 2,
      lastFailure: { workerId: 'w2', reason: 'exited with code 1', at: '2026-03-01T12:00:01.000Z' },
      nextStartAt: '2026-03-01T12:00:03.000Z',
    })
    expect(mayStart(undefined, at)).toBe(true)
    expect(mayStart(second, at + 2999)).toBe(false)
    expect(mayStart(second, at + 3000)).toBe(true)
  })
})
