import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { pino } from 'pino'
import { LeaderElection } from '../../src/control/leader-election.js'
import { LOOPS_LEASE } from '../../src/domain/cluster/leader-lease.js'
import { KyselyLeaseRepo } from '../../src/store/lease-repo.js'
import type { Store } from '../../src/store/open-store.js'
import { testStores } from '../support/stores.js'

const silent = pino({ level: 'silent' })

describe.each(testStores())('leader lease on $name', (factory) => {
  let store: Store
  let leases: KyselyLeaseRepo

  beforeEach(async () => {
    store = await factory.open()
    leases = new KyselyLeaseRepo(store.db)
  })
  afterEach(async () => {
    await store.close()
  })

  it('is taken by one holder, renewed by it, refused to others until it expires', async () => {
    expect(await leases.holder(LOOPS_LEASE, 1_000)).toBeUndefined()
    expect(await leases.tryAcquire(LOOPS_LEASE, 'a', 1_000, 500)).toBe(true)
    expect(await leases.tryAcquire(LOOPS_LEASE, 'b', 1_200, 500)).toBe(false)
    expect(await leases.tryAcquire(LOOPS_LEASE, 'a', 1_400, 500)).toBe(true)
    expect(await leases.holder(LOOPS_LEASE, 1_800)).toBe('a')
    // Renewed at 1400 for 500: still a's at 1899, free at 1900.
    expect(await leases.tryAcquire(LOOPS_LEASE, 'b', 1_899, 500)).toBe(false)
    expect(await leases.tryAcquire(LOOPS_LEASE, 'b', 1_900, 500)).toBe(true)
    expect(await leases.holder(LOOPS_LEASE, 1_900)).toBe('b')
    expect(await leases.tryAcquire(LOOPS_LEASE, 'a', 2_000, 500)).toBe(false)
  })

  it('is free at once when its holder releases it; a release by another changes nothing', async () => {
    expect(await leases.tryAcquire(LOOPS_LEASE, 'a', 1_000, 10_000)).toBe(true)
    await leases.release(LOOPS_LEASE, 'b')
    expect(await leases.holder(LOOPS_LEASE, 1_000)).toBe('a')
    await leases.release(LOOPS_LEASE, 'a')
    expect(await leases.tryAcquire(LOOPS_LEASE, 'b', 1_001, 10_000)).toBe(true)
  })

  it('lets exactly one of many simultaneous takers win', async () => {
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => leases.tryAcquire(LOOPS_LEASE, `r${i}`, 5_000, 1_000)),
    )
    expect(results.filter(Boolean)).toHaveLength(1)
  })

  it('elects one leader among replicas and hands over when the leader stops or dies', async () => {
    const events: string[] = []
    const replica = (id: string, now?: () => number) =>
      new LeaderElection({
        leases,
        replicaId: id,
        ttlMs: 300,
        logger: silent,
        ...(now ? { now } : {}),
        onLead: () => void events.push(`${id} leads`),
        onLose: async () => {
          events.push(`${id} stops`)
        },
      })
    const a = replica('a')
    const b = replica('b')
    await a.start()
    await b.start()
    expect(a.isLeader()).toBe(true)
    expect(b.isLeader()).toBe(false)
    // A clean stop gives the lease up: b takes over at its next attempt (every ttl/3).
    await a.stop()
    await expect.poll(() => b.isLeader(), { timeout: 2_000 }).toBe(true)
    expect(events).toEqual(['a leads', 'a stops', 'b leads'])

    // b dies without a word (its renewals never arrive): c takes over once b's lease expired.
    let dead = false
    const c = replica('c')
    await c.start()
    expect(c.isLeader()).toBe(false)
    const hanging = new Promise<boolean>(() => {})
    const original = leases.tryAcquire.bind(leases)
    const bLeases = {
      ...leases,
      tryAcquire: (...args: Parameters<KyselyLeaseRepo['tryAcquire']>) =>
        dead && args[1] === 'b' ? hanging : original(...args),
      release: leases.release.bind(leases),
      holder: leases.holder.bind(leases),
    }
    leases.tryAcquire = bLeases.tryAcquire
    const diedAt = Date.now()
    dead = true
    await expect.poll(() => c.isLeader(), { timeout: 2_000 }).toBe(true)
    expect(Date.now() - diedAt).toBeLessThan(300 + 300 / 3 + 200)
    // b fenced itself: it stopped before c started.
    expect(b.isLeader()).toBe(false)
    expect(events.slice(-2)).toEqual(['b stops', 'c leads'])
    await c.stop()
  })

  it('stops leading when its renewals fail, without waiting for a renewal to succeed', async () => {
    let failing = false
    const flaky = {
      tryAcquire: async (...args: Parameters<KyselyLeaseRepo['tryAcquire']>) => {
        if (failing) throw new Error('database unreachable')
        return leases.tryAcquire(...args)
      },
      release: (name: string, holder: string) => leases.release(name, holder),
      holder: (name: string, nowMs: number) => leases.holder(name, nowMs),
    }
    const stops: number[] = []
    const a = new LeaderElection({
      leases: flaky,
      replicaId: 'a',
      ttlMs: 300,
      logger: silent,
      onLead: () => {},
      onLose: async () => {
        stops.push(Date.now())
      },
    })
    await a.start()
    expect(a.isLeader()).toBe(true)
    const failedAt = Date.now()
    failing = true
    await expect.poll(() => a.isLeader(), { timeout: 2_000 }).toBe(false)
    // It gave up before its lease (300 ms from its last renewal) could be taken by another.
    expect(stops).toHaveLength(1)
    expect(stops[0]! - failedAt).toBeLessThan(300)
    failing = false
    await expect.poll(() => a.isLeader(), { timeout: 2_000 }).toBe(true)
    await a.stop()
  })
})

describe('leader election without leases (SQLite: one process)', () => {
  it('leads at once and stops its loops on stop', async () => {
    const events: string[] = []
    const only = new LeaderElection({
      replicaId: 'only',
      logger: silent,
      onLead: () => void events.push('lead'),
      onLose: async () => {
        events.push('lose')
      },
    })
    await only.start()
    expect(only.isLeader()).toBe(true)
    expect(events).toEqual(['lead'])
    await only.stop()
    expect(events).toEqual(['lead', 'lose'])
  })
})
