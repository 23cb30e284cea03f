import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { afterAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/load-config.js'
import { startPlatform, type Platform } from '../../src/platform.js'
import { ManualClock } from '../../src/shared/clock.js'
import { TEST_ADMIN_KEY } from '../support/platform.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const HOUR = 3_600_000
const usd = (nano: number) => Math.round(nano / 1000) / 1_000_000

/**
 * The meter across a real server restart: a pod metered for an hour, the server
 * stopped and started again on the same store, the pod metered for another hour. The total is
 * exactly two hours: nothing charged twice, no gap.
 */
describe('the billing meter across a server restart', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'podyard-meter-restart-'))
  const clock = new ManualClock('2026-03-02T10:00:00.000Z')
  let platform: Platform | undefined

  const start = async () => {
    const config = {
      ...loadConfig({ cwd: dir, env: {}, flags: {} }),
      port: 0,
      adminKey: TEST_ADMIN_KEY,
      logLevel: 'silent' as const,
      // Only the test ticks the meter.
      billing: { meterIntervalMs: 24 * HOUR, enforce: false },
    }
    platform = await startPlatform(config, { logger: pino({ level: 'silent' }), clock })
    return platform
  }
  const call = async (pathAndQuery: string, init: { method?: string; json?: unknown } = {}) => {
    const response = await fetch(`${platform!.url}${pathAndQuery}`, {
      method: init.method ?? 'GET',
      headers: {
        authorization: `Bearer ${TEST_ADMIN_KEY}`,
        ...(init.json === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
    })
    return { status: response.status, body: (await response.json()) as Json }
  }

  afterAll(async () => {
    if (platform) {
      await platform.app.close()
      await platform.lifecycle.stop()
      for (const driver of platform.drivers) {
        for (const workload of await driver.list()) await driver.remove(workload.id)
      }
      await platform.close()
    }
    rmSync(dir, { recursive: true, force: true })
  })

  it('charges a pod exactly once for every millisecond, before and after the restart', async () => {
    await start()
    const created = await call('/v2/pods', {
      method: 'POST',
      json: { name: 'metered', image: 'x', cpu: { id: 'cpu3c', vcpuCount: 2 }, disk: 20 },
    })
    expect(created.status).toBe(201)
    const pod = created.body as { id: string; cost: number; disk: number }

    clock.advance(HOUR)
    await platform!.meter.tick()
    await platform!.close()
    platform = undefined

    // Down for 30 minutes: the pod keeps its host (a restart adopts it), so it is charged.
    clock.advance(30 * 60_000)
    await start()
    await platform!.meter.tick()
    clock.advance(30 * 60_000)
    await platform!.meter.tick()
    await platform!.meter.tick()

    const report = await call(
      `/v2/billing/pods?podId=${pod.id}&bucketSize=day&startTime=2026-03-02T00:00:00Z&endTime=2026-03-03T00:00:00Z`,
    )
    expect(report.status).toBe(200)
    expect(report.body.records).toHaveLength(1)
    const diskNano = Math.floor((pod.disk * 100_000_000 * 2 * HOUR) / (720 * HOUR))
    expect(report.body.records[0]).toMatchObject({
      podId: pod.id,
      cpuAmount: usd(pod.cost * 2e9),
      diskAmount: usd(diskNano),
      totalAmount: usd(pod.cost * 2e9 + diskNano),
    })
    const account = await call('/v2/account')
    expect(account.body.balance).toBe(-usd(pod.cost * 2e9 + diskNano))
  }, 60_000)
})
