import { describe, expect, it } from 'vitest'
import { judgeGpu, memoryUsePercent, type GpuReading } from './gpu-health.js'

const fine: GpuReading = {
  index: 0,
  uuid: 'GPU-0',
  responding: true,
  utilPercent: 50,
  memoryUsedMib: 100,
  memoryTotalMib: 1000,
  temperatureC: 60,
  powerDrawW: 300,
  throttling: [],
  eccUncorrected: 0,
  retiredPagesPending: false,
  remappedRowsPending: false,
  remappedRowsFailure: false,
  xids: [],
}

describe('GPU health rules', () => {
  it('a GPU with nothing wrong, or unknown counters, is healthy', () => {
    expect(judgeGpu(fine)).toEqual({ healthy: true, problems: [], warnings: [] })
    const unknown = {
      ...fine,
      eccUncorrected: null,
      retiredPagesPending: null,
      remappedRowsPending: null,
    }
    expect(judgeGpu(unknown).healthy).toBe(true)
  })

  it.each([
    [{ responding: false }, 'not responding (lost from the bus or the driver)'],
    [{ eccUncorrected: 1 }, '1 uncorrectable ECC error'],
    [{ eccUncorrected: 3 }, '3 uncorrectable ECC errors'],
    [{ retiredPagesPending: true }, 'memory page retirement pending (needs a GPU reset)'],
    [{ remappedRowsPending: true }, 'row remapping pending (needs a GPU reset)'],
    [{ remappedRowsFailure: true }, 'row remapping failed (no spare memory rows left)'],
    [{ xids: [79, 79] }, 'XID 79'],
    [{ xids: [48] }, 'XID 48'],
  ] as Array<[Partial<GpuReading>, string]>)('%o is unhealthy: %s', (change, problem) => {
    expect(judgeGpu({ ...fine, ...change })).toMatchObject({ healthy: false, problems: [problem] })
  })

  it('throttling and application XIDs are warnings, not withdrawals', () => {
    const verdict = judgeGpu({ ...fine, throttling: ['hardware thermal slowdown'], xids: [13, 31] })
    expect(verdict.healthy).toBe(true)
    expect(verdict.warnings).toEqual([
      "XID 13, 31 (usually the application's fault)",
      'throttling: hardware thermal slowdown',
    ])
  })

  it('after a reset, only new ECC errors count', () => {
    expect(judgeGpu({ ...fine, eccUncorrected: 2 }, { eccUncorrected: 2 }).healthy).toBe(true)
    expect(judgeGpu({ ...fine, eccUncorrected: 3 }, { eccUncorrected: 2 }).problems).toEqual([
      '1 uncorrectable ECC error since the last reset',
    ])
  })

  it('memoryUtil is the share of the card in use, 0 when unknown', () => {
    expect(memoryUsePercent(fine)).toBe(10)
    expect(memoryUsePercent({ memoryUsedMib: null, memoryTotalMib: 1000 })).toBe(0)
    expect(memoryUsePercent({ memoryUsedMib: 5, memoryTotalMib: 0 })).toBe(0)
  })
})
