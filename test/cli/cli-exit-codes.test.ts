import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli, settingsFreeEnv } from '../support/cli.js'
import { json } from '../support/http.js'
import {
  otherAccountKey,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type TestPlatform,
} from '../support/platform.js'

/**
 * The documented exit statuses (docs/cli.md, "Exit codes"): scripts tell a typo from a wrong key
 * from a missing pod from a conflict from a server that is down or failing. Real bin, a real
 * server; the 5xx comes from a plain HTTP server on 127.0.0.1 that answers problem+json 500.
 */
describe('podyard CLI exit codes', () => {
  let platform: TestPlatform
  let failing: Server
  let failingUrl: string
  let home: string
  let podId: string
  const cli = (args: string[], env: NodeJS.ProcessEnv = {}) =>
    runCli(args, { ...settingsFreeEnv(home), ...env })
  const auth = () => ['--url', platform.url, '--api-key', TEST_ADMIN_KEY]

  beforeAll(async () => {
    platform = await startTestPlatform({ sandbox: 'none' })
    home = mkdtempSync(path.join(tmpdir(), 'podyard-cli-exit-'))
    podId = (
      await json<{ id: string }>(
        await platform.call('/v2/pods', {
          method: 'POST',
          json: { name: 'exit-codes', image: 'busybox', cpu: { id: 'cpu3c', vcpuCount: 2 } },
        }),
        201,
      )
    ).id
    failing = createServer((_request, response) => {
      response.writeHead(500, { 'content-type': 'application/problem+json' })
      response.end(JSON.stringify({ title: 'Internal Server Error', detail: 'the disk is full' }))
    })
    await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve))
    failingUrl = `http://127.0.0.1:${(failing.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    await new Promise<void>((resolve) => failing?.close(() => resolve()))
    await platform?.close()
    rmSync(home, { recursive: true, force: true })
  })

  it('exits 2 for usage: an unknown command, option or missing argument, a bad value', async () => {
    for (const args of [
      ['bogus-command'],
      ['pods', 'list', '--bogus'],
      ['pods', 'get'],
      ['pods'],
      ['pods', 'list', '--output', 'xml'],
    ]) {
      const result = await cli([...args, ...auth()])
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2)
    }
    const scripted = await cli(['pods', 'list', '--bogus', ...auth(), '--json'])
    expect(scripted.code).toBe(2)
    expect(JSON.parse(scripted.stderr)).toMatchObject({ error: { exitCode: 2 } })
    // A profile named that does not exist is the command line's mistake too.
    expect((await cli(['pods', 'list', '--profile', 'nowhere'])).code).toBe(2)
  })

  it('exits 2 with what is wrong for a bad local input: --input not JSON, an unreadable file, clashing flags', async () => {
    const key = await otherAccountKey(platform, 'exit-codes-input@example.com')
    const asUser = ['--url', platform.url, '--api-key', key]
    const endpointId = 'any0000000000'
    // A directory: a file that exists and cannot be read as one, as root too.
    const notAFile = home
    const cases: { args: string[]; message: RegExp }[] = [
      {
        args: ['jobs', 'run', endpointId, '--input', '{nope'],
        message: /--input: not valid JSON: /,
      },
      {
        args: ['jobs', 'runsync', endpointId, '--input-file', path.join(home, 'absent.json')],
        message: /--input-file \S*absent\.json: cannot read it: ENOENT/,
      },
      {
        args: ['jobs', 'run', endpointId, '--input-file', notAFile],
        message: /--input-file \S+: cannot read it: EISDIR/,
      },
      {
        args: ['jobs', 'run', endpointId, '--input', '{}', '--input-file', '-'],
        message: /give either --input or --input-file, not both/,
      },
      { args: ['jobs', 'run', endpointId], message: /give the job input as --input/ },
      {
        args: ['models', 'run', 'any-model', '--input', 'a red fox'],
        message: /--input: not valid JSON/,
      },
      {
        args: ['pods', 'create', '--name', 'x', '--image', 'busybox', '--env', 'NOEQUALS'],
        message: /--env: "NOEQUALS" is not NAME=value/,
      },
      {
        args: ['pods', 'create', '--name', 'x', '--image', 'busybox', '--gpu', 'RTX 4900'],
        message: /unknown GPU type "RTX 4900"; did you mean/,
      },
    ]
    for (const { args, message } of cases) {
      const result = await cli([...args, ...asUser])
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2)
      expect(result.stderr).toMatch(new RegExp(`^podyard: ${message.source}`))
      const scripted = await cli([...args, ...asUser, '--json'])
      expect(scripted.code).toBe(2)
      expect(JSON.parse(scripted.stderr)).toMatchObject({
        error: { exitCode: 2, message: expect.stringMatching(message) },
      })
    }
  })

  it('exits 3 when the server refuses the key (or there is none)', async () => {
    const wrong = await cli([
      'pods',
      'list',
      '--url',
      platform.url,
      '--api-key',
      'pyd_wrong-0123456789',
    ])
    expect(wrong.code, wrong.stderr).toBe(3)
    expect(wrong.stderr).toMatch(/401/)
    const none = await cli(['pods', 'list', '--url', platform.url, '--json'])
    expect(none.code).toBe(3)
    expect(JSON.parse(none.stderr)).toMatchObject({ error: { exitCode: 3, status: 401 } })
  })

  it('exits 4 for what does not exist', async () => {
    const result = await cli(['pods', 'get', 'nope00000000000', ...auth()])
    expect(result.code, result.stderr).toBe(4)
    expect(result.stderr).toContain('not found')
    // A host the fleet lacks: not an empty list of its images.
    const images = await cli(['hosts', 'images', '--host', 'nope', ...auth()])
    expect(images.code, images.stderr).toBe(4)
    expect(images.stderr).toContain('host nope not found')
    const listed = await platform.call('/v2/admin/hosts/images?hostId=nope')
    expect(listed.status).toBe(404)
    expect(listed.headers.get('content-type')).toContain('application/problem+json')
  })

  it('exits 5 for a conflict: an action the resource refuses in its state', async () => {
    const locked = await platform.call(`/v2/pods/${podId}`, {
      method: 'PATCH',
      json: { locked: true },
    })
    expect(locked.status).toBe(200)
    const result = await cli(['pods', 'stop', podId, ...auth(), '--json'])
    expect(result.code, result.stderr).toBe(5)
    expect(JSON.parse(result.stderr)).toMatchObject({ error: { exitCode: 5, status: 409 } })
  })

  it('exits 6 when nothing answers', async () => {
    // A port that was just free: bound, read and closed again.
    const probe = createServer()
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
    const port = (probe.address() as AddressInfo).port
    await new Promise<void>((resolve) => probe.close(() => resolve()))
    const result = await cli([
      'pods',
      'list',
      '--url',
      `http://127.0.0.1:${port}`,
      '--api-key',
      'x',
    ])
    expect(result.code, result.stderr).toBe(6)
    expect(result.stderr).toMatch(/cannot reach podyard at/)
  })

  it('exits 7 when the server fails (5xx)', async () => {
    const result = await cli(['pods', 'list', '--url', failingUrl, '--api-key', 'x', '--json'])
    expect(result.code, result.stderr).toBe(7)
    expect(JSON.parse(result.stderr)).toMatchObject({
      error: { exitCode: 7, status: 500, detail: 'the disk is full' },
    })
  })

  it('keeps 2 for a server that cannot start (its port taken), with its hint', async () => {
    const taken = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    const port = (taken.address() as AddressInfo).port
    try {
      const result = await cli([
        'serve',
        '--port',
        String(port),
        '--host',
        '127.0.0.1',
        '--data-dir',
        path.join(home, 'data'),
      ])
      expect(result.code, result.stderr).toBe(2)
      expect(result.stderr).toMatch(/already listens there/)
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()))
    }
  })
})
