import { describe, expect, it } from 'vitest'
import { demoFleet } from '../catalog/demo-fleet.js'
import type { Pod } from './pod.js'
import { minimumBidOf, preemptionOrder, spotHourlyPrice } from './spot.js'

const pod = (id: string, createdAt: string, bidPerGpu?: number) =>
  ({ id, createdAt, ...(bidPerGpu === undefined ? {} : { spot: { bidPerGpu } }) }) as Pod

describe('spot pods', () => {
  it('preempts the lowest bid first, the newest pod first on a tie, and never an on-demand pod', () => {
    const order = preemptionOrder([
      pod('high', '2026-03-02T10:00:00.000Z', 0.3),
      pod('old-low', '2026-03-02T09:00:00.000Z', 0.2),
      pod('on-demand', '2026-03-02T12:00:00.000Z'),
      pod('new-low', '2026-03-02T11:00:00.000Z', 0.2),
    ])
    expect(order.map((p) => p.id)).toEqual(['new-low', 'old-low', 'high'])
  })

  it('asks at least half the community price per GPU, and bills the bid for each GPU', () => {
    const fleet = demoFleet
    const community = fleet.prices.gpus['NVIDIA RTX A6000']!.community
    expect(minimumBidOf(fleet, 'NVIDIA RTX A6000')).toBeCloseTo(community / 2, 4)
    expect(spotHourlyPrice(fleet, 'NVIDIA RTX A6000', 2, 0.3)).toBe(0.6)
    expect(() => spotHourlyPrice(fleet, 'NVIDIA RTX A6000', 1, community / 2 - 0.01)).toThrow(
      /below the minimum bid for NVIDIA RTX A6000/,
    )
  })
})
