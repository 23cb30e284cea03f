import { describe, expect, it } from 'vitest'
import { demoFleet } from '../catalog/demo-fleet.js'
import type { Pod } from '../pods/pod.js'
import {
  accrue,
  MS_PER_BILLING_MONTH,
  MS_PER_HOUR,
  monthlyNanoOfHourly,
  NETWORK_VOLUME_LARGE_GB,
  networkVolumeRates,
  podRates,
  segmentsAcrossChange,
  sizeHistorySegments,
  workerHourlyPrice,
  workerRates,
} from './usage.js'

const T0 = Date.parse('2026-01-01T00:00:00.000Z')

const gpuPod = (status: Pod['status'], persistent?: number) =>
  ({
    status,
    hourlyPrice: 0.59,
    compute: { kind: 'gpu', gpuTypeId: 'NVIDIA GeForce RTX 4090', gpuCount: 1 },
    disk: 50,
    mounts: persistent ? { persistent: { size: persistent, path: '/workspace' } } : {},
  }) as const

describe('rates', () => {
  it('charges a running pod its hourly price and its disks at the running rates', () => {
    expect(podRates(gpuPod('RUNNING', 20))).toEqual({
      podGpu: 590_000_000 * 720,
      podDisk: 100_000_000 * 50 + 100_000_000 * 20,
    })
  })

  it('charges a stopped pod only its persistent volume, at the stopped rate', () => {
    expect(podRates(gpuPod('EXITED', 20))).toEqual({ podDisk: 200_000_000 * 20 })
    expect(podRates(gpuPod('ERROR'))).toEqual({})
    expect(podRates(gpuPod('TERMINATED', 20))).toEqual({})
  })

  it('puts a CPU pod under podCpu', () => {
    const pod = {
      ...gpuPod('RUNNING'),
      compute: { kind: 'cpu' as const, flavorId: 'cpu3c', vcpuCount: 2, memoryGb: 4 },
    }
    expect(Object.keys(podRates(pod))).toEqual(['podCpu', 'podDisk'])
  })

  it('prices network volumes by type, the whole volume at the large rate from 1 TB', () => {
    expect(networkVolumeRates('STANDARD', NETWORK_VOLUME_LARGE_GB - 1)).toEqual({
      storageStandard: 70_000_000 * 999,
    })
    expect(networkVolumeRates('STANDARD', NETWORK_VOLUME_LARGE_GB)).toEqual({
      storageStandard: 50_000_000 * 1000,
    })
    expect(networkVolumeRates('HIGH_PERFORMANCE', 10)).toEqual({
      storageHighPerformance: 140_000_000 * 10,
    })
    expect(networkVolumeRates('STANDARD', 0)).toEqual({})
  })

  it('prices workers at the serverless price of their GPUs or vCPUs', () => {
    const gpu = { gpuTypeId: 'NVIDIA GeForce RTX 4090', gpuCount: 2, cpuFlavorId: null, vcpus: 8 }
    expect(workerHourlyPrice(demoFleet.prices, gpu)).toBeCloseTo(2.2)
    const cpu = { gpuTypeId: null, gpuCount: 0, cpuFlavorId: 'cpu3c', vcpus: 4 }
    expect(workerHourlyPrice(demoFleet.prices, cpu)).toBeCloseTo(0.12)
    expect(workerRates(demoFleet.prices, cpu, 10)).toEqual({
      serverlessCpu: monthlyNanoOfHourly(0.12),
      serverlessDisk: 100_000_000 * 10,
    })
  })
})

describe('accrue', () => {
  it('charges an hour of a $0.59/h pod exactly 0.59 USD, in that hour', () => {
    const { accruals, carries } = accrue(
      [{ fromMs: T0, toMs: T0 + MS_PER_HOUR, rates: { podGpu: monthlyNanoOfHourly(0.59) } }],
      {},
    )
    expect(accruals).toEqual([{ category: 'podGpu', bucketStartMs: T0, amountNano: 590_000_000 }])
    expect(carries).toEqual({})
  })

  it('charges nothing for no time, and less than a nano-USD is carried, not lost', () => {
    const rate = { podDisk: 1 } // 1 nano-USD per billing month
    expect(accrue([{ fromMs: T0, toMs: T0, rates: rate }], {}).accruals).toEqual([])
    const half = accrue([{ fromMs: T0, toMs: T0 + MS_PER_BILLING_MONTH / 2, rates: rate }], {})
    expect(half.accruals).toEqual([])
    expect(half.carries).toEqual({ podDisk: MS_PER_BILLING_MONTH / 2 })
    const rest = accrue(
      [{ fromMs: T0, toMs: T0 + MS_PER_BILLING_MONTH / 2, rates: rate }],
      half.carries,
    )
    expect(rest.accruals.reduce((s, a) => s + a.amountNano, 0)).toBe(1)
    expect(rest.carries).toEqual({})
  })

  it('sums to the same total whatever the tick cadence', () => {
    const rates = { podGpu: monthlyNanoOfHourly(0.3333), podDisk: 100_000_000 * 7 }
    const span = 3 * MS_PER_HOUR + 12_345
    const once = accrue([{ fromMs: T0, toMs: T0 + span, rates }], {})
    let carries = {}
    let total = 0
    for (let at = T0; at < T0 + span; at += 7_777) {
      const step = accrue([{ fromMs: at, toMs: Math.min(at + 7_777, T0 + span), rates }], carries)
      carries = step.carries
      total += step.accruals.reduce((s, a) => s + a.amountNano, 0)
    }
    expect(total).toBe(once.accruals.reduce((s, a) => s + a.amountNano, 0))
    expect(carries).toEqual(once.carries)
  })

  it('splits a stretch at the hours', () => {
    const { accruals } = accrue(
      [
        {
          fromMs: T0 + MS_PER_HOUR / 2,
          toMs: T0 + 2 * MS_PER_HOUR,
          rates: { podCpu: monthlyNanoOfHourly(1) },
        },
      ],
      {},
    )
    expect(accruals).toEqual([
      { category: 'podCpu', bucketStartMs: T0, amountNano: 500_000_000 },
      { category: 'podCpu', bucketStartMs: T0 + MS_PER_HOUR, amountNano: 1_000_000_000 },
    ])
  })

  it('stays exact beyond 2^53 intermediate products (a day of a $64/h pod)', () => {
    const { accruals } = accrue(
      [{ fromMs: T0, toMs: T0 + 24 * MS_PER_HOUR, rates: { podGpu: monthlyNanoOfHourly(64) } }],
      {},
    )
    expect(accruals.reduce((s, a) => s + a.amountNano, 0)).toBe(64 * 24 * 1_000_000_000)
  })
})

describe('segments', () => {
  const previous = { podGpu: 1 }
  const current = { podDisk: 2 }
  it('bills before a change at the rates seen last and after it at the current ones', () => {
    expect(
      segmentsAcrossChange({ fromMs: 0, toMs: 10, changedAtMs: 4, previous, current }),
    ).toEqual([
      { fromMs: 0, toMs: 4, rates: previous },
      { fromMs: 4, toMs: 10, rates: current },
    ])
    expect(
      segmentsAcrossChange({ fromMs: 0, toMs: 10, changedAtMs: 0, previous, current }),
    ).toEqual([{ fromMs: 0, toMs: 10, rates: current }])
    expect(
      segmentsAcrossChange({ fromMs: 0, toMs: 10, changedAtMs: 5, previous: undefined, current }),
    ).toEqual([{ fromMs: 0, toMs: 10, rates: current }])
    expect(segmentsAcrossChange({ fromMs: 5, toMs: 5, changedAtMs: 0, previous, current })).toEqual(
      [],
    )
  })

  it('follows a volume size history up to its deletion', () => {
    const history = [
      { sizeGb: 10, changedAtMs: 0 },
      { sizeGb: 20, changedAtMs: 100 },
      { sizeGb: 0, changedAtMs: 200 },
    ]
    expect(sizeHistorySegments({ fromMs: 50, toMs: 500, history, type: 'STANDARD' })).toEqual([
      { fromMs: 50, toMs: 100, rates: networkVolumeRates('STANDARD', 10) },
      { fromMs: 100, toMs: 200, rates: networkVolumeRates('STANDARD', 20) },
    ])
  })
})
