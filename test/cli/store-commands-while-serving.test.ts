import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli, startServe } from '../support/cli.js'
import { callPlatform, type CallInit } from '../support/platform.js'

const ADMIN_KEY = 'admin-key-0123456789abcdef'

/**
 * The store commands (`podyard credits add --data-dir ...`, docs/billing.md) open the SQLite
 * file of a server that is serving it. The server once died of SIGBUS under them: its
 * checkpointer thread dropped the server's lock on the WAL index, so each command took itself
 * for the file's first user and started the index over under the server's mapping of it.
 */
describe('store commands while podyard serves the same SQLite file', () => {
  let dataDir: string
  let server: Awaited<ReturnType<typeof startServe>>

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-store-commands-'))
    server = await startServe(['--port', '0', '--data-dir', dataDir], {
      PODYARD_ADMIN_KEY: ADMIN_KEY,
      PODYARD_SANDBOX: 'none',
      PODYARD_LOG_LEVEL: 'warn',
      // As many requests as the machine answers: the limit is not what is tested.
      PODYARD_RATELIMIT_MINUTE: '1000000',
      PODYARD_RATELIMIT_HOUR: '1000000',
      PODYARD_RATELIMIT_DAY: '1000000',
    })
  }, 60_000)

  afterAll(async () => {
    server?.child.kill('SIGTERM')
    await server?.exited
    rmSync(dataDir, { recursive: true, force: true })
  })

  const call = (route: string, init: CallInit = {}) =>
    callPlatform(server.url, route, { ...init, key: ADMIN_KEY })

  it('keeps serving, and sees what the commands wrote', { timeout: 120_000 }, async () => {
    const created = await call('/v2/admin/accounts', {
      method: 'POST',
      json: { email: 'store-commands@example.com' },
    })
    expect(created.status).toBe(201)
    const { account } = (await created.json()) as { account: { id: string } }
    const credits = `/v2/admin/accounts/${account.id}/credits`
    const commands = 6
    for (let n = 0; n < commands; n++) {
      const command = runCli([
        'credits',
        'add',
        'store-commands@example.com',
        '1',
        '--data-dir',
        dataDir,
      ])
      // The server reads and writes the file while the command opens it.
      let done = false
      void command.then(() => (done = true))
      while (!done) {
        const answer = await call(credits)
        expect(answer.status, server.stderr()).toBe(200)
        const added = await call(credits, {
          method: 'POST',
          json: { amount: 0.01, note: 'while serving' },
        })
        expect(added.status, server.stderr()).toBe(200)
      }
      const result = await command
      expect(result.code, result.stderr).toBe(0)
    }
    expect(server.child.exitCode, server.stderr()).toBeNull()
    const answer = await call(credits)
    expect(answer.status).toBe(200)
    const body = (await answer.json()) as { entries: { note: string }[] }
    expect(JSON.stringify(body)).toContain('while serving')
  })
})
