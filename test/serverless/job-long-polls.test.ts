import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { EgressGuard } from '../../src/domain/egress/egress-guard.js'
import type { EndpointService } from '../../src/domain/serverless/endpoint-service.js'
import { JobService } from '../../src/domain/serverless/job-service.js'
import { WorkerPresence } from '../../src/domain/serverless/worker-presence.js'
import { KyselyJobQueue } from '../../src/queue/kysely-job-queue.js'
import { systemClock } from '../../src/shared/clock.js'
import type { Store } from '../../src/store/open-store.js'
import { testStores } from '../support/stores.js'
import { testJob } from '../support/jobs.js'

/**
 * Long polls end early when asked: a worker being stopped (its take and job-stop polls answer
 * at once, so a runpod-python worker that got SIGTERM can exit instead of being killed) and a
 * closing server (no poll holds the close up for its whole wait).
 */
describe.each(testStores())('long polls on $name', ({ open }) => {
  let store: Store
  let jobs: JobService
  let queue: KyselyJobQueue

  beforeEach(async () => {
    store = await open()
    queue = new KyselyJobQueue({ db: store.db, dialect: store.dialect, clock: systemClock })
    // take, stops and waitForEnd never look an endpoint up, nor check a webhook.
    const endpoints = {} as EndpointService
    jobs = new JobService({
      endpoints,
      webhookEgress: {} as EgressGuard,
      queue,
      presence: new WorkerPresence(systemClock),
      clock: systemClock,
    })
  })
  afterEach(async () => {
    jobs.close()
    await store.close()
  })

  const timed = async <T>(work: Promise<T>) => {
    const started = Date.now()
    const value = await work
    return { value, ms: Date.now() - started }
  }

  it("ends a worker's take and job-stop polls, and only that worker's", async () => {
    const take = timed(jobs.take('ep', 'w1', { max: 1, waitMs: 20_000, jobInProgress: false }))
    const stops = timed(jobs.stops('ep', 'w1', 20_000))
    let otherDone = false
    const other = jobs
      .take('ep', 'w2', { max: 1, waitMs: 20_000, jobInProgress: false })
      .then((taken) => {
        otherDone = true
        return taken
      })
    await new Promise((resolve) => setTimeout(resolve, 100))
    jobs.endPolls('ep', 'w1')
    const [taken, stopped] = await Promise.all([take, stops])
    expect(taken.value).toEqual([])
    expect(taken.ms).toBeLessThan(5_000)
    expect(stopped.value).toEqual([])
    expect(stopped.ms).toBeLessThan(5_000)
    expect(otherDone).toBe(false)

    // The other worker still gets the next job.
    const job = testJob({ endpointId: 'ep' })
    await queue.submit(job)
    expect((await other).map((j) => j.id)).toEqual([job.id])
  })

  it('answers every long poll at once when the server closes', async () => {
    const job = testJob({ endpointId: 'ep', sync: true })
    await queue.submit(job)
    const waiting = timed(jobs.waitForEnd('ep', job.id, 60_000))
    const take = timed(jobs.take('ep', 'w9', { max: 1, waitMs: 20_000, jobInProgress: false }))
    await new Promise((resolve) => setTimeout(resolve, 100))
    // The take got the job at once; the runsync-style wait is still waiting.
    expect((await take).value.map((j) => j.id)).toEqual([job.id])
    jobs.close()
    const ended = await waiting
    expect(ended.value.status).toBe('IN_PROGRESS')
    expect(ended.ms).toBeLessThan(5_000)
    const late = await timed(
      jobs.take('ep', 'w9', { max: 1, waitMs: 20_000, jobInProgress: false }),
    )
    expect(late.value).toEqual([])
    expect(late.ms).toBeLessThan(5_000)
  })
})
