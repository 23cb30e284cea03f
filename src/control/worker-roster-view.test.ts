import { describe, expect, it } from 'vitest'
import type { ManagedWorker } from '../domain/serverless/worker.js'
import { WorkerPresence } from '../domain/serverless/worker-presence.js'
import { ManualClock } from '../shared/clock.js'
import { WorkerRosterView } from './worker-roster-view.js'

const ENDPOINT = { id: 'ep', version: 2 }

function worker(id: string, fields: Partial<ManagedWorker> = {}): ManagedWorker {
  return {
    id,
    endpointId: ENDPOINT.id,
    accountId: 'acct',
    version: ENDPOINT.version,
    keyGeneration: 1,
    phase: 'READY',
    reason: null,
    hostId: 'host-a',
    dataCenterId: 'dc',
    gpuTypeId: null,
    cpuFlavorId: 'cpu3c',
    gpuCount: 0,
    gpuIndices: [],
    vcpus: 1,
    memoryGb: 1,
    image: 'img',
    createdAt: '2026-03-01T12:00:00.000Z',
    startedAt: '2026-03-01T12:00:00.000Z',
    phaseChangedAt: '2026-03-01T12:00:00.000Z',
    ...fields,
  }
}

function setup(draining: string[] = []) {
  const presence = new WorkerPresence(new ManualClock('2026-03-01T12:00:00.000Z'))
  const roster = new WorkerRosterView({
    presence,
    hostDraining: (hostId) => draining.includes(hostId),
  })
  /** A pass that saw `workers` of the endpoint. */
  const pass = (workers: ManagedWorker[]) =>
    roster.replaceSeen([roster.rosterOf(ENDPOINT, workers)])
  return { presence, roster, pass }
}

describe('the roster the job service asks which workers take jobs', () => {
  it('lets a current ready or starting worker take jobs, not one waiting for a host', () => {
    const { roster, pass } = setup()
    pass([
      worker('ready'),
      worker('starting', { phase: 'STARTING' }),
      worker('pending', { phase: 'PENDING', hostId: null }),
    ])
    expect(roster.takesJobs(ENDPOINT.id, 'ready')).toBe(true)
    expect(roster.takesJobs(ENDPOINT.id, 'starting')).toBe(true)
    expect(roster.takesJobs(ENDPOINT.id, 'pending')).toBe(false)
    expect(roster.statusOf(worker('pending', { phase: 'PENDING' }))).toBe('THROTTLED')
  })

  it('lets a worker it never saw take jobs: one that connects by itself', () => {
    const { roster, pass } = setup()
    pass([worker('managed')])
    expect(roster.takesJobs(ENDPOINT.id, 'self-connected')).toBe(true)
  })

  it('hands no job to a worker of an older version, even before the next pass', () => {
    const { roster, pass } = setup()
    pass([worker('old', { version: 1 }), worker('new')])
    expect(roster.takesJobs(ENDPOINT.id, 'old')).toBe(false)

    // A pass that read the endpoint before its update: version 2 is current to it.
    pass([worker('v2')])
    expect(roster.takesJobs(ENDPOINT.id, 'v2')).toBe(true)
    roster.noteNewestVersion({ id: ENDPOINT.id, version: 3 })
    expect(roster.takesJobs(ENDPOINT.id, 'v2')).toBe(false)
    expect(roster.olderThan(ENDPOINT.id, 3)).toEqual(['v2'])
  })

  it('hands no job to a worker being stopped, retired, or asking to be recycled', () => {
    const { presence, roster, pass } = setup()
    presence.seen(ENDPOINT.id, 'recycled', { recycle: true })
    pass([worker('stopping'), worker('retired'), worker('recycled')])
    roster.beginStopping('stopping')
    roster.retire('retired')
    expect(roster.takesJobs(ENDPOINT.id, 'stopping')).toBe(false)
    expect(roster.takesJobs(ENDPOINT.id, 'retired')).toBe(false)
    expect(roster.takesJobs(ENDPOINT.id, 'recycled')).toBe(false)
    roster.endStopping('stopping')
    expect(roster.takesJobs(ENDPOINT.id, 'stopping')).toBe(true)
  })

  it('lets a worker on a draining host take jobs until its replacement is placed', () => {
    const { roster, pass } = setup(['host-a'])
    pass([worker('staying')])
    expect(roster.takesJobs(ENDPOINT.id, 'staying')).toBe(true)
    const movingOff = worker('staying', { reason: 'moving off host host-a (draining): replaced' })
    pass([movingOff])
    expect(roster.takesJobs(ENDPOINT.id, 'staying')).toBe(false)
    expect(roster.leavingReason(movingOff)).toBe('its host host-a is draining')

    // Uncordoned: the mark no longer holds.
    const { roster: after, pass: passAfter } = setup([])
    passAfter([movingOff])
    expect(after.takesJobs(ENDPOINT.id, 'staying')).toBe(true)
  })

  it('counts a ready worker RUNNING while the store or its calls say it holds a job', () => {
    const { presence, roster, pass } = setup()
    roster.noteHeld('stored', 1)
    presence.seen(ENDPOINT.id, 'reported', { taken: ['job-1'] })
    pass([worker('stored'), worker('reported'), worker('idle')])
    expect(roster.counts(ENDPOINT.id)).toMatchObject({ running: 2, idle: 1, ready: 3 })
    roster.replaceHeld()
    pass([worker('stored'), worker('reported'), worker('idle')])
    expect(roster.counts(ENDPOINT.id)).toMatchObject({ running: 1, idle: 2 })
  })

  it('counts workers that connect by themselves as the protocol sees them, never a retired one', () => {
    const { presence, roster, pass } = setup()
    presence.seen(ENDPOINT.id, 'own-busy', { taken: ['job-1'] })
    presence.seen(ENDPOINT.id, 'own-idle')
    presence.seen(ENDPOINT.id, 'lost-with-host')
    roster.retiredFrom([worker('lost-with-host', { phase: 'UNHEALTHY' })])
    pass([worker('starting', { phase: 'STARTING' })])
    expect(roster.counts(ENDPOINT.id)).toEqual({
      idle: 1,
      initializing: 1,
      ready: 2,
      running: 1,
      throttled: 0,
      unhealthy: 0,
    })
  })

  it('says whether a queued job has a worker to run it or waiting for a host', () => {
    const { roster, pass } = setup()
    expect(roster.hasTakerOrWaiter(ENDPOINT.id)).toBe(false)
    pass([worker('waiting', { phase: 'PENDING', hostId: null })])
    expect(roster.hasTakerOrWaiter(ENDPOINT.id)).toBe(true)
    pass([worker('old', { version: 1 })])
    expect(roster.hasTakerOrWaiter(ENDPOINT.id)).toBe(false)
  })

  it('keeps the time a worker became idle until it is busy again', () => {
    const { roster } = setup()
    const w = worker('w')
    expect(roster.idleSinceMs(w, 'IDLE', 1000)).toBe(1000)
    expect(roster.idleSinceMs(w, 'IDLE', 5000)).toBe(1000)
    expect(roster.idleSinceMs(w, 'RUNNING', 6000)).toBeNull()
    expect(roster.idleSinceMs(w, 'IDLE', 7000)).toBe(7000)
    roster.forgetIdle('w')
    expect(roster.idleSinceMs(w, 'IDLE', 9000)).toBe(9000)
  })
})
