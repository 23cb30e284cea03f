import { describe, expect, it } from 'vitest'
import {
  BASE_OPERATION_LIMITS,
  DEFAULT_PER_WORKER_CONCURRENCY,
  DEFAULT_PER_WORKER_RATE,
  effectiveLimit,
  LIMITED_OPERATIONS,
  OPERATION_WINDOW_MS,
} from '../../domain/serverless/operation-limits.js'
import { isAppError } from '../../shared/app-error.js'
import { ManualClock } from '../../shared/clock.js'
import { JobLimiter, limitExceeded, type AdmitDecision } from './job-limiter.js'

const EP = 'endpoint000001'
const refused = (decision: AdmitDecision) => {
  if (decision.allowed) throw new Error('expected a refusal')
  return decision
}

describe('serverless operation limits (spec "Limits > Serverless")', () => {
  it('has the spec table, 10 s windows, ours for /health and no limit for /retry', () => {
    expect(OPERATION_WINDOW_MS).toBe(10_000)
    expect(BASE_OPERATION_LIMITS).toEqual({
      runsync: { rate: 2000, concurrency: 400 },
      run: { rate: 1000, concurrency: 200 },
      status: { rate: 2000, concurrency: 400 },
      stream: { rate: 2000, concurrency: 400 },
      cancel: { rate: 100, concurrency: 20 },
      'purge-queue': { rate: 2 },
      openai: { rate: 2000, concurrency: 400 },
      requests: { rate: 10, concurrency: 2 },
      health: { rate: 100, concurrency: 10 },
    })
    expect(LIMITED_OPERATIONS).not.toContain('retry')
  })

  it('takes the higher of the base and running workers x the per-worker allowance', () => {
    const perWorker = { rate: 10, concurrency: 2 }
    const base = BASE_OPERATION_LIMITS.requests
    expect(effectiveLimit(base, 0, perWorker)).toEqual({ rate: 10, concurrency: 2 })
    expect(effectiveLimit(base, 1, perWorker)).toEqual({ rate: 10, concurrency: 2 })
    expect(effectiveLimit(base, 2, perWorker)).toEqual({ rate: 20, concurrency: 4 })
    // Without a concurrency limit there is none to scale.
    expect(effectiveLimit(BASE_OPERATION_LIMITS['purge-queue'], 3, perWorker)).toEqual({
      rate: 30,
    })
    expect(effectiveLimit(BASE_OPERATION_LIMITS.run, 100, perWorker)).toEqual({
      rate: 1000,
      concurrency: 200,
    })
    expect(effectiveLimit(BASE_OPERATION_LIMITS.run, 101, perWorker)).toEqual({
      rate: 1010,
      concurrency: 202,
    })
    expect(DEFAULT_PER_WORKER_RATE).toBe(10)
    expect(DEFAULT_PER_WORKER_CONCURRENCY).toBe(2)
  })
})

describe('JobLimiter', () => {
  it('allows the rate within a window and refuses the next, until the window ends', () => {
    const clock = new ManualClock('2026-01-01T00:00:00.000Z')
    const limiter = new JobLimiter({ clock })
    expect(limiter.admit(EP, 'purge-queue', 0).allowed).toBe(true)
    clock.advance(2_500)
    expect(limiter.admit(EP, 'purge-queue', 0).allowed).toBe(true)
    const third = refused(limiter.admit(EP, 'purge-queue', 0))
    expect(third).toMatchObject({ kind: 'rate', operation: 'purge-queue', limit: 2 })
    expect(third.retryAfterSeconds).toBe(8)
    // Just before the boundary: still refused, 1 s to wait at least.
    clock.set('2026-01-01T00:00:09.999Z')
    expect(refused(limiter.admit(EP, 'purge-queue', 0)).retryAfterSeconds).toBe(1)
    // At the boundary a new window starts.
    clock.set('2026-01-01T00:00:10.000Z')
    expect(limiter.admit(EP, 'purge-queue', 0).allowed).toBe(true)
    expect(limiter.admit(EP, 'purge-queue', 0).allowed).toBe(true)
    expect(refused(limiter.admit(EP, 'purge-queue', 0)).retryAfterSeconds).toBe(10)
  })

  it('counts per endpoint and per operation; a refused request does not count', () => {
    const clock = new ManualClock('2026-01-01T00:00:00.000Z')
    const limiter = new JobLimiter({ clock })
    for (let i = 0; i < 2; i++) limiter.admit(EP, 'purge-queue', 0)
    for (let i = 0; i < 5; i++) expect(limiter.admit(EP, 'purge-queue', 0).allowed).toBe(false)
    expect(limiter.admit('endpoint000002', 'purge-queue', 0).allowed).toBe(true)
    expect(limiter.admit(EP, 'run', 0).allowed).toBe(true)
    clock.advance(OPERATION_WINDOW_MS)
    expect(limiter.admit(EP, 'purge-queue', 0).allowed).toBe(true)
    expect(limiter.admit(EP, 'purge-queue', 0).allowed).toBe(true)
  })

  it('limits requests in flight, freeing a slot on release (once)', () => {
    const clock = new ManualClock()
    const limiter = new JobLimiter({ clock })
    const first = limiter.admit(EP, 'requests', 0)
    const second = limiter.admit(EP, 'requests', 0)
    expect(first.allowed && second.allowed).toBe(true)
    const third = refused(limiter.admit(EP, 'requests', 0))
    expect(third).toEqual({
      allowed: false,
      kind: 'concurrency',
      operation: 'requests',
      limit: 2,
      retryAfterSeconds: 1,
    })
    if (!first.allowed) throw new Error('unreachable')
    first.release()
    first.release()
    expect(limiter.admit(EP, 'requests', 0).allowed).toBe(true)
    expect(limiter.admit(EP, 'requests', 0).allowed).toBe(false)
  })

  it('keeps in-flight counts across a window boundary', () => {
    const clock = new ManualClock('2026-01-01T00:00:09.000Z')
    const limiter = new JobLimiter({ clock })
    const held = [limiter.admit(EP, 'requests', 0), limiter.admit(EP, 'requests', 0)]
    clock.advance(OPERATION_WINDOW_MS * 3)
    expect(refused(limiter.admit(EP, 'requests', 0)).kind).toBe('concurrency')
    for (const decision of held) if (decision.allowed) decision.release()
    expect(limiter.admit(EP, 'requests', 0).allowed).toBe(true)
  })

  it('raises the limits with running workers', () => {
    const clock = new ManualClock()
    const limiter = new JobLimiter({ clock, perWorker: { rate: 3, concurrency: 2 } })
    for (let i = 0; i < 6; i++) expect(limiter.admit(EP, 'purge-queue', 2).allowed).toBe(true)
    expect(refused(limiter.admit(EP, 'purge-queue', 2)).limit).toBe(6)
    // Fewer workers now: the base (2) is still below what was counted.
    expect(refused(limiter.admit(EP, 'purge-queue', 0)).limit).toBe(2)
    for (let i = 0; i < 4; i++) limiter.admit(EP, 'requests', 2)
    expect(refused(limiter.admit(EP, 'requests', 2))).toMatchObject({
      kind: 'concurrency',
      limit: 4,
    })
  })

  it('takes overrides of the base limits from the configuration', () => {
    const limiter = new JobLimiter({
      clock: new ManualClock(),
      overrides: { status: { concurrency: 1 }, run: { rate: 1 } },
    })
    expect(limiter.baseLimit('status')).toEqual({ rate: 2000, concurrency: 1 })
    expect(limiter.baseLimit('run')).toEqual({ rate: 1, concurrency: 200 })
    expect(limiter.admit(EP, 'run', 0).allowed).toBe(true)
    expect(refused(limiter.admit(EP, 'run', 0)).kind).toBe('rate')
  })

  it("adds the other replicas' use as last synced to its own (docs/production.md)", () => {
    const clock = new ManualClock('2026-01-01T00:00:03.000Z')
    const limiter = new JobLimiter({ clock })
    const window = Date.parse('2026-01-01T00:00:00.000Z')
    limiter.setOthers([
      { endpointId: EP, operation: 'cancel', windowStart: window, count: 60, inFlight: 5 },
      { endpointId: EP, operation: 'cancel', windowStart: window, count: 39, inFlight: 14 },
      // A replica still in the previous window: its count is of no window that matters now.
      { endpointId: EP, operation: 'cancel', windowStart: window - 10_000, count: 50, inFlight: 0 },
    ])
    // cancel: 100 per window, 20 in flight; the others hold 99 and 19.
    const last = limiter.admit(EP, 'cancel', 0)
    expect(last.allowed).toBe(true)
    expect(refused(limiter.admit(EP, 'cancel', 0))).toMatchObject({ kind: 'rate', limit: 100 })
    expect(limiter.usage()).toEqual([
      { endpointId: EP, operation: 'cancel', windowStart: window, count: 1, inFlight: 1 },
    ])
    // Next window: the others' counts are of the past; their requests in flight still count.
    clock.advance(10_000)
    expect(refused(limiter.admit(EP, 'cancel', 0))).toMatchObject({ kind: 'concurrency' })
    if (last.allowed) last.release()
    expect(limiter.admit(EP, 'cancel', 0).allowed).toBe(true)
    expect(limiter.usage()).toEqual([
      { endpointId: EP, operation: 'cancel', windowStart: window + 10_000, count: 1, inFlight: 1 },
    ])
  })

  it('turns a refusal into a 429 naming the operation, the limit and the window', () => {
    const rate = limitExceeded(EP, {
      allowed: false,
      kind: 'rate',
      operation: 'purge-queue',
      limit: 2,
      retryAfterSeconds: 7,
    })
    expect(isAppError(rate) && rate.code).toBe('RATE_LIMITED')
    expect(rate.retryAfterSeconds).toBe(7)
    expect(rate.detail).toBe(
      `rate limit exceeded for /purge-queue of endpoint ${EP}: 2 requests per 10 s window; retry in 7 s`,
    )
    const concurrency = limitExceeded(EP, {
      allowed: false,
      kind: 'concurrency',
      operation: 'openai',
      limit: 400,
      retryAfterSeconds: 1,
    })
    expect(concurrency.detail).toBe(
      `concurrency limit exceeded for /openai/* of endpoint ${EP}: 400 requests in flight at once; retry in 1 s`,
    )
  })
})
