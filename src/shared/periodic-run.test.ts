import { describe, expect, it, vi } from 'vitest'
import { PeriodicRun } from './periodic-run.js'

describe('PeriodicRun', () => {
  it('never overlaps two passes, reports failures and keeps ticking, and stop waits for the pass under way', async () => {
    vi.useFakeTimers()
    try {
      let active = 0
      let maxActive = 0
      let passes = 0
      const errors: unknown[] = []
      let finishPass: () => void = () => {}
      const run = new PeriodicRun(
        async () => {
          passes += 1
          active += 1
          maxActive = Math.max(maxActive, active)
          if (passes === 1) throw new Error('first pass fails')
          await new Promise<void>((resolve) => {
            finishPass = resolve
          })
          active -= 1
        },
        10,
        (error) => {
          active -= 1
          errors.push(error)
        },
      )
      run.start()
      await vi.advanceTimersByTimeAsync(10)
      expect(errors).toHaveLength(1)
      await vi.advanceTimersByTimeAsync(10) // second pass starts and hangs
      await vi.advanceTimersByTimeAsync(50) // ticks while it runs are skipped
      expect(passes).toBe(2)
      let stopped = false
      const stopping = run.stop().then(() => {
        stopped = true
      })
      await vi.advanceTimersByTimeAsync(0)
      expect(stopped).toBe(false)
      finishPass()
      await stopping
      await vi.advanceTimersByTimeAsync(100)
      expect(passes).toBe(2)
      expect(maxActive).toBe(1)
    } finally {
      vi.useRealTimers()
    }
  })
})
