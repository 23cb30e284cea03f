import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import { startPlatform, type Platform } from '../../src/platform.js'
import { ManualClock, type Clock } from '../../src/shared/clock.js'
import { callJson, callPlatform, stopPlatform, testConfig } from '../support/platform.js'
import { restartableStores, type StoreKind } from '../support/restartable-platform.js'
import { freshPostgresDatabase, POSTGRES_URL_ENV } from '../support/stores.js'
import { until } from '../support/until.js'

interface PodJson {
  id: string
  status: string
  statusReason: string | null
}

/**
 * The pod lifecycle reacts to events (docs/pods.md, "Lifecycle"): a pod's process that dies is
 * noticed when it dies, its own or one adopted after a restart; a pod with an http port is
 * RUNNING as soon as the port answers, one without once it has been up for a second.
 */
describe.each(restartableStores())('pod lifecycle on %s', (kind: StoreKind) => {
  const cleanups: Array<() => Promise<void>> = []
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  })

  /** A platform on a data dir (and database) that outlive it, for a successor to adopt. */
  async function platformOn(dataDir: string, storeUrl: string | undefined, clock?: Clock) {
    const config = testConfig(dataDir, { ...(storeUrl ? { storeUrl } : {}) })
    return startPlatform(config, {
      logger: pino({ level: 'silent' }),
      ...(clock ? { clock } : {}),
    })
  }

  async function place(clock?: Clock) {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-lifecycle-'))
    const database =
      kind === 'postgres' ? await freshPostgresDatabase(process.env[POSTGRES_URL_ENV]!) : undefined
    cleanups.push(async () => {
      await database?.drop()
      rmSync(dataDir, { recursive: true, force: true })
    })
    return { dataDir, storeUrl: database?.url, clock }
  }

  function serving(platform: Platform) {
    cleanups.push(() => stopPlatform(platform))
    const api = {
      call: (pathAndQuery: string, init?: Parameters<typeof callPlatform>[2]) =>
        callPlatform(platform.url, pathAndQuery, init),
    }
    return {
      create: async (body: Record<string, unknown>) => {
        const { status, body: pod } = await callJson(api, '/v2/pods', {
          method: 'POST',
          json: { name: 'p', image: 'x', cpu: { id: 'cpu3c', vcpuCount: 2 }, ...body },
        })
        expect(status).toBe(201)
        return pod as PodJson
      },
      pod: async (id: string) => (await callJson(api, `/v2/pods/${id}`)).body as PodJson,
      /** The lines of the pod's system log: its status changes with their reasons. */
      events: async (id: string) =>
        [
          ...(
            await (await api.call(`/v2/pods/${id}/logs?follow=false&source=system`)).text()
          ).matchAll(/"line":"([^"]*)"/g),
        ].map((match) => match[1]!),
    }
  }

  function groupOf(dataDir: string, podId: string): number {
    const runtimeDir = path.join(testConfig(dataDir).dataDir, 'runtime', 'process')
    const file = path.join(runtimeDir, podId, 'state.json')
    return (JSON.parse(readFileSync(file, 'utf8')) as { pgid: number }).pgid
  }

  const statusOf = async (api: ReturnType<typeof serving>, id: string, wanted: string) =>
    until(
      `pod ${id} ${wanted}`,
      () => api.pod(id),
      (pod) => pod.status === wanted,
      20_000,
    )

  it('notices at once that a pod process died, its own or one adopted after a restart', async () => {
    const where = await place()
    const first = await platformOn(where.dataDir, where.storeUrl)
    const api = serving(first)
    const pod = await api.create({ args: 'exec sleep 1000' })
    await statusOf(api, pod.id, 'RUNNING')
    process.kill(-groupOf(where.dataDir, pod.id), 'SIGKILL')
    // Noticed well before the lifecycle's next look at every pod (every 30 s).
    // The restart's reason stands in the system log (statusReason is only that of the
    // PROVISIONING step, over in a moment).
    const restarted = await until(
      'the restart',
      () => api.events(pod.id),
      (lines) => lines.some((line) => line.includes('restart 1 of 3')),
      10_000,
    )
    expect(restarted.find((line) => line.includes('restart 1 of 3'))).toMatch(
      /^PROVISIONING: (its process is gone|the process exited)/,
    )
    await statusOf(api, pod.id, 'RUNNING')

    // The server goes away, the pod's process stays; the next server adopts it.
    await first.app.close()
    await first.lifecycle.stop()
    await first.close()
    cleanups.pop()
    const second = await platformOn(where.dataDir, where.storeUrl)
    const again = serving(second)
    await statusOf(again, pod.id, 'RUNNING')
    process.kill(-groupOf(where.dataDir, pod.id), 'SIGKILL')
    await until(
      'the restart of the adopted pod',
      () => again.events(pod.id),
      (lines) => lines.some((line) => line.includes('restart 2 of 3')),
      10_000,
    )
  })

  it('makes a pod with an http port RUNNING when the port answers, one without after a second up', async () => {
    // The clock stands still unless told: only the port can make the first pod RUNNING.
    const clock = new ManualClock(new Date())
    const where = await place(clock)
    const api = serving(await platformOn(where.dataDir, where.storeUrl, clock))
    const listener = `exec node -e "require('node:http').createServer((q, s) => s.end()).listen(Number(process.env.RUNPOD_TCP_PORT_8080))"`
    const web = await api.create({ ports: ['8080/http'], args: listener })
    const plain = await api.create({ args: 'exec sleep 1000' })
    await statusOf(api, web.id, 'RUNNING')
    expect((await api.pod(plain.id)).status).toBe('STARTING')
    clock.advance(999)
    await new Promise((resolve) => setTimeout(resolve, 1500))
    expect((await api.pod(plain.id)).status).toBe('STARTING')
    clock.advance(1)
    await statusOf(api, plain.id, 'RUNNING')
  })
})
