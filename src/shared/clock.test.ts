import { describe, expect, it } from 'vitest'
import { ManualClock } from './clock.js'

describe('ManualClock timers', () => {
  it('fires the timers due as the time moves, in the order they are due, each at its time', () => {
    const clock = new ManualClock(0)
    const fired: Array<[string, number]> = []
    const at = (name: string) => () => fired.push([name, clock.now().getTime()])
    clock.setTimer(300, at('c'))
    clock.setTimer(100, at('a'))
    clock.setTimer(100, at('b'))
    const cancelled = clock.setTimer(200, at('cancelled'))
    cancelled.cancel()
    clock.advance(250)
    expect(fired).toEqual([
      ['a', 100],
      ['b', 100],
    ])
    expect(clock.now().getTime()).toBe(250)
    clock.advance(50)
    expect(fired.at(-1)).toEqual(['c', 300])
    expect(clock.pendingTimers).toBe(0)
  })

  it('fires a timer set by a timer when it falls due within the same move', () => {
    const clock = new ManualClock(0)
    const fired: number[] = []
    clock.setTimer(10, () => {
      fired.push(clock.now().getTime())
      clock.setTimer(10, () => fired.push(clock.now().getTime()))
    })
    clock.advance(25)
    expect(fired).toEqual([10, 20])
  })

  it('lets asynchronous work started by a timer finish before the next is due', async () => {
    const clock = new ManualClock(0)
    const steps: string[] = []
    clock.setTimer(10, () => {
      void (async () => {
        await Promise.resolve()
        steps.push(`work done at ${clock.now().getTime()}`)
      })()
    })
    clock.setTimer(20, () => steps.push(`next timer at ${clock.now().getTime()}`))
    await clock.advanceAsync(30)
    expect(steps).toEqual(['work done at 10', 'next timer at 20'])
  })
})
