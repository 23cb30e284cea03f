import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { JOB_SWEEP_INTERVAL_MS } from '../../src/control/job-sweeper.js'
import { ManualClock } from '../../src/shared/clock.js'
import { json } from '../support/http.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'
import { until } from '../support/until.js'

/**
 * The platform's control loops wait on the clock it is given (StartOptions.timers): with a
 * ManualClock, a loop's pass comes when the test moves the clock, not when wall time passes.
 * Here the job sweeper, over HTTP as a member: a job past its ttl stays until the sweeper's
 * next pass is due on the test's clock, then is gone.
 */
describe('control loops on the clock the platform is given', () => {
  const clock = new ManualClock('2026-03-01T12:00:00.000Z')
  let platform: TestPlatform
  let key: string

  beforeAll(async () => {
    platform = await startTestPlatform({}, { clock, timers: clock })
    key = await otherAccountKey(platform, 'loop-clock@example.com')
  })
  afterAll(() => platform?.close())

  it('sweeps a job past its ttl only once the sweep is due on the manual clock', async () => {
    const call = (p: string, init: Parameters<TestPlatform['call']>[1] = {}) =>
      platform.call(p, { key, ...init })
    const endpoint = await json<{ id: string }>(
      await call('/v2/serverless', {
        method: 'POST',
        json: { name: 'loop-clock', image: 'worker:1', gpu: { pools: ['ADA_24'] } },
      }),
      201,
    )
    const job = await json<{ id: string }>(
      await call(`/v2/${endpoint.id}/run`, {
        method: 'POST',
        json: { input: {}, policy: { ttl: 10_000 } },
      }),
    )
    const statusOf = async () => {
      const answer = await call(`/v2/${endpoint.id}/status/${job.id}`)
      return answer.status === 404 ? 'GONE' : (await json<{ status: string }>(answer)).status
    }

    // Past its ttl on the platform's time, but no timer fired: the sweeper has not run, however
    // long the wall clock waits (three of its intervals here).
    clock.set(clock.now().getTime() + 10_001)
    await new Promise((resolve) => setTimeout(resolve, 3 * JOB_SWEEP_INTERVAL_MS))
    expect(await statusOf()).toBe('IN_QUEUE')

    // The clock moves on by one interval: the sweep's timer fires and the job goes.
    await clock.advanceAsync(JOB_SWEEP_INTERVAL_MS)
    expect(await until('the job swept', statusOf, (s) => s === 'GONE', 10_000)).toBe('GONE')
  })
})
