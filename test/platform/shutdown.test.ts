import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { startServe } from '../support/cli.js'
import { killProcessesWith, removeDataDir } from '../support/processes.js'

const KEY = 'pyd_shutdown-admin-key-0123456789'

/** Reads a response body until it ends; resolves with what came and when it ended. */
async function readToEnd(response: Response, seen: (text: string) => void) {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let text = ''
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      text += decoder.decode(value, { stream: true })
      seen(text)
    }
  } catch {
    // A connection cut by the server ends the stream too; what counts is when.
  }
  return { text, endedAt: Date.now() }
}

describe('SIGTERM with clients connected', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-shutdown-'))
  const marker = `${6_000_000 + Math.floor(Math.random() * 1_000_000)}`
  afterAll(() => {
    killProcessesWith(`tick-${marker}`)
    removeDataDir(dataDir)
  })

  it(
    'ends log followers and long polls at once and exits within a few seconds',
    { timeout: 90_000 },
    async () => {
      const { child, url, exited } = await startServe(
        ['--port', '0', '--data-dir', dataDir, '--log-level', 'warn'],
        { PODYARD_ADMIN_KEY: KEY },
      )
      const call = (method: string, urlPath: string, json?: unknown) =>
        fetch(`${url}${urlPath}`, {
          method,
          headers: {
            authorization: `Bearer ${KEY}`,
            ...(json ? { 'content-type': 'application/json' } : {}),
          },
          ...(json ? { body: JSON.stringify(json) } : {}),
        })

      const pod = (await (
        await call('POST', '/v2/pods', {
          name: 'ticker',
          image: 'x',
          cpu: { id: 'cpu3c', vcpuCount: 2 },
          args: `while true; do echo tick-${marker}; sleep 0.2; done`,
        })
      ).json()) as { id: string }
      let firstLine!: () => void
      const following = new Promise<void>((resolve) => (firstLine = resolve))
      const logs = await call('GET', `/v2/pods/${pod.id}/logs?source=container`)
      expect(logs.status).toBe(200)
      const follower = readToEnd(logs, (text) => {
        if (text.includes(`tick-${marker}`)) firstLine()
      })
      await following

      // A worker waiting for a job: the worker protocol's long poll (up to its full wait).
      const endpoint = (await (
        await call('POST', '/v2/serverless', {
          name: 'idle',
          image: 'worker:1',
          gpu: { pools: ['ADA_24'] },
        })
      ).json()) as { id: string }
      const { workerKey } = (await (
        await call('GET', `/v2/serverless/${endpoint.id}/worker-key`)
      ).json()) as { workerKey: string }
      const takeStarted = Date.now()
      const take = fetch(`${url}/v2/${endpoint.id}/job-take/worker-1`, {
        headers: { authorization: workerKey },
      })

      await new Promise((resolve) => setTimeout(resolve, 500))
      const signalledAt = Date.now()
      child.kill('SIGTERM')
      const [ended, taken, code] = await Promise.all([follower, take, exited])
      const exitedAt = Date.now()

      expect(code).toBe(0)
      expect(exitedAt - signalledAt).toBeLessThan(5_000)
      expect(ended.endedAt - signalledAt).toBeLessThan(3_000)
      expect(ended.text).toContain(`tick-${marker}`)
      expect(taken.status).toBe(204)
      expect(Date.now() - takeStarted).toBeLessThan(10_000)
    },
  )
})
