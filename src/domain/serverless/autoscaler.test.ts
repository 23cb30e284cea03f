import { describe, expect, it } from 'vitest'
import {
  decideScaling,
  type ScalingInput,
  type ScalingWorker,
  type ScalingWorkerState,
} from './autoscaler.js'

const NOW = 1_000_000

function input(overrides: Partial<ScalingInput> = {}): ScalingInput {
  return {
    workers: { min: 0, max: 3, idleTimeout: 5 },
    scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
    queue: { queued: 0, oldestQueuedAtMs: null, inProgress: 0 },
    current: [],
    nowMs: NOW,
    ...overrides,
  }
}

let next = 0
function worker(state: ScalingWorkerState, overrides: Partial<ScalingWorker> = {}): ScalingWorker {
  next += 1
  return {
    id: `w${next}`,
    state,
    stale: null,
    idleSinceMs: state === 'IDLE' ? NOW : null,
    recycle: false,
    ...overrides,
  }
}

const queued = (count: number, waitedMs: number) => ({
  queued: count,
  oldestQueuedAtMs: NOW - waitedMs,
  inProgress: 0,
})

describe('decideScaling', () => {
  it('keeps workers.min running with nothing queued', () => {
    const decision = decideScaling(input({ workers: { min: 2, max: 3, idleTimeout: 5 } }))
    expect(decision.start).toBe(2)
    expect(decision.reasons.at(-1)).toBe('start 2: 0 usable worker(s), target 2 (min 2, max 3)')
  })

  it('does nothing when nothing is queued and nobody works', () => {
    expect(decideScaling(input())).toEqual({ start: 0, stop: [], replaced: [], reasons: [] })
  })

  describe('QUEUE_DELAY', () => {
    it('starts the first worker at once when a job is queued and no worker exists', () => {
      const decision = decideScaling(input({ queue: queued(1, 0) }))
      expect(decision.start).toBe(1)
      expect(decision.reasons[0]).toBe('QUEUE_DELAY: 1 queued and no worker to run them')
      // A worker that is draining (stale) does not run new jobs: one starts beside it.
      const stale = worker('RUNNING', { stale: 'stale: version 1, endpoint is at 2' })
      expect(decideScaling(input({ queue: queued(1, 0), current: [stale] })).start).toBe(1)
    })

    it('waits queueDelay seconds before adding a worker beside one that exists', () => {
      const busy = [worker('RUNNING')]
      expect(decideScaling(input({ queue: queued(5, 4_000), current: busy })).start).toBe(0)
      const decision = decideScaling(input({ queue: queued(5, 4_001), current: busy }))
      expect(decision.start).toBe(1)
      expect(decision.reasons[0]).toBe('QUEUE_DELAY: the oldest queued job has waited 4.0 s > 4 s')
    })

    it('starts nothing from zero for lowPriority jobs alone (they are not counted as queued)', () => {
      const onlyLowPriority = { queued: 0, oldestQueuedAtMs: null, inProgress: 0 }
      expect(decideScaling(input({ queue: onlyLowPriority })).start).toBe(0)
    })

    it('adds one worker at a time, none while one is still on its way', () => {
      const busy = [worker('RUNNING'), worker('RUNNING')]
      expect(decideScaling(input({ queue: queued(9, 10_000), current: busy })).start).toBe(1)
      const arriving = [...busy, worker('STARTING')]
      expect(decideScaling(input({ queue: queued(9, 10_000), current: arriving })).start).toBe(0)
    })

    it('never goes above workers.max', () => {
      const full = [worker('RUNNING'), worker('RUNNING'), worker('RUNNING')]
      expect(decideScaling(input({ queue: queued(50, 60_000), current: full })).start).toBe(0)
    })

    it('stops idle workers only after idleTimeout, down to min', () => {
      const fresh = worker('IDLE', { idleSinceMs: NOW - 4_999 })
      const old = worker('IDLE', { idleSinceMs: NOW - 20_000 })
      const older = worker('IDLE', { idleSinceMs: NOW - 30_000 })
      const decision = decideScaling(
        input({ workers: { min: 1, max: 3, idleTimeout: 5 }, current: [fresh, old, older] }),
      )
      // Target 1 (min): two must go, the longest idle first; the fresh one is kept by its timeout.
      expect(decision.stop.map((s) => s.workerId)).toEqual([older.id, old.id])
      expect(decision.stop[0]!.reason).toBe('idle for 5 s or more, above the target of 1')
    })

    it('keeps idle workers while jobs wait, even past idleTimeout', () => {
      const idle = worker('IDLE', { idleSinceMs: NOW - 60_000 })
      const decision = decideScaling(input({ queue: queued(1, 1_000), current: [idle] }))
      expect(decision).toEqual({ start: 0, stop: [], replaced: [], reasons: [] })
    })
  })

  describe('REQUEST_COUNT', () => {
    const scaling = { type: 'REQUEST_COUNT' as const, requestCount: 4 }

    it('targets ceil((queued + in progress) / requestCount) at once', () => {
      const decision = decideScaling(
        input({ scaling, queue: { queued: 7, oldestQueuedAtMs: NOW, inProgress: 2 } }),
      )
      expect(decision.start).toBe(3)
      expect(decision.reasons[0]).toBe(
        'REQUEST_COUNT: 7 queued + 2 in progress at 4 per worker wants 3',
      )
    })

    it('clamps to max and counts workers that are starting', () => {
      const decision = decideScaling(
        input({
          scaling,
          workers: { min: 0, max: 2, idleTimeout: 5 },
          queue: { queued: 100, oldestQueuedAtMs: NOW, inProgress: 0 },
          current: [worker('STARTING')],
        }),
      )
      expect(decision.start).toBe(1)
    })
  })

  it('replaces an unhealthy worker and does not count it', () => {
    const decision = decideScaling(
      input({
        workers: { min: 1, max: 3, idleTimeout: 5 },
        current: [worker('UNHEALTHY')],
      }),
    )
    expect(decision.start).toBe(1)
    expect(decision.stop).toEqual([])
  })

  describe('leaving workers (their host drains)', () => {
    const leaving = 'its host h1 is draining'

    it('starts their replacements and keeps them until those are placed', () => {
      const idle = worker('IDLE', { leaving })
      const busy = worker('RUNNING', { leaving })
      const first = decideScaling(
        input({ workers: { min: 2, max: 3, idleTimeout: 5 }, current: [idle, busy] }),
      )
      expect(first).toMatchObject({ start: 2, stop: [], replaced: [] })
      // Wanted but not placed yet (THROTTLED): the leaving ones keep serving.
      const waiting = decideScaling(
        input({
          workers: { min: 2, max: 3, idleTimeout: 5 },
          current: [idle, busy, worker('PENDING'), worker('PENDING')],
        }),
      )
      expect(waiting).toMatchObject({ start: 0, stop: [], replaced: [] })
      const placed = decideScaling(
        input({
          workers: { min: 2, max: 3, idleTimeout: 5 },
          current: [idle, busy, worker('STARTING'), worker('IDLE')],
        }),
      )
      expect(placed.start).toBe(0)
      // Both take no new job; the free one goes, the one holding a job once it is free.
      expect(placed.replaced).toEqual([idle.id, busy.id])
      expect(placed.stop).toEqual([
        { workerId: idle.id, reason: `${leaving}: 2 worker(s) placed elsewhere, target 2` },
      ])
    })

    it('stops a free leaving worker at once when the endpoint wants none', () => {
      const idle = worker('IDLE', { leaving })
      expect(decideScaling(input({ current: [idle] })).stop).toEqual([
        { workerId: idle.id, reason: `${leaving}: 0 worker(s) placed elsewhere, target 0` },
      ])
    })

    it('stops a leaving worker that is also stale once, for being stale', () => {
      const both = worker('IDLE', { leaving, stale: 'stale: version 1, endpoint is at 2' })
      const decision = decideScaling(input({ current: [both] }))
      expect(decision.stop).toEqual([
        { workerId: both.id, reason: 'stale: version 1, endpoint is at 2' },
      ])
    })
  })

  it('rolls stale workers: stops them when free, starts current ones in their place', () => {
    const reason = 'stale: version 1, endpoint is at 2'
    const staleIdle = worker('IDLE', { stale: reason })
    const staleBusy = worker('RUNNING', { stale: reason })
    const rotated = worker('STARTING', { stale: 'stale: its worker key was rotated' })
    const decision = decideScaling(
      input({
        workers: { min: 2, max: 3, idleTimeout: 5 },
        current: [staleIdle, staleBusy, rotated],
      }),
    )
    expect(decision.stop).toEqual([
      { workerId: staleIdle.id, reason },
      { workerId: rotated.id, reason: 'stale: its worker key was rotated' },
    ])
    expect(decision.start).toBe(2)
  })

  it('recycles a worker that asked for it once its job is done', () => {
    const running = worker('RUNNING', { recycle: true })
    expect(decideScaling(input({ current: [running] })).stop).toEqual([])
    const idle = worker('IDLE', { recycle: true })
    const decision = decideScaling(
      input({ workers: { min: 1, max: 3, idleTimeout: 5 }, current: [idle] }),
    )
    expect(decision.stop).toEqual([
      { workerId: idle.id, reason: 'recycled after its job (stopPod)' },
    ])
    expect(decision.start).toBe(1)
  })

  it('drops throttled workers first when fewer are wanted', () => {
    const throttled = worker('PENDING')
    const idle = worker('IDLE', { idleSinceMs: NOW - 60_000 })
    const decision = decideScaling(input({ current: [idle, throttled] }))
    expect(decision.stop.map((s) => s.workerId)).toEqual([throttled.id, idle.id])
    expect(decision.stop[0]!.reason).toBe('no longer wanted (target 0) and never placed')
  })

  it('never stops a worker that holds a job, whatever else it is', () => {
    const holding = [
      worker('RUNNING', { stale: 'stale: version 1, endpoint is at 2' }),
      worker('RUNNING', { stale: 'stale: its worker key was rotated' }),
      worker('RUNNING', { recycle: true }),
      worker('RUNNING'),
    ]
    for (const scaling of [
      { type: 'QUEUE_DELAY' as const, queueDelay: 4 },
      { type: 'REQUEST_COUNT' as const, requestCount: 100 },
    ]) {
      const decision = decideScaling(
        input({ scaling, workers: { min: 0, max: 1, idleTimeout: 1 }, current: holding }),
      )
      expect(decision.stop).toEqual([])
    }
  })

  it('starts nothing while the endpoint backs off, and what was due once it has passed', () => {
    const backoff = { untilMs: NOW + 1, why: '2 worker(s) failed in a row' }
    const failing = input({
      workers: { min: 1, max: 3, idleTimeout: 5 },
      current: [worker('UNHEALTHY')],
      backoff,
    })
    expect(decideScaling(failing)).toEqual({
      start: 0,
      stop: [],
      replaced: [],
      reasons: ['start none yet: 0 usable worker(s), target 1; 2 worker(s) failed in a row'],
    })
    expect(decideScaling({ ...failing, nowMs: NOW + 1 }).start).toBe(1)
    // It stops what it would stop anyway.
    const idle = worker('IDLE', { idleSinceMs: NOW - 60_000 })
    expect(decideScaling(input({ current: [idle], backoff })).stop).toHaveLength(1)
  })
})
