import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { STOP_CONFIRM_MS } from '../../src/sdk/worker/index.js'
import { ManualClock } from '../../src/shared/clock.js'
import { startAnswerProxy, type AnswerProxy } from '../support/answer-proxy.js'
import {
  restartableStores,
  startRestartablePlatform,
  type RestartablePlatform,
} from '../support/restartable-platform.js'
import {
  collectingLogger,
  deliverySuite,
  eventually,
  gate,
  serverLog,
  sleep,
  type LogLine,
} from '../support/worker-sdk-delivery-fixtures.js'

/**
 * The worker SDK keeps what a job produced until the platform has answered for it
 * (docs/worker-sdk.md, "Delivery"), here when a take hands the worker a job it already runs
 * (its lease ran out and the job was re-queued): the run goes on, once, and what it produced
 * is delivered to the new attempt. The other parts: worker-sdk-delivery-outages.test.ts and
 * worker-sdk-delivery-answers.test.ts.
 */

describe.each(restartableStores())('podyard/worker delivery on %s', (store) => {
  // Its tests run on a platform of their own (below), on a clock they move.
  const { createEndpoint, submit, status, finished, start } = deliverySuite(store, {
    withPlatform: false,
  })

  describe('a job handed back to the worker that holds it (its lease ran out)', () => {
    // The platform's clock decides the leases; no heartbeat during a test (pingIntervalMs 60 s).
    const clock = new ManualClock(new Date())
    const requeued: string[] = []
    let timed: RestartablePlatform
    let proxy: AnswerProxy
    beforeAll(async () => {
      timed = await startRestartablePlatform(
        store,
        {},
        { clock, logger: serverLog({ urls: [], requeued }) },
      )
      proxy = await startAnswerProxy(() => timed.url)
    })
    afterEach(() => {
      proxy.rule = () => 'forward'
    })
    afterAll(async () => {
      await proxy?.close()
      await timed?.close()
    })

    /**
     * A worker of two slots running one job, which it holds until `release` opens; `rule` is
     * the proxy's between the worker and the platform from the start (the proxy decides when a
     * request comes, and long polls come early).
     */
    const running = async (
      result: () => unknown = () => 'once',
      rule: AnswerProxy['rule'] = () => 'forward',
    ) => {
      proxy.rule = rule
      const id = await createEndpoint(timed)
      const lines: LogLine[] = []
      const state = { runs: 0, aborted: false }
      const release = gate()
      const worker = start(
        id,
        async (_job, context) => {
          state.runs += 1
          const aborted = new Promise<never>((_resolve, reject) => {
            context.signal.addEventListener('abort', () => {
              state.aborted = true
              reject(context.signal.reason as Error)
            })
          })
          await Promise.race([release.opened, aborted])
          return result()
        },
        { concurrency: 2, pingIntervalMs: 60_000, logger: collectingLogger(lines) },
        proxy.url,
      )
      const jobId = await submit(id, {}, timed)
      await eventually('job taken', () => worker.activeJobs === 1)
      return { id, jobId, lines, state, release, worker }
    }
    /**
     * The lease (60 s) runs out: the sweeper re-queues the job and sends the worker a stop
     * notice for it; the worker's next take hands the job back to it. A take the worker starts
     * just after the clock moved renews the lease from the new time (takes with
     * job_in_progress=1 do), so the clock moves again until the sweep has re-queued the job.
     */
    const leaseRunsOut = async (id: string, jobId: string) => {
      const deadline = Date.now() + 20_000
      while (!requeued.includes(jobId)) {
        if (Date.now() > deadline) throw new Error(`job ${jobId} was not re-queued`)
        clock.advance(61_000)
        const tried = Date.now() + 3_000
        while (!requeued.includes(jobId) && Date.now() < tried) await sleep(20)
      }
      await eventually(
        'job taken again',
        async () => (await status(id, jobId, timed)).status === 'IN_PROGRESS',
      )
    }
    /**
     * The stop notice the lease's end left is stale once the job is the worker's again: podyard
     * drops it when the worker polls job-stop after the take, and the worker ignores it when it
     * comes before (STOP_CONFIRM_MS, then a heartbeat). Either way it is over after this.
     */
    const staleNoticeSettled = () => sleep(2 * STOP_CONFIRM_MS)
    const logged = (lines: LogLine[], pattern: RegExp, jobId: string) =>
      lines.some((line) => pattern.test(line.message) && line.fields?.jobId === jobId)

    it('is not started again, its run is not aborted, and it completes once', async () => {
      const { id, jobId, lines, state, release } = await running()
      await leaseRunsOut(id, jobId)
      await staleNoticeSettled()
      expect(state).toEqual({ runs: 1, aborted: false })
      expect(logged(lines, /handed again/, jobId)).toBe(true)
      release.open()
      expect(await finished(id, jobId, timed)).toMatchObject({
        status: 'COMPLETED',
        output: 'once',
      })
      expect(state).toEqual({ runs: 1, aborted: false })
    })

    it('keeps running when the stale stop notice comes after the take (a heartbeat confirms)', async () => {
      const { id, jobId, state, release } = await running(undefined, ({ url }) =>
        url.includes('/job-stop/') ? { delayAnswerMs: 1_500 } : 'forward',
      )
      await leaseRunsOut(id, jobId)
      await staleNoticeSettled()
      expect(state).toEqual({ runs: 1, aborted: false })
      release.open()
      expect(await finished(id, jobId, timed)).toMatchObject({ status: 'COMPLETED' })
      expect(state.runs).toBe(1)
    })

    it('keeps running when the stale stop notice comes just before the take', async () => {
      const { id, jobId, state, release } = await running(undefined, ({ url }) =>
        url.includes('/job-take') ? { delayAnswerMs: 400 } : 'forward',
      )
      await leaseRunsOut(id, jobId)
      await staleNoticeSettled()
      expect(state).toEqual({ runs: 1, aborted: false })
      release.open()
      expect(await finished(id, jobId, timed)).toMatchObject({ status: 'COMPLETED' })
      expect(state.runs).toBe(1)
    })

    it('delivers a result that was waiting for delivery to the new attempt', async () => {
      let refusing = true
      const { id, jobId, lines, state, release } = await running(
        () => 'kept',
        ({ method, url }) =>
          refusing && method === 'POST' && url.includes('/job-done')
            ? { status: 503, body: 'unavailable' }
            : 'forward',
      )
      release.open()
      await eventually('result refused', () => logged(lines, /failed: retrying/, jobId))
      await leaseRunsOut(id, jobId)
      await eventually('handed again', () => logged(lines, /handed again/, jobId))
      expect(lines.find((line) => /handed again/.test(line.message))?.fields).toMatchObject({
        run: 'result waiting for delivery',
      })
      refusing = false
      expect(await finished(id, jobId, timed)).toMatchObject({
        status: 'COMPLETED',
        output: 'kept',
      })
      expect(state).toEqual({ runs: 1, aborted: false })
    })

    it('still stops a job handed back when the platform then cancels it', async () => {
      const { id, jobId, state, worker } = await running()
      await leaseRunsOut(id, jobId)
      await staleNoticeSettled()
      const cancelled = await timed.call(`/v2/${id}/cancel/${jobId}`, { method: 'POST' })
      expect(cancelled.status).toBe(200)
      await eventually('handler aborted', () => state.aborted)
      await eventually('slot freed', () => worker.activeJobs === 0)
      expect(await status(id, jobId, timed)).toMatchObject({ status: 'CANCELLED' })
    })

    it('stops a cancelled job at once-ish while the worker takes more (a free slot)', async () => {
      const { id, jobId, state, worker } = await running()
      const cancelled = await timed.call(`/v2/${id}/cancel/${jobId}`, { method: 'POST' })
      expect(cancelled.status).toBe(200)
      await eventually('handler aborted', () => state.aborted, 5_000)
      await eventually('slot freed', () => worker.activeJobs === 0)
      expect(state.runs).toBe(1)
    })
  })
})
