import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
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
