import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../shared/clock.js'
import type { EgressGuard } from '../egress/egress-guard.js'
import type { EndpointService } from './endpoint-service.js'
import { JobService, TAKE_RENEWAL_INTERVAL_MS } from './job-service.js'
import type { JobQueue } from './ports.js'
import { WorkerPresence } from './worker-presence.js'

/** Takes with job_in_progress=1 renew the worker's leases, at most every TAKE_RENEWAL_INTERVAL_MS. */
describe('lease renewal on take', () => {
  const setup = (leaseMs?: number) => {
    const clock = new ManualClock('2026-03-01T12:00:00.000Z')
    const renewals: string[][] = []
    const queue = {
      take: async () => [],
      heartbeat: async (_endpointId: string, _workerId: string, jobIds: string[]) => {
        renewals.push(jobIds)
        return jobIds
      },
      waitToTake: async () => false,
    } as unknown as JobQueue
    const presence = new WorkerPresence(clock)
    presence.seen('ep', 'w1', { taken: ['a', 'b'] })
    const jobs = new JobService({
      endpoints: {} as EndpointService,
      webhookEgress: {} as EgressGuard,
      queue,
      presence,
      clock,
      ...(leaseMs === undefined ? {} : { leaseMs }),
    })
    const take = () => jobs.take('ep', 'w1', { max: 1, waitMs: 0, jobInProgress: true })
    return { clock, renewals, take }
  }

  it('renews on the first take, then not again within the interval', async () => {
    const { clock, renewals, take } = setup()
    await take()
    await take()
    clock.advance(TAKE_RENEWAL_INTERVAL_MS - 1)
    await take()
    expect(renewals).toEqual([['a', 'b']])
    clock.advance(1)
    await take()
    expect(renewals).toEqual([
      ['a', 'b'],
      ['a', 'b'],
    ])
  })

  it('renews at least four times per lease when the lease is short', async () => {
    const { clock, renewals, take } = setup(2_000)
    await take()
    clock.advance(500)
    await take()
    expect(renewals).toHaveLength(2)
  })
})
