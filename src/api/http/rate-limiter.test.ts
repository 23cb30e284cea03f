import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../shared/clock.js'
import { RateLimiter, rateLimitHeader, rateLimitPolicyHeader } from './rate-limiter.js'

describe('RateLimiter', () => {
  const quotas = { minute: 3, hour: 5, day: 100 }

  it('counts per account and refuses past the minute quota until the minute turns', () => {
    const clock = new ManualClock('2026-01-01T10:00:50.000Z')
    const limiter = new RateLimiter(quotas, clock)
    expect([1, 2, 3].map(() => limiter.consume('a').allowed)).toEqual([true, true, true])
    const refused = limiter.consume('a')
    expect(refused.allowed).toBe(false)
    expect(refused.exhausted).toMatchObject({ name: 'minute', remaining: 0, resetSeconds: 10 })
    expect(limiter.consume('b').allowed).toBe(true)

    clock.set('2026-01-01T10:00:59.999Z')
    expect(limiter.consume('a').allowed).toBe(false)
    clock.set('2026-01-01T10:01:00.000Z')
    const next = limiter.consume('a')
    expect(next.allowed).toBe(true)
    expect(next.windows.find((w) => w.name === 'minute')).toMatchObject({
      remaining: 2,
      resetSeconds: 60,
    })
  })

  it('does not count refused requests', () => {
    const clock = new ManualClock('2026-01-01T10:00:00.000Z')
    const limiter = new RateLimiter(quotas, clock)
    for (let i = 0; i < 3; i++) limiter.consume('a')
    for (let i = 0; i < 10; i++) limiter.consume('a')
    clock.advance(60_000)
    expect(limiter.consume('a').windows.find((w) => w.name === 'hour')!.remaining).toBe(1)
  })

  it('reports the hour window when it is the one exhausted, with its own reset', () => {
    const clock = new ManualClock('2026-01-01T10:58:00.000Z')
    const limiter = new RateLimiter(quotas, clock)
    for (let i = 0; i < 3; i++) limiter.consume('a')
    clock.advance(60_000)
    for (let i = 0; i < 2; i++) limiter.consume('a')
    const refused = limiter.consume('a')
    expect(refused.allowed).toBe(false)
    expect(refused.exhausted).toMatchObject({ name: 'hour', resetSeconds: 60 })
    clock.set('2026-01-01T11:00:00.000Z')
    expect(limiter.consume('a').allowed).toBe(true)
  })

  it('formats RateLimit and RateLimit-Policy as structured-field lists', () => {
    const clock = new ManualClock('2026-01-01T10:00:48.000Z')
    const decision = new RateLimiter({ minute: 60, hour: 3000, day: 50000 }, clock).consume('a')
    expect(rateLimitHeader(decision.windows)).toBe(
      '"minute";r=59;t=12, "hour";r=2999;t=3552, "day";r=49999;t=50352',
    )
    expect(rateLimitPolicyHeader(decision.windows)).toBe(
      '"minute";q=60;w=60, "hour";q=3000;w=3600, "day";q=50000;w=86400',
    )
  })
})
