import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../shared/clock.js'
import { WorkerPresence } from './worker-presence.js'

/** A heartbeat composed before a take cannot name the job: it does not clear it at once. */
describe('worker presence and late heartbeats', () => {
  const setup = () => {
    const clock = new ManualClock('2026-03-01T12:00:00.000Z')
    const presence = new WorkerPresence(clock, 60_000, 1000)
    const jobs = () => [...presence.find('ep', 'w1')!.jobIds].sort()
    return { clock, presence, jobs }
  }

  it('keeps a job taken within the ping interval when a heartbeat does not name it', () => {
    const { clock, presence, jobs } = setup()
    presence.seen('ep', 'w1', { taken: ['a'] })
    clock.advance(999)
    presence.seen('ep', 'w1', { heartbeatJobIds: [] })
    expect(jobs()).toEqual(['a'])
    // A heartbeat sent a whole interval after the take would have named it.
    clock.advance(1)
    presence.seen('ep', 'w1', { heartbeatJobIds: [] })
    expect(jobs()).toEqual([])
  })

  it('takes a heartbeat at its word for older jobs, and adds what it names', () => {
    const { clock, presence, jobs } = setup()
    presence.seen('ep', 'w1', { taken: ['old'] })
    clock.advance(5000)
    presence.seen('ep', 'w1', { taken: ['new'] })
    presence.seen('ep', 'w1', { heartbeatJobIds: ['other'] })
    expect(jobs()).toEqual(['new', 'other'])
  })

  it('lets a report on a job renew its grace, and a finished job go at once', () => {
    const { clock, presence, jobs } = setup()
    presence.seen('ep', 'w1', { taken: ['a', 'b'] })
    clock.advance(800)
    presence.seen('ep', 'w1', { taken: ['a'] })
    presence.seen('ep', 'w1', { finished: 'b' })
    clock.advance(800)
    presence.seen('ep', 'w1', { heartbeatJobIds: [] })
    expect(jobs()).toEqual(['a'])
  })

  it('clears everything on a take that says the worker holds nothing', () => {
    const { presence, jobs } = setup()
    presence.seen('ep', 'w1', { taken: ['a'] })
    presence.seen('ep', 'w1', { jobIds: [] })
    expect(jobs()).toEqual([])
    presence.seen('ep', 'w1', { heartbeatJobIds: [] })
    expect(jobs()).toEqual([])
  })
})
