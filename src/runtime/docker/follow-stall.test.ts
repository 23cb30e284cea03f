import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { FollowStallWatch, STALL_MAX_CHECK_MS, type LogTime } from './follow-stall.js'

describe('FollowStallWatch', () => {
  beforeEach(() => vi.useFakeTimers())
  afterEach(() => vi.useRealTimers())

  /** A watch over an engine whose newest line is `engine.newest`; counts the asks. */
  function watched(newest: LogTime | undefined) {
    const engine = { newest, asked: 0, stalls: 0 }
    const watch = new FollowStallWatch(
      async () => {
        engine.asked++
        return engine.newest
      },
      () => engine.stalls++,
      1_000,
    )
    return { engine, watch }
  }

  it('calls a follow stalled when the engine holds a newer line at two checks running and nothing came', async () => {
    const { engine, watch } = watched([5_000, 0])
    watch.heard([4_000, 0])
    watch.waiting()
    await vi.advanceTimersByTimeAsync(1_000)
    expect(engine.stalls).toBe(0)
    await vi.advanceTimersByTimeAsync(1_000)
    expect(engine.stalls).toBe(1)
    watch.stop()
  })

  it('does not, when a line newer than those sent comes between the checks', async () => {
    const { engine, watch } = watched([5_000, 0])
    watch.heard([4_000, 0])
    watch.waiting()
    await vi.advanceTimersByTimeAsync(1_000)
    // Behind the engine still, but moving: a follow catching up, not a stalled one.
    watch.heard([4_500, 0])
    watch.waiting()
    await vi.advanceTimersByTimeAsync(1_500)
    expect(engine.stalls).toBe(0)
    watch.stop()
  })

  it('does not count the silence while the follower hands lines to a slow client', async () => {
    const { engine, watch } = watched([5_000, 0])
    watch.heard([4_000, 0])
    await vi.advanceTimersByTimeAsync(10_000)
    expect(engine.stalls).toBe(0)
    expect(engine.asked).toBe(0)
    watch.stop()
  })

  it('leaves an idle log alone, asking less and less often', async () => {
    const { engine, watch } = watched([4_000, 7])
    watch.heard([4_000, 7])
    watch.waiting()
    await vi.advanceTimersByTimeAsync(1_000 + 2_000 + 4_000 + 8_000)
    expect(engine.asked).toBe(4)
    await vi.advanceTimersByTimeAsync(10 * STALL_MAX_CHECK_MS)
    expect(engine.asked).toBeLessThanOrEqual(4 + 10 + 1)
    expect(engine.stalls).toBe(0)
    watch.stop()
  })

  it('calls a follow that never sent a line stalled when the engine has one', async () => {
    const { engine, watch } = watched([5_000, 0])
    await vi.advanceTimersByTimeAsync(2_000)
    expect(engine.stalls).toBe(1)
    watch.stop()
  })

  it('compares times to the nanosecond', async () => {
    const { engine, watch } = watched([5_000, 2])
    watch.heard([5_000, 1])
    watch.waiting()
    await vi.advanceTimersByTimeAsync(2_000)
    expect(engine.stalls).toBe(1)
    watch.stop()
  })

  it('asks nothing once stopped', async () => {
    const { engine, watch } = watched([5_000, 0])
    watch.stop()
    await vi.advanceTimersByTimeAsync(10_000)
    expect(engine.asked).toBe(0)
  })
})
