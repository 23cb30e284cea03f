import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CreditService } from '../../src/domain/billing/credit-service.js'
import { systemClock } from '../../src/shared/clock.js'
import { KyselyCreditRepo } from '../../src/store/credit-repo.js'
import { json } from '../support/http.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'
import { createSdkWorkerEndpoint } from '../support/sdk-worker-endpoints.js'

/**
 * The billing policy reaching the platform's workers (billing.enforce on): a worker that would
 * go over the spend limit is not started (THROTTLED with why), and an account out of credits
 * has its idle workers stopped and none started.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

describe('workers under the billing policy', () => {
  let platform: TestPlatform
  let key: string
  let accountId: string

  const until = async <T>(what: string, probe: () => Promise<T>, done: (v: T) => boolean) => {
    const deadline = Date.now() + 30_000
    for (;;) {
      const value = await probe()
      if (done(value)) return value
      if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  const workersOf = async (id: string) =>
    json<Json>(await platform.call(`/v2/serverless/${id}/workers`, { key }))
  const admin = (route: string, body: unknown, method = 'POST') =>
    platform.call(`/v2/admin/accounts/${accountId}${route}`, { method, json: body })

  beforeAll(async () => {
    platform = await startTestPlatform({
      sandbox: 'none',
      billing: { enforce: true, meterIntervalMs: 24 * 3600_000 },
      workers: {
        intervalMs: 200,
        pingIntervalMs: 1000,
        heartbeatTimeoutMs: 5000,
        startTimeoutMs: 30_000,
        stopGraceMs: 2000,
        unhealthyRetentionMs: 1500,
      },
    })
    key = await otherAccountKey(platform, 'worker-billing@example.com')
    accountId = (await json<Json>(await platform.call('/v2/account', { key }))).id
    await json(await admin('/credits', { amount: 5 }))
  })
  afterAll(async () => {
    await platform?.close()
  })

  it('keeps a worker over the spend limit THROTTLED, starts it once the limit allows', async () => {
    // A cpu3c worker with 2 vCPUs costs 2 x $0.03/h at serverless prices.
    await json(await admin('', { spendLimit: 0.05 }, 'PATCH'))
    const answer = await createSdkWorkerEndpoint(platform, key, 'billed', {
      workers: { min: 1, max: 1, idleTimeout: 2 },
    })
    expect(answer.status, JSON.stringify(answer.body)).toBe(201)
    const created = answer.body as Json
    const throttled = await until(
      'a throttled worker',
      () => workersOf(created.id),
      (l) => l.workers[0]?.status === 'THROTTLED',
    )
    expect(throttled.workers[0].reason).toMatch(
      /^spend limit exceeded: to start a serverless worker would cost \$0\.06\/h/,
    )

    await json(await admin('', { spendLimit: 1 }, 'PATCH'))
    const idle = await until(
      'an idle worker',
      () => workersOf(created.id),
      (l) => l.workers[0]?.status === 'IDLE',
    )
    const workerId = idle.workers[0].id as string

    // The balance used up: the idle worker is stopped and none is started.
    const credits = new CreditService(new KyselyCreditRepo(platform.store.db), systemClock)
    await credits.charge({ accountId, amountNano: 5_000_000_000, note: 'test: use it all' })
    await until(
      'no worker',
      () => workersOf(created.id),
      (l) => l.workers.length === 0,
    )
    expect((await platform.drivers[0]!.list()).map((w) => w.id)).not.toContain(workerId)
    await new Promise((resolve) => setTimeout(resolve, 1000))
    expect((await workersOf(created.id)).workers).toEqual([])
    const run = await platform.call(`/v2/${created.id}/run`, {
      method: 'POST',
      key,
      json: { input: {} },
    })
    expect(run.status).toBe(402)
  }, 60_000)
})
