import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { JobLimiter } from '../../src/api/jobs/job-limiter.js'
import { WorkerPresence } from '../../src/domain/serverless/worker-presence.js'
import { ManualClock } from '../../src/shared/clock.js'
import type { Store } from '../../src/store/open-store.js'
import { SharedJobLimits } from '../../src/store/shared-job-limits.js'
import { SharedWorkerPresence } from '../../src/store/shared-worker-presence.js'
import { testStores } from '../support/stores.js'

/**
 * The job API counters and worker presence of several replicas (docs/production.md): two
 * limiters or presences, each with its own sync, on one store stand for two replicas.
 */
describe.each(testStores())('shared counters on $name', (factory) => {
  let store: Store
  const clock = new ManualClock('2026-03-01T00:00:00.000Z')
  const logger = { warn: () => {} }

  beforeEach(async () => {
    store = await factory.open()
    clock.set('2026-03-01T00:00:00.000Z')
  })
  afterEach(async () => {
    await store.close()
  })

  const replica = (id: string) => {
    const limiter = new JobLimiter({ clock })
    const sync = new SharedJobLimits({
      db: store.db,
      replicaId: id,
      limiter,
      now: () => clock.now().getTime(),
      logger,
    })
    return { limiter, sync }
  }

  it('limits the rate against the requests of every replica as last synced', async () => {
    const a = replica('a')
    const b = replica('b')
    // purge-queue: 2 per window.
    expect(a.limiter.admit('ep', 'purge-queue', 0).allowed).toBe(true)
    expect(b.limiter.admit('ep', 'purge-queue', 0).allowed).toBe(true)
    // Once both have synced, each knows the other's request.
    await a.sync.sync()
    await b.sync.sync()
    await a.sync.sync()
    const refusedA = a.limiter.admit('ep', 'purge-queue', 0)
    const refusedB = b.limiter.admit('ep', 'purge-queue', 0)
    expect(refusedA).toMatchObject({ allowed: false, kind: 'rate', limit: 2 })
    expect(refusedB).toMatchObject({ allowed: false, kind: 'rate', limit: 2 })
    // The next window starts from nothing on both.
    clock.advance(10_000)
    expect(a.limiter.admit('ep', 'purge-queue', 0).allowed).toBe(true)
    expect(b.limiter.admit('ep', 'purge-queue', 0).allowed).toBe(true)
  })

  it('counts requests in flight of every replica, and forgets a replica that went silent', async () => {
    const a = replica('a')
    const b = replica('b')
    // requests: 2 in flight.
    const held = [a.limiter.admit('ep', 'requests', 0), a.limiter.admit('ep', 'requests', 0)]
    expect(held.every((d) => d.allowed)).toBe(true)
    await a.sync.sync()
    await b.sync.sync()
    expect(b.limiter.admit('ep', 'requests', 0)).toMatchObject({
      allowed: false,
      kind: 'concurrency',
    })
    for (const decision of held) if (decision.allowed) decision.release()
    await a.sync.sync()
    await b.sync.sync()
    expect(b.limiter.admit('ep', 'requests', 0).allowed).toBe(true)

    // a holds two again and dies: after a few seconds its rows no longer hold b back.
    a.limiter.admit('ep', 'requests', 0)
    a.limiter.admit('ep', 'requests', 0)
    await a.sync.sync()
    clock.advance(10_000)
    await b.sync.sync()
    const late = b.limiter.admit('ep', 'requests', 0)
    expect(late.allowed).toBe(true)
  })

  it('removes its rows when a replica leaves', async () => {
    const a = replica('a')
    a.limiter.admit('ep', 'run', 0)
    await a.sync.sync()
    expect(await store.db.selectFrom('job_rate_counts').selectAll().execute()).toHaveLength(1)
    await a.sync.stop()
    expect(await store.db.selectFrom('job_rate_counts').selectAll().execute()).toHaveLength(0)
  })

  it('shows a worker seen by one replica on the other, with its jobs, until forgotten', async () => {
    const presence = (replicaClock: ManualClock) => {
      const view = new WorkerPresence(replicaClock)
      const sync = new SharedWorkerPresence({
        db: store.db,
        presence: view,
        now: () => replicaClock.now().getTime(),
        logger,
      })
      return { view, sync }
    }
    const a = presence(clock)
    const b = presence(clock)
    a.view.seen('ep', 'w1', { taken: ['j1'] })
    a.view.seen('ep', 'w2')
    await a.sync.sync()
    await b.sync.sync()
    expect(b.view.counts('ep')).toMatchObject({ idle: 1, running: 1 })
    expect([...b.view.find('ep', 'w1')!.jobIds]).toEqual(['j1'])

    // w1 finishes its job through b: a learns it at its next sync.
    clock.advance(500)
    b.view.seen('ep', 'w1', { finished: 'j1' })
    await b.sync.sync()
    await a.sync.sync()
    expect(a.view.counts('ep')).toMatchObject({ idle: 2, running: 0 })

    // An older sighting never overwrites a newer one.
    const stale = new WorkerPresence(new ManualClock('2026-02-01T00:00:00.000Z'))
    stale.seen('ep', 'w1', { taken: ['old'] })
    const staleSync = new SharedWorkerPresence({
      db: store.db,
      presence: stale,
      now: () => clock.now().getTime(),
      logger,
    })
    await staleSync.sync()
    await a.sync.sync()
    expect([...a.view.find('ep', 'w1')!.jobIds]).toEqual([])

    // The leader stops w2: every replica forgets it.
    a.view.forget('ep', 'w2')
    await a.sync.sync()
    await b.sync.sync()
    expect(b.view.find('ep', 'w2')).toBeUndefined()
    expect(b.view.counts('ep')).toMatchObject({ idle: 1, running: 0 })

    // Past the presence window a worker no longer counts anywhere.
    clock.advance(61_000)
    await b.sync.sync()
    expect(b.view.counts('ep')).toMatchObject({ idle: 0, running: 0 })
    expect(await store.db.selectFrom('worker_presence').selectAll().execute()).toHaveLength(0)
  })

  it('keeps what it saw since its last sync over what it reads', async () => {
    const a = new WorkerPresence(clock)
    const sync = new SharedWorkerPresence({
      db: store.db,
      presence: a,
      now: () => clock.now().getTime(),
      logger,
    })
    const changes = a.takeChanges()
    expect(changes).toEqual({ seen: [], forgotten: [] })
    a.seen('ep', 'w1', { taken: ['j1'] })
    // Seen after the sync took its changes, before it replaces the view: kept.
    const taken = a.takeChanges()
    a.seen('ep', 'w1', { taken: ['j2'] })
    a.replaceAll([])
    expect([...a.find('ep', 'w1')!.jobIds].sort()).toEqual(['j1', 'j2'])
    a.returnChanges(taken)
    await sync.sync()
    expect(await store.db.selectFrom('worker_presence').selectAll().execute()).toHaveLength(1)
  })
})
