import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli, settingsFreeEnv } from '../support/cli.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'

/**
 * A new user's first mistakes: each message names
 * what to do in the user's terms (a flag, a variable), not only what HTTP got. Real bin, real
 * server, a member account.
 */
describe('first-hour messages of the CLI', () => {
  let platform: TestPlatform
  let memberKey: string
  let home: string

  /** `podyard <args>` as a user whose shell has none of podyard's variables set. */
  const cli = (args: string[], env: NodeJS.ProcessEnv = {}) =>
    runCli(args, { ...settingsFreeEnv(home), PODYARD_URL: platform.url, ...env })

  beforeAll(async () => {
    platform = await startTestPlatform()
    memberKey = await otherAccountKey(platform, 'member@example.com')
    home = mkdtempSync(path.join(tmpdir(), 'podyard-first-hour-'))
  })
  afterAll(async () => {
    await platform?.close()
    rmSync(home, { recursive: true, force: true })
  })

  it('without a key, names --api-key, PODYARD_API_KEY and podyard config', async () => {
    const result = await cli(['pods', 'list'])
    expect(result.code).toBe(3)
    expect(result.stderr).toMatch(/^podyard: 401 Unauthorized: no API key/)
    expect(result.stderr).toContain('--api-key <key>')
    expect(result.stderr).toContain('PODYARD_API_KEY')
    expect(result.stderr).toContain('podyard config set')
    // --json keeps the server's problem as it was sent.
    const json = await cli(['pods', 'list', '--json'])
    const error = (JSON.parse(json.stderr) as { error: { detail: string; message: string } }).error
    expect(error.detail).toBe('no API key: send the header Authorization: Bearer <key>')
    expect(error.message).toContain('PODYARD_API_KEY')
  })

  it('a key too short to be a key is named as such, and where it came from', async () => {
    const result = await cli(['pods', 'list'], { PODYARD_API_KEY: 'secret' })
    expect(result.code).toBe(3)
    expect(result.stderr).toContain(
      '401 Unauthorized: the API key is too short to be a podyard key',
    )
    expect(result.stderr).not.toContain('malformed')
    expect(result.stderr).toContain('the key came from $PODYARD_API_KEY')
    const flag = await cli(['pods', 'list', '--api-key', 'pyd_not-a-key-at-all!'])
    expect(flag.stderr).toContain('not a podyard key')
    expect(flag.stderr).toContain('the key came from --api-key')
  })

  it("a member's good key works (the hint is only for a 401)", async () => {
    const result = await cli(['pods', 'list'], { PODYARD_API_KEY: memberKey })
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
  })
})

describe('podyard account: whether the balance is enforced', () => {
  it('says "not enforced" beside the balance with billing.enforce off (the default), not with it on', async () => {
    for (const enforce of [false, true]) {
      const platform = await startTestPlatform({ billing: { meterIntervalMs: 10_000, enforce } })
      try {
        const key = await otherAccountKey(platform, 'member@example.com')
        const result = await runCli(['account', '--url', platform.url, '--api-key', key])
        expect(result.code, result.stderr).toBe(0)
        const balance = result.stdout.split('\n').find((line) => line.startsWith('balance'))
        if (enforce) expect(balance).toBe('balance      $0.00')
        else
          expect(balance).toMatch(
            /^balance {6}\$0\.00 \(not enforced: .*billing\.enforce is off\)$/,
          )
        const json = await runCli(['account', '--json', '--url', platform.url, '--api-key', key])
        expect(JSON.parse(json.stdout)).toMatchObject({ balanceEnforced: enforce })
      } finally {
        await platform.close()
      }
    }
  })
})

describe('podyard serve on a port in use', () => {
  let taken: Server
  let port: number
  let dataDir: string

  beforeAll(async () => {
    taken = createServer()
    await new Promise<void>((done) => taken.listen(0, '127.0.0.1', done))
    port = (taken.address() as { port: number }).port
    dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-port-taken-'))
  })
  afterAll(async () => {
    await new Promise((done) => taken.close(done))
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('says another program listens there and how to choose a port (exit 2)', async () => {
    const result = await runCli([
      'serve',
      '--port',
      String(port),
      '--data-dir',
      dataDir,
      '--log-level',
      'warn',
    ])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain(`cannot listen on 127.0.0.1:${port}: another program`)
    expect(result.stderr).toContain('--port 0')
  })
})
