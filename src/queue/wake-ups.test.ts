import { describe, expect, it } from 'vitest'
import { ManualClock } from '../shared/clock.js'
import { WakeUps } from './wake-ups.js'

describe('WakeUps', () => {
  it('answers at once when the check already holds', async () => {
    const wakeUps = new WakeUps()
    expect(await wakeUps.waitUntil('k', async () => true, 10_000, 10_000)).toBe(true)
  })

  it('re-checks when notified, long before the poll interval', async () => {
    const clock = new ManualClock(0)
    const wakeUps = new WakeUps(clock)
    let ready = false
    let checks = 0
    let answer: boolean | undefined
    const waiting = wakeUps
      .waitUntil(
        'k',
        async () => {
          checks++
          return ready
        },
        10_000,
        10_000,
      )
      .then((result) => (answer = result))
    await clock.advanceAsync(20)
    expect(answer).toBeUndefined()
    ready = true
    wakeUps.notify('other') // another key wakes nobody here
    await clock.advanceAsync(0)
    expect(answer).toBeUndefined()
    wakeUps.notify('k')
    await waiting
    // Answered by the notification: the clock is where it was, far from the poll interval.
    expect(answer).toBe(true)
    expect(clock.now().getTime()).toBe(20)
    expect(checks).toBe(2)
  })

  it('re-checks every poll interval without notifications, and times out', async () => {
    const clock = new ManualClock(0)
    const wakeUps = new WakeUps(clock)
    let checks = 0
    let answer: boolean | undefined
    const waiting = wakeUps
      .waitUntil(
        'k',
        async () => {
          checks++
          return false
        },
        200,
        40,
      )
      .then((result) => (answer = result))
    await clock.advanceAsync(199)
    // Checked at 0, 40, 80, 120 and 160 ms of the clock; still waiting.
    expect(checks).toBe(5)
    expect(answer).toBeUndefined()
    await clock.advanceAsync(1)
    await waiting
    expect(answer).toBe(false)
    expect(checks).toBe(6)
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
