import { describe, expect, it } from 'vitest'
import { ManualClock } from '../shared/clock.js'
import { WakeUps } from './wake-ups.js'

describe('WakeUps', () => {
  it('answers at once when the check already holds', async () => {
    const wakeUps = new WakeUps()
    expect(await wakeUps.waitUntil('k', async () => true, 10_000, 10_000)).toBe(true)
  })

  /**
   * A wait of key `k` on a ManualClock at 0 whose check answers `ready()`; `checks` counts the
   * checks, `answer` is what the wait resolved to (undefined while it waits).
   */
  function waitOnClock(ready: () => boolean, timeoutMs: number, pollIntervalMs: number) {
    const clock = new ManualClock(0)
    const wakeUps = new WakeUps(clock)
    const state = { checks: 0, answer: undefined as boolean | undefined }
    const check = async () => {
      state.checks++
      return ready()
    }
    const waiting = wakeUps
      .waitUntil('k', check, timeoutMs, pollIntervalMs)
      .then((result) => (state.answer = result))
    return { clock, wakeUps, state, waiting }
  }

  it('re-checks when notified, long before the poll interval', async () => {
    let ready = false
    const { clock, wakeUps, state, waiting } = waitOnClock(() => ready, 10_000, 10_000)
    await clock.advanceAsync(20)
    expect(state.answer).toBeUndefined()
    ready = true
    wakeUps.notify('other') // another key wakes nobody here
    await clock.advanceAsync(0)
    expect(state.answer).toBeUndefined()
    wakeUps.notify('k')
    await waiting
    // Answered by the notification: the clock is where it was, far from the poll interval.
    expect(state.answer).toBe(true)
    expect(clock.now().getTime()).toBe(20)
    expect(state.checks).toBe(2)
  })

  it('re-checks every poll interval without notifications, and times out', async () => {
    const { clock, state, waiting } = waitOnClock(() => false, 200, 40)
    await clock.advanceAsync(199)
    // Checked at 0, 40, 80, 120 and 160 ms of the clock; still waiting.
    expect(state.checks).toBe(5)
    expect(state.answer).toBeUndefined()
    await clock.advanceAsync(1)
    await waiting
    expect(state.answer).toBe(false)
    expect(state.checks).toBe(6)
  })

  it('sees a change made between its check and its sleep', async () => {
    const wakeUps = new WakeUps()
    let ready = false
    const waiting = wakeUps.waitUntil(
      'k',
      async () => {
        const now = ready
        if (!ready) {
          ready = true
          wakeUps.notify('k') // the write lands while the check is running
        }
        return now
      },
      10_000,
      10_000,
    )
    const started = Date.now()
    expect(await waiting).toBe(true)
    expect(Date.now() - started).toBeLessThan(1_000)
  })
})
