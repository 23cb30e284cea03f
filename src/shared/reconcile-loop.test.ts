import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { ManualClock } from './clock.js'
import { ReconcileLoop } from './reconcile-loop.js'

describe('ReconcileLoop', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 })
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  /** A loop whose passes take `passMs` each and record when they started. */
  function loopOf(options: {
    intervalMs: number
    minGapMs?: number
    passMs?: number
    asks?: () => number | void
  }) {
    const starts: number[] = []
    const errors: unknown[] = []
    let fail = false
    const loop = new ReconcileLoop({
      intervalMs: options.intervalMs,
      ...(options.minGapMs !== undefined ? { minGapMs: options.minGapMs } : {}),
      onError: (error) => errors.push(error),
      pass: async () => {
        starts.push(Date.now())
        if (options.passMs) await new Promise((resolve) => setTimeout(resolve, options.passMs))
        if (fail) throw new Error('pass failed')
        const wakeInMs = options.asks?.()
        return typeof wakeInMs === 'number' ? { wakeInMs } : undefined
      },
    })
    return { loop, starts, errors, failNext: (value: boolean) => (fail = value) }
  }

  it('passes every interval after the previous pass ends, the first after one interval', async () => {
    const { loop, starts } = loopOf({ intervalMs: 1000, passMs: 100 })
    loop.start()
    await vi.advanceTimersByTimeAsync(3500)
    expect(starts).toEqual([1000, 2100, 3200])
    await loop.stop()
  })

  it('starts with a pass at once when asked', async () => {
    const { loop, starts } = loopOf({ intervalMs: 1000 })
    loop.start({ immediate: true })
    await vi.advanceTimersByTimeAsync(1500)
    expect(starts).toEqual([0, 1000])
    await loop.stop()
  })

  it('runs a nudged pass at once, and coalesces nudges during a pass into one pass after it', async () => {
    const { loop, starts } = loopOf({ intervalMs: 10_000, passMs: 100 })
    loop.start()
    loop.nudge()
    await vi.advanceTimersByTimeAsync(50)
    expect(starts).toEqual([0])
    loop.nudge()
    loop.nudge()
    loop.nudge()
    await vi.advanceTimersByTimeAsync(500)
    // One more pass, right after the first ended (a timer of 0 fires after 1 ms); never two at once.
    expect(starts).toEqual([0, 101])
    await loop.stop()
  })

  it('keeps nudged passes minGapMs apart', async () => {
    const { loop, starts } = loopOf({ intervalMs: 10_000, minGapMs: 50 })
    loop.start()
    loop.nudge()
    await vi.advanceTimersByTimeAsync(1)
    loop.nudge()
    await vi.advanceTimersByTimeAsync(200)
    expect(starts).toEqual([0, 50])
    await loop.stop()
  })

  it('takes the sooner of the interval and the delay a pass asks for', async () => {
    let asks: number | undefined = 300
    const { loop, starts } = loopOf({ intervalMs: 1000, asks: () => asks })
    loop.start({ immediate: true })
    await vi.advanceTimersByTimeAsync(10)
    asks = undefined
    await vi.advanceTimersByTimeAsync(1400)
    expect(starts).toEqual([0, 300, 1300])
    await loop.stop()
  })

  it('wakeIn brings the next pass forward and never pushes it back', async () => {
    const { loop, starts } = loopOf({ intervalMs: 1000 })
    loop.start()
    loop.wakeIn(200)
    loop.wakeIn(5000)
    await vi.advanceTimersByTimeAsync(300)
    expect(starts).toEqual([200])
    await loop.stop()
  })

  it('hands a failed pass to onError and goes on', async () => {
    const { loop, starts, errors, failNext } = loopOf({ intervalMs: 100 })
    failNext(true)
    loop.start()
    await vi.advanceTimersByTimeAsync(150)
    failNext(false)
    await vi.advanceTimersByTimeAsync(100)
    expect(errors).toHaveLength(1)
    expect(starts).toEqual([100, 200])
    await loop.stop()
  })

  it('stop waits for the pass under way, and nothing runs afterwards, nudged or not', async () => {
    const { loop, starts } = loopOf({ intervalMs: 100, passMs: 500 })
    loop.start({ immediate: true })
    await vi.advanceTimersByTimeAsync(10)
    let stopped = false
    const stopping = loop.stop().then(() => (stopped = true))
    loop.nudge()
    await vi.advanceTimersByTimeAsync(400)
    expect(stopped).toBe(false)
    await vi.advanceTimersByTimeAsync(100)
    await stopping
    expect(stopped).toBe(true)
    loop.nudge()
    await vi.advanceTimersByTimeAsync(5000)
    expect(starts).toEqual([0])
  })

  it('runOnce runs a pass now, or waits for the one under way', async () => {
    const { loop, starts } = loopOf({ intervalMs: 1000, passMs: 100 })
    loop.start()
    const first = loop.runOnce()
    const second = loop.runOnce()
    await vi.advanceTimersByTimeAsync(100)
    await Promise.all([first, second])
    expect(starts).toEqual([0])
    await vi.advanceTimersByTimeAsync(1000)
    expect(starts).toEqual([0, 1100])
    const stopping = loop.stop()
    await vi.advanceTimersByTimeAsync(100)
    await stopping
  })
})

describe('ReconcileLoop on a ManualClock', () => {
  const START = Date.parse('2026-01-01T00:00:00.000Z')

  /**
   * A loop whose timers wait on `clock`, and whose passes take `passMs` of that clock each
   * (a timer of its own); `starts` are the clock's times when passes began, from START.
   */
  function loopOn(clock: ManualClock, options: { intervalMs: number; passMs?: number }) {
    const starts: number[] = []
    let running = 0
    let overlapped = false
    const loop = new ReconcileLoop({
      clock,
      intervalMs: options.intervalMs,
      onError: (error) => {
        throw error
      },
      pass: async () => {
        starts.push(clock.now().getTime() - START)
        if (++running > 1) overlapped = true
        if (options.passMs)
          await new Promise<void>((resolve) => clock.setTimer(options.passMs!, resolve))
        running--
      },
    })
    return { loop, starts, overlapped: () => overlapped }
  }

  it('runs its passes as the clock is moved, at the clock’s times, and none in between', async () => {
    const clock = new ManualClock(START)
    const { loop, starts } = loopOn(clock, { intervalMs: 60_000 })
    loop.start()
    await clock.advanceAsync(59_999)
    expect(starts).toEqual([])
    await clock.advanceAsync(1)
    expect(starts).toEqual([60_000])
    // Ten minutes of the clock in one step: each pass at its time, one interval after the last.
    await clock.advanceAsync(600_000)
    expect(starts).toEqual(Array.from({ length: 11 }, (_, i) => 60_000 * (i + 1)))
    await loop.stop()
    expect(clock.pendingTimers).toBe(0)
    await clock.advanceAsync(600_000)
    expect(starts).toHaveLength(11)
  })

  it('counts the interval from the end of a pass that takes the clock’s time, never two at once', async () => {
    const clock = new ManualClock(START)
    const { loop, starts, overlapped } = loopOn(clock, { intervalMs: 1000, passMs: 250 })
    loop.start({ immediate: true })
    loop.nudge()
    await clock.advanceAsync(100)
    loop.nudge()
    await clock.advanceAsync(2400)
    // The nudges during the first pass make one pass right after it; then the interval.
    expect(starts).toEqual([0, 250, 1500])
    expect(overlapped()).toBe(false)
    const stopping = loop.stop()
    await clock.advanceAsync(250)
    await stopping
  })

  it('wakes when asked on the clock, sooner than the interval', async () => {
    const clock = new ManualClock(START)
    const { loop, starts } = loopOn(clock, { intervalMs: 3_600_000 })
    loop.start()
    loop.wakeIn(30_000)
    await clock.advanceAsync(29_999)
    expect(starts).toEqual([])
    await clock.advanceAsync(1)
    expect(starts).toEqual([30_000])
    await loop.stop()
  })
})
