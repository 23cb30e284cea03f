import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { pino } from 'pino'
import { afterAll, describe, expect, it } from 'vitest'
import { freePort } from '../../src/control/free-port.js'
import { startPlatform, type Platform } from '../../src/platform.js'
import { repoRoot } from '../support/cli.js'
import { TEST_ADMIN_KEY, testConfig } from '../support/platform.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const FIXTURE = path.join(repoRoot, 'test', 'fixtures', 'sdk-worker.mjs')
const HEARTBEAT_TIMEOUT_MS = 3000

/**
 * A restarted server adopts the managed workers that kept running (docs/serverless-workers.md).
 * It has heard nothing from them yet (what workers report lives in memory), so their silence is
 * counted from the restart: found by hand with a runpod-python worker, which the first tick after
 * a restart declared UNHEALTHY ("missed its heartbeats") and replaced although it was polling.
 */
describe('managed workers across a server restart', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'podyard-adoption-'))
  let platform: Platform | undefined

  const start = async (port: number) => {
    const config = testConfig(dir, {
      // Workers keep the address they were started with: the restarted server listens there.
      port,
      sandbox: 'none' as const,
      workers: {
        intervalMs: 200,
        pingIntervalMs: 500,
        heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS,
        startTimeoutMs: 30_000,
        stopGraceMs: 2000,
        unhealthyRetentionMs: 60_000,
      },
    })
    platform = await startPlatform(config, { logger: pino({ level: 'silent' }) })
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
    const text = await response.text()
    return { status: response.status, body: (text === '' ? null : JSON.parse(text)) as Json }
  }

  afterAll(async () => {
    if (platform) {
      await platform.app.close()
      await platform.autoscaler.stop()
      for (const driver of platform.drivers) {
        for (const workload of await driver.list()) await driver.remove(workload.id)
      }
      await platform.close()
    }
    rmSync(dir, { recursive: true, force: true })
  })

  it('keeps a worker that was ready before the restart and still polls', async () => {
    const port = await freePort('127.0.0.1')
    await start(port)
    const created = await call('/v2/serverless', {
      method: 'POST',
      json: {
        name: 'adopted',
        image: 'podyard/test-worker',
        args: `${process.execPath} ${FIXTURE}`,
        disk: 5,
        env: { TEST_DIR: dir },
        cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
        workers: { min: 1, max: 1, idleTimeout: 5 },
      },
    })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    const id = created.body.id as string
    const deadline = Date.now() + 30_000
    let workerId: string | undefined
    while (workerId === undefined) {
      const list = (await call(`/v2/serverless/${id}/workers`)).body
      if (list.workers[0]?.status === 'IDLE') workerId = list.workers[0].id as string
      else if (Date.now() > deadline) throw new Error(`no idle worker: ${JSON.stringify(list)}`)
      else await sleep(100)
    }
    // Ready for longer than the heartbeat timeout, as any worker is some time after it started.
    await sleep(HEARTBEAT_TIMEOUT_MS + 500)

    // The server goes away (its connections dropped, as when it is killed) and comes back.
    const closing = platform!.close()
    platform!.app.server.closeAllConnections()
    await closing
    platform = undefined
    await start(port)

    // Several ticks, each of which could declare the worker lost, while it reconnects.
    const statuses = new Set<string>()
    for (let i = 0; i < 15; i++) {
      const list = (await call(`/v2/serverless/${id}/workers`)).body
      for (const worker of list.workers) statuses.add(`${worker.id} ${worker.status}`)
      await sleep(200)
    }
    expect([...statuses]).toEqual([`${workerId} IDLE`])
    const job = await call(`/v2/${id}/runsync`, { method: 'POST', json: { input: { n: 1 } } })
    expect(job.body).toMatchObject({ status: 'COMPLETED', workerId, output: { worker: workerId } })
  }, 90_000)
})
