import { describe, expect, it } from 'vitest'
import { decideScaling } from '../domain/serverless/autoscaler.js'
import { scaleDownReason } from './worker-autoscaler.js'

describe('scaleDownReason', () => {
  it('maps each reason the autoscaler logs to one of a few metric labels', () => {
    expect(scaleDownReason('idle for 10 s or more, above the target of 0')).toBe('idle')
    expect(scaleDownReason('no longer wanted (target 0) and never placed')).toBe('never_placed')
    expect(scaleDownReason('stale: version 1, endpoint is at 2')).toBe('stale')
    expect(scaleDownReason('stale: its worker key was rotated')).toBe('stale')
    expect(scaleDownReason('recycled after its job (stopPod)')).toBe('recycled')
    expect(scaleDownReason('the account is out of credits (balance at or below zero)')).toBe(
      'credits',
    )
    expect(scaleDownReason('anything else')).toBe('other')
  })

  it("labels the scaler's own stop reasons without falling back to other", () => {
    const decision = decideScaling({
      workers: { min: 0, max: 3, idleTimeout: 5 },
      scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
      queue: { queued: 0, oldestQueuedAtMs: null, inProgress: 0 },
      current: [
        { id: 'a', state: 'IDLE', stale: null, idleSinceMs: 0, recycle: false },
        { id: 'b', state: 'PENDING', stale: null, idleSinceMs: null, recycle: false },
        {
          id: 'c',
          state: 'IDLE',
          stale: 'stale: its worker key was rotated',
          idleSinceMs: 0,
          recycle: false,
        },
        { id: 'd', state: 'IDLE', stale: null, idleSinceMs: 0, recycle: true },
      ],
      nowMs: 60_000,
    })
    expect(decision.stop.map((s) => scaleDownReason(s.reason)).sort()).toEqual([
      'idle',
      'never_placed',
      'recycled',
      'stale',
    ])
  })
})
