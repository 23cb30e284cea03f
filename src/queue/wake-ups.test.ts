import { describe, expect, it } from 'vitest'
import { WakeUps } from './wake-ups.js'

describe('WakeUps', () => {
  it('answers at once when the check already holds', async () => {
    const wakeUps = new WakeUps()
    expect(await wakeUps.waitUntil('k', async () => true, 10_000, 10_000)).toBe(true)
  })

  it('re-checks when notified, long before the poll interval', async () => {
    const wakeUps = new WakeUps()
    let ready = false
    let checks = 0
    const started = Date.now()
    const waiting = wakeUps.waitUntil(
      'k',
      async () => {
        checks++
        return ready
      },
      10_000,
      10_000,
    )
    setTimeout(() => {
      ready = true
      wakeUps.notify('other') // another key wakes nobody here
      wakeUps.notify('k')
    }, 20)
    expect(await waiting).toBe(true)
    expect(Date.now() - started).toBeLessThan(1_000)
    expect(checks).toBe(2)
  })

  it('re-checks every poll interval without notifications, and times out', async () => {
    const wakeUps = new WakeUps()
    let checks = 0
    const started = Date.now()
    const result = await wakeUps.waitUntil(
      'k',
      async () => {
        checks++
        return false
      },
      200,
      40,
    )
    expect(result).toBe(false)
    expect(Date.now() - started).toBeGreaterThanOrEqual(190)
    expect(checks).toBeGreaterThanOrEqual(4)
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
