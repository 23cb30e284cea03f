import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Config } from '../../src/config/schema.js'
import { MAX_LISTED_UNHEALTHY_WORKERS } from '../../src/domain/serverless/worker.js'
import { repoRoot, runCli, settingsFreeEnv } from '../support/cli.js'
import { callJson, otherAccountKey, type TestPlatform } from '../support/platform.js'
import { platformStores } from '../support/platform-stores.js'
import { until } from '../support/until.js'

/**
 * Workers that crash in a loop: the endpoint backs off, exponentially, and
 * a healthy start ends it; the crashed worker's last lines, its exit reason and the next start
 * are visible in the workers list, its logs and /health. Real worker processes
 * (test/fixtures/crashing-worker.mjs) under the process driver, over real HTTP.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const FIXTURE = path.join(repoRoot, 'test', 'fixtures', 'crashing-worker.mjs')
const EXIT_REASON = 'exited with code 1 before asking for a job'

const WORKER_SETTINGS: Partial<Config['workers']> = {
  intervalMs: 200,
  pingIntervalMs: 1000,
  heartbeatTimeoutMs: 5000,
  startTimeoutMs: 30_000,
  stopGraceMs: 2000,
  unhealthyRetentionMs: 60_000,
}

describe.each(platformStores())('workers that crash in a loop, on $name', (store) => {
  let platform: TestPlatform
  let dir: string

  const call = (pathAndQuery: string, init: Parameters<TestPlatform['call']>[1] = {}) =>
    callJson(platform, pathAndQuery, init)
  const health = async (id: string) => (await call(`/v2/${id}/health`)).body
  const workersOf = async (id: string) => (await call(`/v2/serverless/${id}/workers`)).body
  /** When each worker started, ms since epoch. */
  const starts = () =>
    existsSync(path.join(dir, 'started'))
      ? readFileSync(path.join(dir, 'started'), 'utf8')
          .trim()
          .split('\n')
          .map((line) => Number(line.split(' ')[0]))
      : []

  async function createEndpoint(key?: string): Promise<string> {
    const created = await call('/v2/serverless', {
      ...(key === undefined ? {} : { key }),
      method: 'POST',
      json: {
        name: 'crash-loop',
        image: 'podyard/test-worker',
        args: `${process.execPath} ${FIXTURE}`,
        env: { TEST_DIR: dir },
        cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
        workers: { min: 1, max: 1, idleTimeout: 5 },
      },
    })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    return created.body.id as string
  }

  async function start(workers: Partial<Config['workers']>): Promise<void> {
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-crash-loop-'))
    platform = await store.start({ sandbox: 'none', workers })
  }

  async function stop(): Promise<void> {
    await platform?.close()
    rmSync(dir, { recursive: true, force: true })
  }

  describe('with the default backoff (1 s, doubling, at most 60 s)', () => {
    beforeAll(() => start(WORKER_SETTINGS))
    afterAll(stop)

    it('backs off, shows why and keeps the last lines; a healthy start ends it', async () => {
      const id = await createEndpoint()
      // Every delay seen in /health, by the number of failures in a row.
      const delays = new Map<number, number>()
      const third = await until(
        'three failures in a row',
        async () => {
          const backoff = (await health(id)).startBackoff
          if (backoff) {
            delays.set(
              backoff.failures,
              Date.parse(backoff.nextStartAt) - Date.parse(backoff.lastFailure.at),
            )
          }
          return backoff
        },
        (backoff) => backoff?.failures === 3,
      )
      expect(delays).toEqual(
        new Map([
          [1, 1000],
          [2, 2000],
          [3, 4000],
        ]),
      )
      expect(third).toEqual({
        failures: 3,
        lastFailure: {
          workerId: expect.any(String),
          reason: EXIT_REASON,
          at: expect.any(String),
          // Its last 20 lines of output: what a caller waiting for a job is shown.
          lastLines: [
            ...Array.from({ length: 19 }, (_, i) => `loading line ${132 + i}`),
            "Error: Cannot find module 'handler-dependency'",
          ],
        },
        nextStartAt: expect.any(String),
      })
      // Restarts slow down: within 6 s of the first start, at most 1 + 1 s + 2 s + 4 s later.
      const first = starts()[0]!
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, first + 6000 - Date.now())))
      const inWindow = starts().filter((at) => at < first + 6000)
      expect(inWindow.length).toBeGreaterThanOrEqual(2)
      expect(inWindow.length).toBeLessThanOrEqual(4)

      // The workers list: each crashed worker with its reason, and the backoff.
      const list = await workersOf(id)
      expect(list.summary.unhealthy).toBe(list.workers.length)
      for (const worker of list.workers) {
        expect(worker).toMatchObject({ status: 'UNHEALTHY', reason: EXIT_REASON })
      }
      expect(list.startBackoff).toMatchObject({
        failures: expect.any(Number),
        lastFailure: { reason: EXIT_REASON },
      })
      expect(list.startBackoff.failures).toBeGreaterThanOrEqual(3)
      expect((await health(id)).workers).toMatchObject({ ready: 0 })

      // Its last 100 lines are read after its workload is gone.
      const crashed = third.lastFailure.workerId as string
      const logs = await platform.call(
        `/v2/serverless/${id}/workers/${crashed}/logs?follow=false&tail=5000&source=container`,
      )
      expect(logs.status).toBe(200)
      const lines = (await logs.text())
        .split('\n\n')
        .filter((event) => event.includes('data: '))
        .map((event) => JSON.parse(event.slice(event.indexOf('data: ') + 6)).line as string)
      expect(lines).toHaveLength(100)
      expect(lines[0]).toBe('loading line 52')
      expect(lines.at(-1)).toBe("Error: Cannot find module 'handler-dependency'")
      // Followed, the stream ends after them: the worker writes nothing more.
      const followed = await platform.call(
        `/v2/serverless/${id}/workers/${crashed}/logs?tail=1&source=container`,
      )
      expect(await followed.text()).toContain('handler-dependency')
      // Both sources (the default), followed: the platform's lines say why, then it ends too.
      const both = await platform.call(`/v2/serverless/${id}/workers/${crashed}/logs?tail=3`)
      expect(await both.text()).toContain(`UNHEALTHY: ${EXIT_REASON}`)

      // A healthy start ends the backoff.
      writeFileSync(path.join(dir, 'healthy'), '')
      const healthy = await until(
        'a healthy worker',
        () => health(id),
        (h) => h.workers.ready === 1,
        30_000,
      )
      expect(healthy).not.toHaveProperty('startBackoff')
      expect(await workersOf(id)).not.toHaveProperty('startBackoff')

      // The next failure backs off from the start again: 1 s, not 8 s.
      const job = (
        await call(`/v2/${id}/run`, { method: 'POST', json: { input: { crashAlways: true } } })
      ).body.id as string
      const again = await until(
        'a failure after the healthy start',
        async () => (await health(id)).startBackoff,
        (backoff) => backoff !== undefined,
      )
      await call(`/v2/${id}/cancel/${job}`, { method: 'POST' })
      expect(again).toMatchObject({
        failures: 1,
        lastFailure: { reason: 'exited with code 3 while ready' },
      })
      expect(Date.parse(again.nextStartAt) - Date.parse(again.lastFailure.at)).toBe(1000)
      await until(
        'healthy again',
        () => health(id),
        (h) => h.workers.ready === 1 && h.startBackoff === undefined,
      )
      await call(`/v2/serverless/${id}`, { method: 'DELETE' })
    }, 90_000)
  })

  describe('with a backoff of a minute from the first failure', () => {
    beforeAll(() =>
      start({ ...WORKER_SETTINGS, startBackoffMs: 60_000, startBackoffMaxMs: 60_000 }),
    )
    afterAll(stop)

    it('ends the backoff when the endpoint gets a new version: the fix starts at once', async () => {
      const id = await createEndpoint()
      const backoff = await until(
        'the first failure',
        async () => (await health(id)).startBackoff,
        (b) => b !== undefined,
        30_000,
      )
      expect(Date.parse(backoff.nextStartAt) - Date.parse(backoff.lastFailure.at)).toBe(60_000)
      // The fix: the worker finds what it missed, and the endpoint's env changes (a new version).
      writeFileSync(path.join(dir, 'healthy'), '')
      const updated = await call(`/v2/serverless/${id}`, {
        method: 'PATCH',
        json: { env: { TEST_DIR: dir, FIXED: '1' } },
      })
      expect(updated.status, JSON.stringify(updated.body)).toBe(200)
      expect((await health(id)).startBackoff).toBeUndefined()
      // Ready well before the old version's minute is over.
      const ready = await until(
        'a worker of the new version',
        () => health(id),
        (h) => h.workers.ready === 1,
        30_000,
      )
      expect(ready).not.toHaveProperty('startBackoff')
      expect(Date.now()).toBeLessThan(Date.parse(backoff.nextStartAt))
      await call(`/v2/serverless/${id}`, { method: 'DELETE' })
    }, 90_000)
  })

  describe('with a backoff too short to matter', () => {
    beforeAll(() => start({ ...WORKER_SETTINGS, startBackoffMs: 1, startBackoffMaxMs: 1 }))
    afterAll(stop)

    it(`lists at most ${MAX_LISTED_UNHEALTHY_WORKERS} UNHEALTHY workers of an endpoint; the logs of those it no longer lists stay readable`, async () => {
      // An account that is not the admin, as users run it; another one must not see its workers.
      const key = await otherAccountKey(platform, 'crash-loop-owner@example.com')
      const stranger = await otherAccountKey(platform, 'crash-loop-stranger@example.com')
      const id = await createEndpoint(key)
      await until(
        'more crashes than are listed',
        async () => starts().length,
        (n) => n > MAX_LISTED_UNHEALTHY_WORKERS + 3,
        60_000,
      )
      const list = (await call(`/v2/serverless/${id}/workers`, { key })).body
      expect(list.summary.unhealthy).toBe(MAX_LISTED_UNHEALTHY_WORKERS)
      expect(list.workers.filter((w: Json) => w.status === 'UNHEALTHY')).toHaveLength(
        MAX_LISTED_UNHEALTHY_WORKERS,
      )

      // The first worker was replaced long ago and is no longer listed: its kept lines and
      // what the platform did with it are still served.
      const first = readFileSync(path.join(dir, 'started'), 'utf8').split('\n')[0]!.split(' ')[1]!
      expect(list.workers.map((w: Json) => w.id)).not.toContain(first)
      const logsPath = `/v2/serverless/${id}/workers/${first}/logs?follow=false&tail=5000`
      const output = await platform.call(`${logsPath}&source=container`, { key })
      expect(output.status).toBe(200)
      const lines = (await output.text())
        .split('\n\n')
        .filter((event) => event.includes('data: '))
        .map((event) => JSON.parse(event.slice(event.indexOf('data: ') + 6)).line as string)
      expect(lines).toHaveLength(100)
      expect(lines.at(-1)).toBe("Error: Cannot find module 'handler-dependency'")
      const system = await platform.call(`${logsPath}&source=system`, { key })
      expect(await system.text()).toContain(`UNHEALTHY: ${EXIT_REASON}`)
      // Followed, the stream ends after them.
      const followed = await platform.call(`/v2/serverless/${id}/workers/${first}/logs?tail=2`, {
        key,
      })
      expect(await followed.text()).toContain('handler-dependency')
      expect((await platform.call(`${logsPath}`, { key: stranger })).status).toBe(404)

      // The same through the CLI, as its owner.
      const home = mkdtempSync(path.join(tmpdir(), 'podyard-crash-loop-cli-'))
      try {
        const cli = await runCli(
          ['endpoints', 'worker-logs', id, first, '--source', 'container', '--tail', '3'],
          { ...settingsFreeEnv(home), PODYARD_URL: platform.url, PODYARD_API_KEY: key },
        )
        expect(cli.stderr).toBe('')
        expect(cli.code).toBe(0)
        expect(cli.stdout).toContain("Error: Cannot find module 'handler-dependency'")
        expect(cli.stdout).toContain('loading line 150')
      } finally {
        rmSync(home, { recursive: true, force: true })
      }
      await call(`/v2/serverless/${id}`, { method: 'DELETE', key })
    }, 90_000)
  })
})
