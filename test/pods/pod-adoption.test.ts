import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import SqliteDatabase from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { startServe } from '../support/cli.js'
import { killProcessesWith, processesWith, removeDataDir } from '../support/processes.js'
import { restartableStores } from '../support/restartable-platform.js'
import { freshPostgresDatabase, POSTGRES_URL_ENV } from '../support/stores.js'

const KEY = 'pyd_adoption-test-key-0123456789'

describe('pods across a server crash', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-adopt-'))
  // Unique durations name this run's processes, so the checks see nothing else.
  const keptSleep = `sleep ${4_000_000 + Math.floor(Math.random() * 1_000_000)}`
  const doomedSleep = `sleep ${5_000_000 + Math.floor(Math.random() * 1_000_000)}`
  afterAll(() => {
    for (const marker of [keptSleep, doomedSleep]) {
      killProcessesWith(marker)
    }
    removeDataDir(dataDir)
  })

  async function serve() {
    const server = await startServe(['--port', '0', '--data-dir', dataDir, '--log-level', 'warn'], {
      PODYARD_ADMIN_KEY: KEY,
    })
    const call = async (method: string, urlPath: string, json?: unknown) => {
      const response = await fetch(`${server.url}${urlPath}`, {
        method,
        headers: {
          authorization: `Bearer ${KEY}`,
          ...(json ? { 'content-type': 'application/json' } : {}),
        },
        ...(json ? { body: JSON.stringify(json) } : {}),
      })
      return {
        status: response.status,
        body:
          response.status === 204
            ? undefined
            : ((await response.json()) as { id: string; status: string; startedAt: string | null }),
      }
    }
    const waitRunning = async (id: string) => {
      await expect
        .poll(async () => (await call('GET', `/v2/pods/${id}`)).body!.status, {
          timeout: 20_000,
          interval: 200,
        })
        .toBe('RUNNING')
      return (await call('GET', `/v2/pods/${id}`)).body!
    }
    return { server, call, waitRunning }
  }

  it(
    're-adopts running pods after the server is killed, and removes workloads of pods that are gone',
    { timeout: 90_000 },
    async () => {
      const first = await serve()
      const kept = await first.call('POST', '/v2/pods', {
        name: 'kept',
        image: 'x',
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        args: keptSleep,
      })
      const doomed = await first.call('POST', '/v2/pods', {
        name: 'doomed',
        image: 'x',
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        args: doomedSleep,
      })
      expect(kept.status).toBe(201)
      const before = await first.waitRunning(kept.body!.id)
      await first.waitRunning(doomed.body!.id)
      const pids = processesWith(`^${keptSleep}$`)
      expect(pids).toHaveLength(1)

      first.server.child.kill('SIGKILL')
      await first.server.exited
      expect(processesWith(`^${keptSleep}$`)).toEqual(pids)
      // While the server is down the doomed pod disappears from the store (as a purge would do).
      const db = new SqliteDatabase(path.join(dataDir, 'podyard.db'))
      db.prepare('delete from pods where id = ?').run(doomed.body!.id)
      db.close()

      const second = await serve()
      try {
        const after = await second.waitRunning(kept.body!.id)
        expect(after.startedAt).toBe(before.startedAt)
        expect(processesWith(`^${keptSleep}$`)).toEqual(pids)
        await expect.poll(() => processesWith(`^${doomedSleep}$`), { timeout: 15_000 }).toEqual([])

        expect((await second.call('DELETE', `/v2/pods/${kept.body!.id}`)).status).toBe(204)
        await expect.poll(() => processesWith(`^${keptSleep}$`), { timeout: 15_000 }).toEqual([])
      } finally {
        second.server.child.kill('SIGTERM')
        await second.server.exited
      }
    },
  )
})

describe.each(restartableStores())('terminating many pods across a server crash on %s', (kind) => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-terminate-'))
  // Ignores SIGTERM (an ignored signal stays ignored across exec): each stop waits out its grace.
  const stubborn = `sleep ${6_000_000 + Math.floor(Math.random() * 1_000_000)}`
  let database: { url: string; drop(): Promise<void> } | undefined
  afterAll(async () => {
    killProcessesWith(`^${stubborn}$`)
    await database?.drop()
    removeDataDir(dataDir)
  })

  it(
    'finishes, after a restart, terminating the pods a killed server left running',
    { timeout: 120_000 },
    async () => {
      database =
        kind === 'postgres'
          ? await freshPostgresDatabase(process.env[POSTGRES_URL_ENV]!)
          : undefined
      const serve = () =>
        startServe(
          [
            '--port',
            '0',
            '--data-dir',
            dataDir,
            '--log-level',
            'warn',
            ...(database ? ['--store-url', database.url] : []),
          ],
          { PODYARD_ADMIN_KEY: KEY },
        )
      const call = (url: string, method: string, urlPath: string, json?: unknown) =>
        fetch(`${url}${urlPath}`, {
          method,
          headers: {
            authorization: `Bearer ${KEY}`,
            ...(json ? { 'content-type': 'application/json' } : {}),
          },
          ...(json ? { body: JSON.stringify(json) } : {}),
        })
      const first = await serve()
      const ids: string[] = []
      for (let i = 0; i < 30; i++) {
        const created = await call(first.url, 'POST', '/v2/pods', {
          name: `stubborn-${i}`,
          image: 'x',
          cpu: { id: 'cpu3c', vcpuCount: 2 },
          args: `trap '' TERM; exec ${stubborn}`,
        })
        expect(created.status).toBe(201)
        ids.push(((await created.json()) as { id: string }).id)
      }
      await expect
        .poll(() => processesWith(`^${stubborn}$`).length, { timeout: 30_000, interval: 200 })
        .toBe(ids.length)
      const deletes = await Promise.all(
        ids.map((id) => call(first.url, 'DELETE', `/v2/pods/${id}`)),
      )
      expect(deletes.map((r) => r.status)).toEqual(ids.map(() => 204))
      // Mid-termination: every process still waits out its 10 s grace when the server dies.
      first.child.kill('SIGKILL')
      await first.exited
      expect(processesWith(`^${stubborn}$`)).toHaveLength(ids.length)

      const second = await serve()
      try {
        await expect
          .poll(() => processesWith(`^${stubborn}$`), { timeout: 60_000, interval: 500 })
          .toEqual([])
        const runtimeDir = path.join(dataDir, 'runtime', 'process')
        // Each removal also unmounts and deletes the pod's disk image (about 0.2 s each as root).
        await expect
          .poll(() => ids.filter((id) => existsSync(path.join(runtimeDir, id))), {
            timeout: 30_000,
          })
          .toEqual([])
      } finally {
        second.child.kill('SIGTERM')
        await second.exited
      }
    },
  )
})
